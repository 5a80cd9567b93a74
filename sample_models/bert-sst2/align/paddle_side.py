"""The Paddle side of the bert-sst2 alignment example: writes every checkpoint's *_paddle.npy.

    python paddle_side.py --out OUT --init-only     # once: vocab, config, fake data, the target state dict
    python paddle_side.py --out OUT [--only forward,loss]

First (once) it makes the shared starting point in OUT: the vocabulary of the lite data, the tiny
BERT's config and a random-init sample checkpoint (OUT/init/; its state dict is what
`tipcgen align convert --check` checks the converted PyTorch weights against, and the conversion then
replaces it), and the fake data (OUT/fake_data.npz). Then, per checkpoint, from the converted weights:
forward (logits on the fake batch, eval mode), metric (paddle.metric.Accuracy on random logits),
loss (cross entropy on the fake batch), backward (loss_i and lr_i over AdamW steps), train (the
sample's own train.py and eval.py on the lite data from OUT/init; dev accuracy).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import align_common as ac  # noqa: E402
import common  # noqa: E402

SIDE = "paddle"


def make_init(out: str) -> None:
    """The shared starting point: vocab, config, random-init checkpoint (the conversion's target), fake data."""
    import build_vocab
    import paddle
    from modeling import BertForSequenceClassification

    init = os.path.join(out, ac.INIT_DIR)
    os.makedirs(init, exist_ok=True)
    vocab_file = os.path.join(init, common.VOCAB_FILE)
    build_vocab.main(["--input", ac.LITE_TRAIN, "--output", vocab_file])
    vocab_size = sum(1 for _ in open(vocab_file, encoding="utf-8"))
    m = ac.MODEL
    config = common.new_bert_config(vocab_size, 0, m["hidden_size"], m["num_layers"], m["num_heads"],
                                    m["intermediate_size"], dropout=m["dropout"])
    paddle.seed(ac.SEED)
    model = BertForSequenceClassification(config)
    state = model.state_dict()
    paddle.save(state, os.path.join(init, common.PARAMS_FILE))
    common.save_config(config, os.path.join(init, common.CONFIG_FILE))
    common.write_json(os.path.join(init, common.META_FILE), {"max_seq_length": ac.MAX_SEQ_LENGTH,
                                                             "labels": common.LABELS})
    ac.write_fake_data(out, vocab_size, config.pad_token_id)


def load_model(out: str):
    model, _ = common.load_model(os.path.join(out, ac.INIT_DIR))
    return model


def forward_logits(model, fake: dict[str, np.ndarray]):
    import paddle

    input_ids = paddle.to_tensor(fake["input_ids"])
    return model(input_ids, token_type_ids=paddle.zeros_like(input_ids))


def forward(out: str, fake: dict[str, np.ndarray]) -> None:
    import paddle

    model = load_model(out)
    model.eval()
    with paddle.no_grad():
        logits = forward_logits(model, fake)
    ac.save_reprod(ac.file_of(out, "forward", SIDE), {"logits": logits.numpy()})


def metric(out: str, fake: dict[str, np.ndarray]) -> None:
    import paddle

    accuracy = paddle.metric.Accuracy()
    correct = accuracy.compute(paddle.to_tensor(fake["metric_logits"]), paddle.to_tensor(fake["metric_labels"]))
    accuracy.update(correct)
    ac.save_reprod(ac.file_of(out, "metric", SIDE), {"accuracy": np.array([accuracy.accumulate()])})


def loss(out: str, fake: dict[str, np.ndarray]) -> None:
    import paddle
    import paddle.nn.functional as F

    model = load_model(out)
    model.eval()
    with paddle.no_grad():
        value = F.cross_entropy(forward_logits(model, fake), paddle.to_tensor(fake["labels"]))
    ac.save_reprod(ac.file_of(out, "loss", SIDE), {"loss": value.numpy()})


def backward(out: str, fake: dict[str, np.ndarray]) -> None:
    """loss_i and lr_i of BACKWARD['steps'] AdamW steps, set up as train.py sets up its optimizer."""
    import paddle
    import paddle.nn.functional as F

    cfg = ac.BACKWARD
    model = load_model(out)
    model.train()
    scheduler = paddle.optimizer.lr.LambdaDecay(cfg["learning_rate"], ac.lr_lambda(cfg["steps"], cfg["warmup_steps"]))
    decay = {p.name for n, p in model.named_parameters() if ac.decays(n)}
    optimizer = paddle.optimizer.AdamW(learning_rate=scheduler, parameters=model.parameters(),
                                       weight_decay=cfg["weight_decay"], epsilon=cfg["epsilon"],
                                       apply_decay_param_fun=lambda name: name in decay,
                                       grad_clip=paddle.nn.ClipGradByGlobalNorm(cfg["grad_clip"]))
    labels = paddle.to_tensor(fake["labels"])
    record = {}
    for step in range(cfg["steps"]):
        value = F.cross_entropy(forward_logits(model, fake), labels)
        value.backward()
        record[f"lr_{step}"] = np.array([scheduler.get_lr()])
        optimizer.step()
        optimizer.clear_grad()
        scheduler.step()
        record[f"loss_{step}"] = value.numpy()
    ac.save_reprod(ac.file_of(out, "backward", SIDE), record)


def train(out: str, fake: dict[str, np.ndarray]) -> None:
    """The sample's train.py and eval.py, run in this process, from OUT/init; dev accuracy."""
    import eval as eval_script
    import train as train_script

    cfg = ac.TRAIN
    run_dir = os.path.join(out, "paddle_train")
    rc = train_script.main([
        "--device", "cpu", "--output_dir", run_dir, "--data_file", ac.LITE_TRAIN,
        "--init_from_ckpt", os.path.join(out, ac.INIT_DIR), "--epochs", str(cfg["epochs"]),
        "--batch_size", str(cfg["batch_size"]), "--learning_rate", str(cfg["learning_rate"]),
        "--warmup_proportion", str(cfg["warmup_proportion"]), "--weight_decay", str(cfg["weight_decay"]),
        "--seed", str(cfg["seed"]), "--max_seq_length", str(ac.MAX_SEQ_LENGTH), "--log_interval", str(ac.LOG_INTERVAL),
    ])
    if rc:
        raise SystemExit(f"train.py failed with exit code {rc}")
    ckpt = os.path.join(run_dir, "checkpoint")
    eval_script.main(["--init_from_ckpt", ckpt, "--device", "cpu", "--data_file", ac.LITE_DEV,
                      "--batch_size", str(cfg["eval_batch_size"])])
    with open(os.path.join(ckpt, "eval_result.json"), encoding="utf-8") as handle:
        accuracy = json.load(handle)["accuracy"]
    ac.save_reprod(ac.file_of(out, "train", SIDE), {"acc": np.array([accuracy])})


STEPS = {"forward": forward, "metric": metric, "loss": loss, "backward": backward, "train": train}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Write the Paddle side of each alignment checkpoint.",
                                     allow_abbrev=False)
    parser.add_argument("--out", required=True, help="the output folder (shared with torch_side.py)")
    parser.add_argument("--only", default=",".join(ac.CHECKPOINTS), help="comma-separated checkpoints to write")
    parser.add_argument("--init-only", action="store_true", help="make OUT/init and the fake data, write nothing else")
    args = parser.parse_args(argv)
    args.only = [c.strip() for c in args.only.split(",") if c.strip()]
    unknown = [c for c in args.only if c not in STEPS]
    if unknown:
        parser.error(f"--only: unknown checkpoint(s) {', '.join(unknown)}; choose from {', '.join(STEPS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import paddle

        paddle.set_device("cpu")
    if not os.path.isfile(os.path.join(args.out, ac.INIT_DIR, common.CONFIG_FILE)):
        make_init(args.out)
    if args.init_only:
        return 0
    fake = ac.load_fake_data(args.out)
    for name in args.only:
        STEPS[name](args.out, fake)
        print(f"[paddle] {name}: wrote {ac.file_of(args.out, name, SIDE)}", flush=True)
    return 0


if __name__ == "__main__":
    common.run_main(main)
