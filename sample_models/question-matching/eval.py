"""Evaluate a question-matching checkpoint (dygraph, one forward pass) on a labelled pair TSV.

    python sample_models/question-matching/eval.py --init_from_ckpt=./output/qm/best_model \
        --device=cpu --dev_set=./train_data/question_matching/dev.tsv

Prints ``accuracy: 0.7500 (12/16)`` and writes eval_result.json into the checkpoint dir. With
--kinds_column N (0-based) it also prints the accuracy per value of that column, e.g. the
perturbation kind of data/robustness.tsv, as ``accuracy[<kind>]: ...`` lines.
"""

import os
import sys
import time
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
from common import UserError  # noqa: E402
from tokenizer import CharTokenizer  # noqa: E402


def parse_args(argv=None):
    p = common.make_parser("Evaluate a question-matching checkpoint.")
    p.add_argument("--init_from_ckpt", required=True,
                   help="checkpoint dir written by train.py (model_<step>/, best_model/, or the save_dir)")
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--dev_set", default="./train_data/question_matching/dev.tsv", help="TSV text_a<TAB>text_b<TAB>label")
    p.add_argument("--batch_size", type=common.positive_int, default=128)
    p.add_argument("--max_seq_length", type=common.seq_length, default=None, help="default: the checkpoint's")
    p.add_argument("--kinds_column", type=int, default=None,
                   help="also report accuracy per value of this 0-based column (3: robustness.tsv's kind)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    t_start = time.time()
    ckpt = common.resolve_checkpoint(common.optional_path(args.init_from_ckpt), "--init_from_ckpt")
    pairs, labels, extras = common.load_pairs(args.dev_set, "--dev_set", require_labels=True, extra_columns=True)
    kinds = None
    if args.kinds_column is not None:
        col = args.kinds_column - 3
        if col < 0 or any(len(e) <= col for e in extras):
            raise UserError("--kinds_column %d: --dev_set %s has no such column on every row (columns 0-2 are "
                            "text_a, text_b, label)" % (args.kinds_column, args.dev_set))
        kinds = [e[col].strip() for e in extras]
    meta = common.checkpoint_meta(ckpt)
    max_len = args.max_seq_length or int(meta["max_seq_length"])

    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import paddle  # noqa: F401

        common.set_device(args.device)

    t_import = time.time() - t_start
    tokenizer = CharTokenizer(os.path.join(ckpt, common.VOCAB_FILE))
    model, _, _ = common.load_model(ckpt)
    logits = common.predict_logits(model, common.encode_all(tokenizer, pairs, max_len), args.batch_size,
                                   tokenizer.pad_token_id)
    hit = logits.argmax(axis=1) == np.asarray(labels)
    correct, total = int(hit.sum()), len(labels)
    result = {"accuracy": correct / total, "correct": correct, "total": total, "dev_set": args.dev_set,
              "max_seq_length": max_len}
    if kinds is not None:
        per_kind = {}
        for kind in sorted(set(kinds)):
            sel = [i for i, k in enumerate(kinds) if k == kind]
            c = int(hit[sel].sum())
            per_kind[kind] = {"accuracy": c / len(sel), "correct": c, "total": len(sel)}
            print("accuracy[%s]: %.4f (%d/%d)" % (kind, c / len(sel), c, len(sel)))
        result["per_kind"] = per_kind
    print(common.accuracy_line(correct, total), flush=True)
    common.write_json(os.path.join(ckpt, "eval_result.json"), result)
    print("eval done: %d pairs, %.2f s (imports %.2f s)" % (total, time.time() - t_start, t_import))
    return 0


if __name__ == "__main__":
    common.run_main(main)
