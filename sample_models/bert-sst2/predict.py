"""Predict the sentiment of one sentence with a bert-sst2 checkpoint, on the training engine (dygraph).

    python sample_models/bert-sst2/predict.py --params_path=./output/bert_sst2/checkpoint \
        --text="a gripping, beautifully acted film"

Prints one line: ``{"text": ..., "label": <0|1>, "label_name": "negative|positive",
"probabilities": [<p0>, <p1>]}``. The demo input and its result are in README.md.
"""

import json
import os
import sys
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

DEMO_TEXT = "a gripping, beautifully acted film"


def parse_args(argv=None):
    p = common.make_parser("Predict the sentiment of one sentence (dygraph).")
    p.add_argument("--params_path", required=True, help="checkpoint dir written by train.py (DIR/checkpoint accepted)")
    p.add_argument("--text", default=DEMO_TEXT, help="the sentence to classify")
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--max_seq_length", type=common.seq_length, default=None, help="default: the checkpoint's")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if not args.text.strip():
        raise common.UserError("--text is empty: pass a sentence")
    ckpt = common.resolve_checkpoint(common.optional_path(args.params_path), "--params_path")
    max_len = args.max_seq_length or int(common.checkpoint_meta(ckpt)["max_seq_length"])

    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import paddle  # noqa: F401

        common.set_device(args.device)

    encoded, pad_id = common.encode_sentences(os.path.join(ckpt, common.VOCAB_FILE), [args.text], max_len)
    model, _ = common.load_model(ckpt)
    logits = common.predict_logits(model, encoded, 1, pad_id)[0]
    probs = np.exp(logits - logits.max())
    probs = probs / probs.sum()
    label = int(probs.argmax())
    print(json.dumps({"text": args.text, "label": label, "label_name": common.LABELS[label],
                      "probabilities": [round(float(p), 4) for p in probs]}, ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    common.run_main(main)
