"""Export a bert-sst2 checkpoint to a Paddle Inference model.

    python sample_models/bert-sst2/export_model.py --params_path=./output/bert_sst2/checkpoint \
        --output_path=./output/bert_sst2

Writes <output_path>/inference.json (PIR program) + inference.pdiparams, and copies the
tokenizer's vocab.txt plus infer_cfg.json (max_seq_length, labels) next to them:
infer.py needs nothing else. With --reference_data TSV it also writes reference_results.txt:
the dygraph model's results on that data, in infer.py's `sst2_<n>\t{json}` format, so that the
chain can check Paddle Inference (and onnxruntime) against the model they were exported from.
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

INFER_PREFIX = "inference"
INFER_CFG = "infer_cfg.json"
REFERENCE = "reference_results.txt"


def parse_args(argv=None):
    p = common.make_parser("Export a bert-sst2 checkpoint for Paddle Inference.")
    p.add_argument("--params_path", required=True, help="checkpoint dir written by train.py (DIR/checkpoint accepted)")
    p.add_argument("--output_path", required=True, help="directory for inference.json/.pdiparams, vocab.txt, infer_cfg.json")
    p.add_argument("--reference_data", type=common.optional_path, default=None,
                   help="TSV: also write the dygraph model's results on it to <output_path>/%s" % REFERENCE)
    return p.parse_args(argv)


def write_reference(model, ckpt, data_file, max_len, path):
    """The dygraph model's results on data_file, one `sst2_<n>\t{json}` line per example."""
    sentences, _ = common.load_tsv(data_file, "--reference_data")
    encoded, pad_id = common.encode_sentences(os.path.join(ckpt, common.VOCAB_FILE), sentences, max_len)
    logits = common.predict_logits(model, encoded, 32, pad_id)
    with open(path, "w", encoding="utf-8") as handle:
        for n, row in enumerate(logits):
            handle.write("sst2_%d\t%s\n" % (n, json.dumps({"label": int(row.argmax()),
                                                            "logits": [float("%.8g" % v) for v in row]})))


def main(argv=None):
    args = parse_args(argv)
    t_start = time.time()
    ckpt = common.resolve_checkpoint(common.optional_path(args.params_path), "--params_path")
    if os.path.exists(args.output_path) and not os.path.isdir(args.output_path):
        raise UserError("--output_path exists and is not a directory: %s" % args.output_path)
    meta = common.checkpoint_meta(ckpt)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import paddle
        from paddle.static import InputSpec

    paddle.set_device("cpu")
    t_import = time.time() - t_start
    model, _ = common.load_model(ckpt)
    model.eval()
    os.makedirs(args.output_path, exist_ok=True)
    if args.reference_data:
        write_reference(model, ckpt, args.reference_data, int(meta["max_seq_length"]),
                        os.path.join(args.output_path, REFERENCE))
    input_spec = [
        InputSpec(shape=[None, None], dtype="int64", name="input_ids"),
        InputSpec(shape=[None, None], dtype="int64", name="token_type_ids"),
    ]
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
        "max_seq_length": int(meta["max_seq_length"]),
        "labels": list(meta["labels"]),
        "do_lower_case": True,
        "vocab_file": common.VOCAB_FILE,
        "inputs": ["input_ids", "token_type_ids"],
    })
    print("exported %s + %s.pdiparams, %s, %s" % (program, prefix, vocab_dst, os.path.join(args.output_path, INFER_CFG)))
    print("export done: %.2f s (imports %.2f s)" % (time.time() - t_start, t_import))
    return 0


if __name__ == "__main__":
    common.run_main(main)
