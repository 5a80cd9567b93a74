"""The reference side of the bert-sst2 alignment example (PyTorch + transformers): writes *_torch.npy.

    python torch_side.py --out OUT --init           # once: the reference's random init, init/torch_init.bin
    python torch_side.py --out OUT [--only forward,loss]

Needs what paddle_side.py --init-only left in OUT: init/config.json (the Paddle config, turned into a
transformers.BertConfig here), init/vocab.txt and fake_data.npz. --init writes the random-init state
dict that `tipcgen align convert --rules bert` turns into the Paddle side's weights, as a reproduction
starts from the reference's checkpoint. Nothing is downloaded: the model is built from its config (no
from_pretrained), and HF_HUB_OFFLINE is set. Imports neither paddle nor reprod_log.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import align_common as ac  # noqa: E402
import common  # noqa: E402

SIDE = "torch"


def hf_config(paddle_config: dict):
    """The transformers.BertConfig of the same model: sizes, activation, eps and pad id from Paddle's."""
    from transformers import BertConfig

    c = paddle_config
    return BertConfig(
        vocab_size=c["vocab_size"], hidden_size=c["hidden_size"], num_hidden_layers=c["num_hidden_layers"],
        num_attention_heads=c["num_attention_heads"], intermediate_size=c["intermediate_size"],
        hidden_act=c["hidden_act"], hidden_dropout_prob=c["hidden_dropout_prob"],
        attention_probs_dropout_prob=c["attention_probs_dropout_prob"],
        max_position_embeddings=c["max_position_embeddings"], type_vocab_size=c["type_vocab_size"],
        initializer_range=c["initializer_range"], layer_norm_eps=c["layer_norm_eps"],
        pad_token_id=c["pad_token_id"], num_labels=len(c.get("id2label") or common.LABELS),
        attn_implementation="eager",  # the plain softmax(QK^T)V path, as paddle.nn.MultiHeadAttention computes it
    )


def new_model(out: str):
    """BertForSequenceClassification built from OUT/init/config.json, at its random init."""
    from transformers import BertForSequenceClassification

    with open(os.path.join(out, ac.INIT_DIR, common.CONFIG_FILE), encoding="utf-8") as handle:
        return BertForSequenceClassification(hf_config(json.load(handle)))


def make_init(out: str) -> str:
    """The reference's random init, saved as a PyTorch checkpoint is: torch.save of the state dict."""
    import torch

    torch.manual_seed(ac.SEED)
    path = os.path.join(out, ac.INIT_DIR, ac.TORCH_INIT)
    torch.save(new_model(out).state_dict(), path)
    return path


def load_model(out: str):
    """The model with the init weights (the ones converted for Paddle); every tensor must fit (strict)."""
    import torch

    model = new_model(out)
    state = torch.load(os.path.join(out, ac.INIT_DIR, ac.TORCH_INIT), weights_only=True)
    model.load_state_dict(state, strict=True)
    return model


def logits_of(model, input_ids: np.ndarray, pad_id: int):
    """Logits with the attention mask paddlenlp's BERT derives from [PAD] itself."""
    import torch

    ids = torch.from_numpy(input_ids)
    return model(input_ids=ids, attention_mask=(ids != pad_id).long(), token_type_ids=torch.zeros_like(ids)).logits


def pad_id_of(model) -> int:
    return int(model.config.pad_token_id)


def forward(out: str, fake: dict[str, np.ndarray]) -> None:
    import torch

    model = load_model(out).eval()
    with torch.no_grad():
        logits = logits_of(model, fake["input_ids"], pad_id_of(model))
    ac.save_reprod(ac.file_of(out, "forward", SIDE), {"logits": logits.numpy()})


def metric(out: str, fake: dict[str, np.ndarray]) -> None:
    import torch

    pred = torch.from_numpy(fake["metric_logits"]).argmax(dim=-1)
    accuracy = (pred == torch.from_numpy(fake["metric_labels"])).float().mean().item()
    ac.save_reprod(ac.file_of(out, "metric", SIDE), {"accuracy": np.array([accuracy])})


def loss(out: str, fake: dict[str, np.ndarray]) -> None:
    import torch

    model = load_model(out).eval()
    with torch.no_grad():
        value = torch.nn.functional.cross_entropy(logits_of(model, fake["input_ids"], pad_id_of(model)),
                                                  torch.from_numpy(fake["labels"]))
    ac.save_reprod(ac.file_of(out, "loss", SIDE), {"loss": value.numpy()})


def make_optimizer(model, learning_rate: float, weight_decay: float, epsilon: float, total: int, warmup: int):
    """AdamW + LambdaLR as train.py builds them in Paddle (decay only where paddlenlp's name allows)."""
    import torch

    decay = [p for n, p in model.named_parameters() if "bias" not in n and "LayerNorm" not in n]
    rest = [p for n, p in model.named_parameters() if "bias" in n or "LayerNorm" in n]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                                   {"params": rest, "weight_decay": 0.0}],
                                  lr=learning_rate, betas=(0.9, 0.999), eps=epsilon)
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, ac.lr_lambda(total, warmup))


def train_step(model, optimizer, scheduler, input_ids: np.ndarray, labels: np.ndarray, grad_clip: float):
    """One step; returns (loss, the learning rate it used)."""
    import torch

    value = torch.nn.functional.cross_entropy(logits_of(model, input_ids, pad_id_of(model)), torch.from_numpy(labels))
    value.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    lr = scheduler.get_last_lr()[0]
    optimizer.step()
    optimizer.zero_grad()
    scheduler.step()
    return value, lr


def backward(out: str, fake: dict[str, np.ndarray]) -> None:
    cfg = ac.BACKWARD
    model = load_model(out).train()
    optimizer, scheduler = make_optimizer(model, cfg["learning_rate"], cfg["weight_decay"], cfg["epsilon"],
                                          cfg["steps"], cfg["warmup_steps"])
    record = {}
    for step in range(cfg["steps"]):
        value, lr = train_step(model, optimizer, scheduler, fake["input_ids"], fake["labels"], cfg["grad_clip"])
        record[f"lr_{step}"] = np.array([lr])
        record[f"loss_{step}"] = value.detach().numpy()
    ac.save_reprod(ac.file_of(out, "backward", SIDE), record)


def train(out: str, fake: dict[str, np.ndarray]) -> None:
    """train.py's loop (same order, schedule, clipping) in torch, then eval.py's accuracy on the dev data."""
    import torch

    cfg = ac.TRAIN
    vocab = os.path.join(out, ac.INIT_DIR, common.VOCAB_FILE)
    sentences, labels = common.load_tsv(ac.LITE_TRAIN, require_labels=True)
    encoded = ac.encode(sentences, vocab)
    label_arr = np.asarray(labels, dtype="int64")
    total, warmup = ac.train_steps([len(e) for e in encoded])
    model = load_model(out).train()
    pad_id = pad_id_of(model)
    optimizer, scheduler = make_optimizer(model, cfg["learning_rate"], cfg["weight_decay"], 1e-8, total, warmup)
    window = []
    for step, ids in enumerate(ac.train_batches([len(e) for e in encoded]), 1):
        value, _ = train_step(model, optimizer, scheduler, common.pad_batch([encoded[i] for i in ids], pad_id),
                              label_arr[ids], cfg["grad_clip"])
        window.append(value.item())
        if step % ac.LOG_INTERVAL == 0 or step == total:  # train.py's log line: the mean loss of the window
            print(f"[torch] global_step: {step}, loss: {np.mean(window, dtype=np.float32):.5f}", flush=True)
            window = []
    dev_sentences, dev_labels = common.load_tsv(ac.LITE_DEV, require_labels=True)
    dev = ac.encode(dev_sentences, vocab)
    model.eval()
    correct = 0
    with torch.no_grad():
        for ids in ac.eval_batches(dev):
            pred = logits_of(model, common.pad_batch([dev[i] for i in ids], pad_id), pad_id).argmax(dim=-1)
            correct += int(sum(int(p) == dev_labels[i] for p, i in zip(pred.tolist(), ids)))
    print(f"[torch] {common.accuracy_line(correct, len(dev))}", flush=True)
    ac.save_reprod(ac.file_of(out, "train", SIDE), {"acc": np.array([correct / len(dev)])})


STEPS = {"forward": forward, "metric": metric, "loss": loss, "backward": backward, "train": train}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Write the reference (torch) side of each alignment checkpoint.",
                                     allow_abbrev=False)
    parser.add_argument("--out", required=True, help="the output folder paddle_side.py --init-only wrote")
    parser.add_argument("--only", default=",".join(ac.CHECKPOINTS), help="comma-separated checkpoints to write")
    parser.add_argument("--init", action="store_true", help="write init/torch_init.bin (the reference's random init) "
                        "and nothing else")
    args = parser.parse_args(argv)
    args.only = [c.strip() for c in args.only.split(",") if c.strip()]
    unknown = [c for c in args.only if c not in STEPS]
    if unknown:
        parser.error(f"--only: unknown checkpoint(s) {', '.join(unknown)}; choose from {', '.join(STEPS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    torch.manual_seed(ac.SEED)
    needed = ("config.json",) if args.init else ("config.json", ac.TORCH_INIT)
    for name in needed:
        if not os.path.isfile(os.path.join(args.out, ac.INIT_DIR, name)):
            raise common.UserError(f"{args.out}/{ac.INIT_DIR}/{name} is missing: run paddle_side.py --init-only, "
                                   "torch_side.py --init and tipcgen align convert first (run_all.py does all of it)")
    if args.init:
        print(f"[torch] init: wrote {make_init(args.out)}", flush=True)
        return 0
    fake = ac.load_fake_data(args.out)
    for name in args.only:
        STEPS[name](args.out, fake)
        print(f"[torch] {name}: wrote {ac.file_of(args.out, name, SIDE)}", flush=True)
    return 0


if __name__ == "__main__":
    common.run_main(main)
