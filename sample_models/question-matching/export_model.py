"""Export a question-matching checkpoint to a Paddle Inference model.

    python sample_models/question-matching/export_model.py --params_path=./output/qm/best_model \
        --output_path=./output/qm

Writes <output_path>/inference.json (PIR program) + inference.pdiparams (inputs input_ids and
token_type_ids, output the logits [N, 2]), and copies vocab.txt plus infer_cfg.json next to
them: infer.py needs nothing else. With --reference_data TSV it also writes
reference_results.txt: the dygraph model's results on that data in infer.py's
``qm_<n>\\t{json}`` format, so that the chain can check Paddle Inference (and onnxruntime)
against the model they were exported from.
"""

import json
import os
import shutil
import sys
import time
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
from common import UserError  # noqa: E402
from tokenizer import CharTokenizer  # noqa: E402

INFER_PREFIX = "inference"
INFER_CFG = "infer_cfg.json"
REFERENCE = "reference_results.txt"


def parse_args(argv=None):
    p = common.make_parser("Export a question-matching checkpoint for Paddle Inference.")
    p.add_argument("--params_path", required=True,
                   help="checkpoint written by train.py (model_<step>/, best_model/, its model_state.pdparams, or the save_dir)")
    p.add_argument("--output_path", required=True, help="directory for inference.json/.pdiparams, vocab.txt, infer_cfg.json")
    p.add_argument("--reference_data", type=common.optional_path, default=None,
                   help="pair TSV: also write the dygraph model's results on it to <output_path>/%s" % REFERENCE)
    return p.parse_args(argv)


def result_line(n, row):
    return "qm_%d\t%s" % (n, json.dumps({"label": int(row.argmax()), "logits": [float("%.8g" % v) for v in row]}))


def main(argv=None):
    args = parse_args(argv)
    t_start = time.time()
    ckpt = common.resolve_checkpoint(common.optional_path(args.params_path), "--params_path")
    if os.path.exists(args.output_path) and not os.path.isdir(args.output_path):
        raise UserError("--output_path exists and is not a directory: %s" % args.output_path)
    meta = common.checkpoint_meta(ckpt)
    max_len = int(meta["max_seq_length"])
    ref_pairs = common.load_pairs(args.reference_data, "--reference_data")[0] if args.reference_data else None

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import paddle
        from paddle.static import InputSpec

    paddle.set_device("cpu")
    t_import = time.time() - t_start
    model, _, _ = common.load_model(ckpt)
    model.eval()
    os.makedirs(args.output_path, exist_ok=True)
    if ref_pairs is not None:
        tokenizer = CharTokenizer(os.path.join(ckpt, common.VOCAB_FILE))
        logits = common.predict_logits(model, common.encode_all(tokenizer, ref_pairs, max_len), 32, tokenizer.pad_token_id)
        with open(os.path.join(args.output_path, REFERENCE), "w", encoding="utf-8") as handle:
            for n, row in enumerate(logits):
                handle.write(result_line(n, row) + "\n")
    input_spec = [InputSpec(shape=[None, None], dtype="int64", name="input_ids"),
                  InputSpec(shape=[None, None], dtype="int64", name="token_type_ids")]
    prefix = os.path.join(args.output_path, INFER_PREFIX)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        static_model = paddle.jit.to_static(model, input_spec=input_spec, full_graph=True)
        paddle.jit.save(static_model, prefix)
    program = prefix + ".json" if os.path.isfile(prefix + ".json") else prefix + ".pdmodel"
    if not os.path.isfile(program) or not os.path.isfile(prefix + ".pdiparams"):
        raise RuntimeError("paddle.jit.save wrote no %s.json/.pdiparams" % prefix)
    vocab_dst = os.path.join(args.output_path, common.VOCAB_FILE)
    vocab_src = os.path.join(ckpt, common.VOCAB_FILE)
    if os.path.abspath(vocab_src) != os.path.abspath(vocab_dst):
        shutil.copyfile(vocab_src, vocab_dst)
    common.write_json(os.path.join(args.output_path, INFER_CFG), {
        "model_name": common.MODEL_NAME,
        "max_seq_length": max_len,
        "labels": list(meta["labels"]),
        "vocab_file": common.VOCAB_FILE,
        "inputs": ["input_ids", "token_type_ids"],
    })
    print("exported %s + %s.pdiparams, %s, %s" % (program, prefix, vocab_dst, os.path.join(args.output_path, INFER_CFG)))
    print("export done: %.2f s (imports %.2f s)" % (time.time() - t_start, t_import))
    return 0


if __name__ == "__main__":
    common.run_main(main)
