"""Predict with a question-matching checkpoint (dygraph), the baseline's predict.py.

    python sample_models/question-matching/predict.py --device=cpu \
        --params_path=./output/qm/best_model/model_state.pdparams \
        --input_file=pairs.tsv --result_file=result.txt

--input_file: ``text_a<TAB>text_b`` a line (a third column, e.g. a label, is ignored; a header
line text_a/text_b is skipped). --result_file: one 0/1 per input line (1 = same question).
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
    p = common.make_parser("Predict 0/1 for question pairs with a question-matching checkpoint.")
    p.add_argument("--params_path", required=True,
                   help="model_state.pdparams of a checkpoint written by train.py (or its folder)")
    p.add_argument("--input_file", required=True, help="text_a<TAB>text_b a line")
    p.add_argument("--result_file", required=True, help="one 0/1 a line is written here")
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--batch_size", type=common.positive_int, default=128)
    p.add_argument("--max_seq_length", type=common.seq_length, default=None, help="default: the checkpoint's")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    t_start = time.time()
    ckpt = common.resolve_checkpoint(args.params_path, "--params_path")
    pairs, _ = common.load_pairs(args.input_file, "--input_file")
    out_dir = os.path.dirname(os.path.abspath(args.result_file))
    if not os.path.isdir(out_dir):
        raise UserError("--result_file: folder does not exist: %s" % out_dir)
    if os.path.isdir(args.result_file):
        raise UserError("--result_file is a folder: %s" % args.result_file)
    max_len = args.max_seq_length or int(common.checkpoint_meta(ckpt)["max_seq_length"])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import paddle  # noqa: F401

        common.set_device(args.device)

    tokenizer = CharTokenizer(os.path.join(ckpt, common.VOCAB_FILE))
    model, _, _ = common.load_model(ckpt)
    logits = common.predict_logits(model, common.encode_all(tokenizer, pairs, max_len), args.batch_size,
                                   tokenizer.pad_token_id)
    tmp = args.result_file + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for label in logits.argmax(axis=1):
            f.write("%d\n" % int(label))
    os.replace(tmp, args.result_file)
    print("predicted %d pairs -> %s (%.2f s)" % (len(pairs), args.result_file, time.time() - t_start))
    return 0


if __name__ == "__main__":
    common.run_main(main)
