"""What recording the pretrained caches outside the repository adds to a train step's handshake (issue #59).

A fake HOME holds a bert-large-sized pretrained file (``--mb``, default 400 MB: 392 float32 tensors pickled as
paddle.save writes them) under ``~/.paddlenlp/models/...``; the handshake's cache part
(``record.Recorder.weights_cached``) is timed for the first run (tipcgen's weight cache empty: the file is
hashed and its parameters read), for a later run (a new Recorder, as a new ``tipcgen run`` makes: the record
comes from tipcgen's cache), and for a later handshake of the same run (the in-memory record). Prints one line
per measure (the median of ``--runs``).

    python bench/bench_weight_cache.py --mb 400 --runs 3
"""
from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tipcgen.repro import record  # noqa: E402


def _pretrained(path: Path, mb: int) -> None:
    """A pickled state dict of about ``mb`` MB: 24 blocks of a transformer's shapes, scaled."""
    rng = np.random.default_rng(0)
    width = int((mb * (1 << 20) / 4 / 24 / 12) ** 0.5)
    state = {}
    for i in range(24):
        for name in ("q", "k", "v", "o"):
            state[f"encoder.layers.{i}.attn.{name}.weight"] = rng.normal(size=(width, width)).astype("float32")
            state[f"encoder.layers.{i}.attn.{name}.bias"] = rng.normal(size=width).astype("float32")
        state[f"encoder.layers.{i}.ffn.0.weight"] = rng.normal(size=(width, 4 * width)).astype("float32")
        state[f"encoder.layers.{i}.ffn.1.weight"] = rng.normal(size=(4 * width, width)).astype("float32")
        for norm in ("norm1", "norm2"):
            state[f"encoder.layers.{i}.{norm}.weight"] = rng.normal(size=width).astype("float32")
            state[f"encoder.layers.{i}.{norm}.bias"] = rng.normal(size=width).astype("float32")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        pickle.dump(state, handle, protocol=4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=400)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tipcgen-bench-cache-") as tmp:
        tmp_path = Path(tmp)
        home, repo = tmp_path / "home", tmp_path / "repo"
        repo.mkdir()
        model = home / ".paddlenlp/models/bert-large-uncased/model_state.pdparams"
        _pretrained(model, args.mb)
        size = model.stat().st_size
        env = {"HOME": str(home)}
        first, later, same = [], [], []
        for run in range(args.runs):
            os.environ["TIPCGEN_CACHE_DIR"] = str(tmp_path / f"cache{run}")  # empty: the first run's cost
            recorder = record.Recorder(repo, repo / "run", 1 << 32, env=env)
            started = time.perf_counter()
            (weights,), _ = recorder.weights_cached()
            first.append(time.perf_counter() - started)
            assert weights.params, weights.why
            started = time.perf_counter()
            recorder.weights_cached()
            same.append(time.perf_counter() - started)
            started = time.perf_counter()
            record.Recorder(repo, repo / "run", 1 << 32, env=env).weights_cached()
            later.append(time.perf_counter() - started)
        print(f"pretrained file: {size / (1 << 20):.0f} MiB, {len(weights.params)} parameters; load "
              f"{os.getloadavg()[0]:.1f}")
        print(f"first run (hashed and read):        {statistics.median(first):.3f} s (of {', '.join(f'{t:.3f}' for t in first)})")
        print(f"a later run (tipcgen's cache):       {statistics.median(later) * 1000:.1f} ms")
        print(f"a later handshake of the same run:  {statistics.median(same) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
