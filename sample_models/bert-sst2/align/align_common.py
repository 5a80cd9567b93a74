"""What both sides of the bert-sst2 alignment example share: file names, fake data, hyper-parameters.

numpy only, so the Paddle side (paddle_side.py) and the reference side (torch_side.py) can run in
different environments and still use exactly the same inputs, schedule and data order.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Callable

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.dirname(HERE)
sys.path.insert(0, SAMPLE)

import common  # noqa: E402  (the sample's numpy-only helpers: data loading, padding, batch order)

LITE_TRAIN = os.path.join(SAMPLE, "data", "lite_train.tsv")
LITE_DEV = os.path.join(SAMPLE, "data", "lite_dev.tsv")

# The tiny model of the sample (train.py's defaults), dropout 0 so both frameworks compute the same thing.
MODEL = {"hidden_size": 64, "num_layers": 2, "num_heads": 2, "intermediate_size": 256, "dropout": 0.0}
MAX_SEQ_LENGTH = 64
SEED = 42

# Fake data as the guide's gen_fake_data.py makes it: token ids (4, 64), labels [0, 1, 1, 0];
# the last row is padded from position PAD_FROM so the attention mask is checked too.
FAKE_SHAPE = (4, 64)
FAKE_LABELS = [0, 1, 1, 0]
PAD_FROM = 40
METRIC_SAMPLES = 100  # random logits for the metric checkpoint

# Backward: optimizer steps on the fake batch with train.py's optimizer (AdamW, linear warmup/decay,
# global-norm clipping 1.0, no decay on bias/norm weights). 1e-4, not train.py's 1e-3: at 1e-3 the loss
# difference reaches 8.3e-7 by step 10 (see docs/ALIGNMENT.md), too close to the 1e-6 bound to be stable.
BACKWARD = {"steps": 10, "learning_rate": 1e-4, "weight_decay": 0.01, "warmup_steps": 2, "grad_clip": 1.0,
            "epsilon": 1e-8}
# Train alignment: train.py's own loop on the lite data, from the same converted initial weights.
# 20 epochs at 2e-3: the tiny model learns the 64 rows (at 3 epochs and 1e-3 it stays at chance, 8/16).
TRAIN = {"epochs": 20, "batch_size": 8, "learning_rate": 2e-3, "warmup_proportion": 0.1, "weight_decay": 0.01,
         "grad_clip": 1.0, "seed": SEED, "eval_batch_size": 32}
LOG_INTERVAL = 8  # steps between training log lines: one epoch, as train.py also logs at each epoch end

INIT_DIR = "init"  # a sample checkpoint dir: config.json, model_state.pdparams, vocab.txt, train_meta.json
TORCH_INIT = "torch_init.bin"  # the reference's random init (torch.save of its state dict)
NAME_MAP = "name_map.json"  # what `tipcgen align convert --map` wrote: Hugging Face name -> paddlenlp name
FAKE_DATA = "fake_data.npz"

# checkpoint -> file stem, as the guide names them (<stem>_paddle.npy, <stem>_torch.npy, <stem>_diff.log)
STEMS = {"forward": "forward", "metric": "metric", "loss": "loss", "backward": "bp_align", "train": "train_align"}
CHECKPOINTS = tuple(STEMS)


def file_of(out_dir: str, checkpoint: str, side: str) -> str:
    """<out_dir>/<stem>_<side>.npy, e.g. forward_paddle.npy."""
    return os.path.join(out_dir, f"{STEMS[checkpoint]}_{side}.npy")


def save_reprod(path: str, data: dict[str, np.ndarray]) -> None:
    """Save as ReprodLogger.save does (a pickled dict in a .npy), without importing reprod_log/paddle."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    np.save(path, {key: np.asarray(value) for key, value in data.items()})


def write_fake_data(out_dir: str, vocab_size: int, pad_id: int) -> str:
    """Fake token ids in [1, vocab) (0 is [PAD]), the last row padded; random logits for the metric."""
    rng = np.random.RandomState(SEED)
    input_ids = rng.randint(1, vocab_size, size=FAKE_SHAPE).astype("int64")
    input_ids[-1, PAD_FROM:] = pad_id
    logits = rng.randn(METRIC_SAMPLES, 2).astype("float32")
    metric_labels = rng.randint(0, 2, size=(METRIC_SAMPLES,)).astype("int64")
    path = os.path.join(out_dir, FAKE_DATA)
    np.savez(path, input_ids=input_ids, labels=np.asarray(FAKE_LABELS, dtype="int64"),
             metric_logits=logits, metric_labels=metric_labels)
    return path


def load_fake_data(out_dir: str) -> dict[str, np.ndarray]:
    with np.load(os.path.join(out_dir, FAKE_DATA)) as archive:
        return {name: archive[name] for name in archive.files}


def lr_lambda(total_steps: int, warmup: int) -> Callable[[int], float]:
    """train.py's schedule: linear warmup to the base rate, then linear decay to 0."""

    def factor(step: int) -> float:
        if step < warmup:
            return float(step + 1) / float(max(1, warmup))
        return max(0.0, float(total_steps - step) / float(max(1, total_steps - warmup)))

    return factor


def decays(paddle_name: str) -> bool:
    """train.py's weight-decay rule on paddlenlp parameter names: no decay for biases and norms."""
    return not any(k in paddle_name for k in ("bias", "norm"))


def encode(sentences: list[str], vocab_file: str) -> list[list[int]]:
    """Token ids as paddlenlp's BertTokenizer gives them (the sample's pure-Python copy; tested equal)."""
    from tokenizer import BertTokenizer

    tokenizer = BertTokenizer(vocab_file)
    return [tokenizer.encode(s, MAX_SEQ_LENGTH)[0] for s in sentences]


def train_steps(lengths: list[int]) -> tuple[int, int]:
    """(total steps, warmup steps) of train.py for this data size and TRAIN."""
    steps_per_epoch = -(-len(lengths) // TRAIN["batch_size"])
    total = steps_per_epoch * TRAIN["epochs"]
    return total, int(total * TRAIN["warmup_proportion"])


def train_batches(lengths: list[int]) -> Iterator[list[int]]:
    """The example indices of each training step, in train.py's order (one process)."""
    rng = np.random.RandomState(TRAIN["seed"])
    size = TRAIN["batch_size"]
    for _ in range(TRAIN["epochs"]):
        order = common.length_grouped_order(lengths, size, rng)
        for start in range(0, len(order), size):
            yield order[start:start + size]


def eval_batches(encoded: list[list[int]]) -> Iterator[list[int]]:
    """eval.py's batches: examples sorted by length, EVAL batch size."""
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    size = TRAIN["eval_batch_size"]
    for start in range(0, len(order), size):
        yield order[start:start + size]
