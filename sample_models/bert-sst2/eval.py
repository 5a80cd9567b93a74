"""Evaluate a bert-sst2 checkpoint (dygraph) on an SST-2 style TSV.

    python sample_models/bert-sst2/eval.py --init_from_ckpt=./output/bert_sst2/checkpoint \
        --device=cpu --data_file=./train_data/bert_sst2/dev.tsv

Prints ``accuracy: 0.8125 (13/16)`` and writes eval_result.json into the checkpoint dir.
"""

import os
import sys
import time
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402


def parse_args(argv=None):
    p = common.make_parser("Evaluate a bert-sst2 checkpoint.")
    p.add_argument("--init_from_ckpt", required=True, help="checkpoint dir written by train.py (DIR/checkpoint accepted)")
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--data_file", default="./train_data/bert_sst2/dev.tsv", help="SST-2 style TSV with labels")
    p.add_argument("--batch_size", type=common.positive_int, default=32)
    p.add_argument("--max_seq_length", type=common.seq_length, default=None, help="default: the checkpoint's")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    t_start = time.time()
    ckpt = common.resolve_checkpoint(common.optional_path(args.init_from_ckpt), "--init_from_ckpt")
    sentences, labels = common.load_tsv(args.data_file, "--data_file", require_labels=True)
    meta = common.checkpoint_meta(ckpt)
    max_len = args.max_seq_length or int(meta["max_seq_length"])

    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import paddle  # noqa: F401

        common.set_device(args.device)

    t_import = time.time() - t_start
    encoded, pad_id = common.encode_sentences(os.path.join(ckpt, common.VOCAB_FILE), sentences, max_len)
    model, _ = common.load_model(ckpt)
    logits = common.predict_logits(model, encoded, args.batch_size, pad_id)
    pred = logits.argmax(axis=1)
    correct = int((pred == np.asarray(labels)).sum())
    total = len(labels)
    print(common.accuracy_line(correct, total), flush=True)
    common.write_json(os.path.join(ckpt, "eval_result.json"), {
        "accuracy": correct / total,
        "correct": correct,
        "total": total,
        "data_file": args.data_file,
        "max_seq_length": max_len,
    })
    print("eval done: %d examples, %.2f s (imports %.2f s)" % (total, time.time() - t_start, t_import))
    return 0


if __name__ == "__main__":
    common.run_main(main)
