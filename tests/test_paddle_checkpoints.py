"""Issue #56 item 1: the export proof reads every checkpoint people write (three honest trainings of seven
public reproduction repositories were failed by it).

- ``checkpoint_io.read_paddle_checkpoint`` reads real ``paddle.save`` files of every shape a generator makes
  (the state dict under any key and nesting, beside optimizer state with ``LR_Scheduler`` and
  ``master_weights``, step counters, numpy scalars, tuples, lists, sets, None, text, an ``argparse.Namespace``;
  pickle protocols 2 to 4; any suffix) as the state dicts ``paddle.load`` gives back, every one of them
  (``model`` and ``ema``), never the optimizer's;
- a file without model weights (a ``.pdopt``, a dict of plain values) is named with what it holds;
- discovery: ``.pth``, ``.pd``, ``.pt`` beside ``.pdparams``, the file train_model_name names whatever its
  name, a folder holding one; ``check_exports`` on a real export passes ``model_latest.pth`` holding
  ``{'iter', 'state_dict', 'optimizer'}`` and fails an export of other weights, naming the file;
- hostile files (os.system, builtins.eval, getattr, ``tuple`` called on other things, huge declared sizes,
  cycles, a shared list nested 40 deep) are still refused, nothing runs, and the refusal is named.

The files of the tests without the ``paddle`` marker are pickled as paddle.save pickles them (its
``reduce_varbase``: a tensor inside any object is ``builtins.tuple(((name, ndarray),))``); the paddle tests
check that with the real paddle.save."""
from __future__ import annotations

import argparse
import builtins
import os
import pickle
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import fuzz_examples
from tipcgen.core.errors import CheckpointError
from tipcgen.repro import export_check
from tipcgen.repro.checkpoint_io import read_paddle_checkpoint, read_paddle_state
from tipcgen.results.summary import Step

from test_chain_proof import TUTORIAL


def _state(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"conv1.weight": rng.normal(size=(4, 1, 3, 3)).astype("float32"),
            "conv1.bias": rng.normal(size=4).astype("float32"),
            "bn._mean": rng.normal(size=4).astype("float32")}


class _Tensor:
    """A paddle Tensor as paddle.save pickles one inside any object (io.py's reduce_varbase)."""

    def __init__(self, name: str, array: np.ndarray) -> None:
        self.name, self.array = name, array

    def __reduce__(self):
        return (tuple, ((self.name, self.array),))


def _tensors(state: dict[str, np.ndarray]) -> dict[str, _Tensor]:
    return {key: _Tensor(f"param_{i}", value) for i, (key, value) in enumerate(state.items())}


def _optimizer(state: dict[str, np.ndarray]) -> dict:
    names = [f"linear_{i}.w_0" for i in range(len(state))]
    out = {f"{n}_{acc}_0": _Tensor(f"{n}_{acc}_0", np.full_like(v, 0.1)) for n, v in zip(names, state.values())
           for acc in ("moment1", "moment2")}
    out["LR_Scheduler"] = {"last_epoch": 3, "last_lr": 0.1}
    return out


def _save(path: Path, obj, protocol: int = 4) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(obj, protocol=protocol))
    return path


def _exported(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {f"p_{i}": value.copy() for i, value in enumerate(state.values())}


# ---------------------------------------------------------------- the reader, on paddle.save's pickling


def test_the_three_shapes_that_failed_honest_trainings_are_read(tmp_path: Path):
    """{'iter', 'state_dict', 'optimizer'} (refused as 'builtins.tuple' before), model and EMA side by side,
    and a plain state dict with paddle.save's name table."""
    state, ema = _state(1), _state(2)
    config = "model:\n  depth: 3\n  name: \x1b[31mnet\n" * 200  # a config's text: any length, any character
    full = _save(tmp_path / "iter.pdparams", {"iter": 7, "state_dict": _tensors(state), "optimizer": _optimizer(state),
                                              "config": config})
    found = read_paddle_checkpoint(full)
    assert list(found.states) == ["state_dict"] and found.optimizer == ["optimizer"] and found.found == ""
    assert all(np.array_equal(found.states["state_dict"][k], state[k]) for k in state)
    both = read_paddle_checkpoint(_save(tmp_path / "ema.pth", {"model": _tensors(state), "ema": _tensors(ema), "epoch": 3}))
    assert list(both.states) == ["model", "ema"] and np.array_equal(both.states["ema"]["conv1.bias"], ema["conv1.bias"])
    plain = dict(state, **{"StructuredToParameterName@@": {k: f"param_{i}" for i, k in enumerate(state)}})
    assert list(read_paddle_checkpoint(_save(tmp_path / "m.pdparams", plain)).states) == [""]
    assert set(read_paddle_state(full)) == set(state)  # convert's reader: the file's first state dict


def test_a_file_without_model_weights_is_named_with_what_it_holds(tmp_path: Path):
    state = _state(1)
    opt = read_paddle_checkpoint(_save(tmp_path / "model.pdopt", _optimizer(state)))
    assert opt.states == {} and opt.optimizer == ["the whole file"]
    assert opt.found.startswith("optimizer state only (a dict with keys linear_0.w_0_moment1_0, ") \
        and opt.found.endswith("), not model weights")
    rest = read_paddle_checkpoint(_save(tmp_path / "model_latest.pth", {"iter": 3, "net": "resnet", "optim": _optimizer(state)}))
    assert rest.found == "a dict with keys iter, net, optim; optimizer state under optim, no model weights under any other key"
    scores = read_paddle_checkpoint(_save(tmp_path / "s.pth", {"iter": 3, "best": _Tensor("b", np.float32(0.5).reshape(1))}))
    assert scores.found == "a dict with keys iter, best; no tensors of model weights under any key"
    with pytest.raises(CheckpointError, match="no tensors of model weights under any key"):
        read_paddle_state(tmp_path / "s.pth")


_KEY = st.sampled_from(["state_dict", "model", "net", "model_state_dict", "params", "generator", "ema", "model_ema",
                        "weights", "backbone", "student"])
_PLAIN = st.recursive(
    st.one_of(st.integers(-2**40, 2**40), st.floats(allow_nan=False), st.booleans(), st.none(),
              st.text(max_size=8), st.builds(np.int64, st.integers(0, 99)),
              st.builds(np.float32, st.floats(0, 1, width=32))),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.tuples(inner, inner),
                            st.dictionaries(st.sampled_from(["a", "b", "lr", "step"]), inner, max_size=3)),
    max_leaves=6)


@st.composite
def checkpoints(draw) -> tuple[dict, dict[str, int]]:
    """A checkpoint dict as people save one: one or two state dicts (seeds) at generated key paths, optimizer
    state, plain values; and where each state dict is ('' for a plain state dict)."""
    if draw(st.booleans()) and draw(st.booleans()):
        return _tensors(_state(5)), {"": 5}
    tree: dict = {}
    where: dict[str, int] = {}
    for seed in range(draw(st.integers(1, 2))):  # a second one never above or below the first
        path = draw(st.lists(_KEY, min_size=1, max_size=3).filter(
            lambda p: not any("/".join(p).startswith(w) or w.startswith("/".join(p)) for w in where)))
        node = tree
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = _tensors(_state(seed))
        where["/".join(path)] = seed
    for key in draw(st.lists(st.sampled_from(["iter", "epoch", "best_acc", "args_list", "shape", "extra"]), max_size=4,
                             unique=True)):
        tree.setdefault(key, draw(_PLAIN))
    if draw(st.booleans()):
        tree[draw(st.sampled_from(["optimizer", "opt", "optim", "optimizer_state_dict", "adam"]))] = _optimizer(_state(0))
    return tree, where


@settings(max_examples=fuzz_examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(checkpoints(), st.sampled_from([2, 3, 4]))
def test_generated_checkpoints_give_back_every_state_dict_and_never_the_optimizer(shape, protocol):
    tree, where = shape
    with tempfile.TemporaryDirectory() as tmp:
        found = read_paddle_checkpoint(_save(Path(tmp) / "c.pth", tree, protocol))
    assert sorted(found.states) == sorted(where)
    for key, seed in where.items():
        expected = _state(seed)
        assert all(np.array_equal(found.states[key][k], expected[k]) for k in expected)


# ---------------------------------------------------------------- discovery and the proof


def test_checkpoints_under_every_suffix_and_the_named_file_of_any_name_are_discovered(tmp_path: Path):
    save = tmp_path / "out"
    for name in ("best_model/model.pdparams", "model_latest.pth", "net.pd", "epoch_3/w.pt", "checkpoint_last"):
        _save(save / name, {"net": _tensors(_state(1))})
    (save / "model.pdopt").write_bytes(b"optimizer")
    (save / "train.log").write_text("loss 1\n")
    found = [p.relative_to(save).as_posix() for p in export_check.written_checkpoints(save)]
    assert found == ["model_latest.pth", "net.pd", "best_model/model.pdparams", "epoch_3/w.pt"]
    named = export_check.written_checkpoints(save, name="checkpoint_last")  # train_model_name: any name
    assert save / "checkpoint_last" in named and len(named) == 5
    for name in ("model_latest.pth", "model_latest", "best_model", "best_model/model.pdparams", "epoch_3", ".",
                 "checkpoint_last", "net.pd"):
        assert export_check.missing_checkpoint(save, name, export_check.written_checkpoints(save, name=name)) is None, name
    # What a training wrote is its record (repro/record.py), taken by content at the runner's handshake, never by
    # a file's time: it keeps every checkpoint suffix and a pickle of any name (checkpoint_last), no other file.
    from tipcgen.repro import record

    recorded = sorted(Path(w.path).name for w in record.Recorder(tmp_path, tmp_path / "run", 1 << 30).weights_in(save))
    assert recorded == ["checkpoint_last", "model.pdparams", "model_latest.pth", "net.pd", "w.pt"]
    (save / "epoch_9").mkdir()
    (save / "epoch_9/notes.txt").write_text("")
    assert export_check.missing_checkpoint(save, "epoch_9", export_check.written_checkpoints(save, name="epoch_9")) \
        == save / "epoch_9"


def test_the_export_is_matched_against_every_state_dict_of_every_file_and_unreadable_ones_are_named(tmp_path: Path):
    state, ema = _state(1), _state(2)
    latest = _save(tmp_path / "out/model_latest.pth", {"iter": 9, "net": _tensors(state), "ema": _tensors(ema),
                                                       "optim": _optimizer(state)})
    junk = _save(tmp_path / "out/args.pt", {"iter": 9, "lr": 0.1, "optim": _optimizer(state)})
    passed, text, which = export_check.compare_written([junk, latest], _exported(ema), tmp_path, 1 << 20)
    assert passed and which == latest
    assert text == ("3 of 3 trained parameters found in the export with their trained values (the state dict under "
                    "'ema'); not compared, no model weights: out/args.pt: a dict with keys iter, lr, optim; optimizer "
                    "state under optim, no model weights under any other key")
    near = dict(state, **{"conv1.bias": state["conv1.bias"] + 1})
    passed, text, which = export_check.compare_written([latest], _exported(near), tmp_path, 1 << 20)
    assert not passed and which == latest and text.startswith(
        "the export equals none of the 2 checkpoints the training wrote (out/model_latest.pth [net], "
        "out/model_latest.pth [ema]); the nearest, out/model_latest.pth [net]: trained parameter conv1.bias [4]")
    passed, text, which = export_check.compare_written([junk], _exported(state), tmp_path, 1 << 20)
    assert not passed and which == junk and text.startswith(
        "none of the 1 checkpoint file(s) the training wrote holds model weights tipcgen can read: out/args.pt: "
        "a dict with keys iter, lr, optim;")


def _steps() -> list[Step]:
    return [Step.flat("train", "t", "passed", training="gpus_-1", model_dir="out/t"),
            Step.flat("export", "t_export", "passed", training="gpus_-1", model_dir="out/t/inference")]


def test_a_checkpoint_the_proof_cannot_read_is_never_reported_as_missing(tmp_path: Path):
    config = TUTORIAL.replace("train_model_name:latest.pdparams", "train_model_name:model_latest.pth")
    (tmp_path / "out/t/inference").mkdir(parents=True)
    (tmp_path / "out/t/inference/inference.pdiparams").write_bytes(b"")
    _save(tmp_path / "out/t/model_latest.pth", {"iter": 3, "net": "resnet", "optim": _optimizer(_state(1))})
    steps = _steps()
    (check,), _ = export_check.check_exports(tmp_path, steps, config, None, {})
    assert steps[0].status == "passed"  # the named file was written (what it holds is the check's to say)
    assert check.status == "failed" and "wrote no checkpoint" not in check.reason  # here: no export to read
    (tmp_path / "out/t/model_latest.pth").unlink()
    steps = _steps()
    export_check.check_exports(tmp_path, steps, config, None, {})
    assert steps[0].status == "failed" and steps[0].reason.startswith(
        "it wrote no checkpoint out/t/model_latest.pth (train_model_name 'model_latest.pth'")


# ---------------------------------------------------------------- hostile files, still refused


class _Call:
    """An object pickled as a call of ``func`` (what a hostile file asks the unpickler to do)."""

    def __init__(self, func, *args) -> None:
        self.func, self.args = func, args

    def __reduce__(self):
        return (self.func, self.args)


def _hostile(marker: Path) -> list[tuple[object, str]]:
    """(a value to hide in an honest checkpoint, what the refusal names)."""
    return [(_Call(os.system, f"touch {marker}"), "system"), (_Call(builtins.eval, f"open('{marker}', 'w')"), "eval"),
            (_Call(builtins.getattr, "x", "upper"), "getattr"), (_Call(subprocess.Popen, ["touch", str(marker)]), "Popen"),
            (_Call(builtins.exec, f"open('{marker}', 'w')"), "exec"), (_Call(tuple, "ab"), "builtins.tuple called on"),
            (_Call(builtins.complex, "1+2j"), "builtins.complex called on"),
            (_Call(argparse.Namespace, 1), "argparse.Namespace built with arguments"),
            (_Call(np.ones, (2**40,)), "ones")]


@settings(max_examples=fuzz_examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(checkpoints(), st.data())
def test_a_hostile_value_anywhere_in_a_checkpoint_is_refused_and_nothing_runs(shape, data):
    tree, _ = shape
    with tempfile.TemporaryDirectory() as tmp:
        marker = Path(tmp) / "pwned"
        value, named = data.draw(st.sampled_from(_hostile(marker)))
        node = tree
        for key in data.draw(st.lists(st.sampled_from(["a", "model", "x"]), max_size=3)):
            node = node.setdefault(key, {}) if isinstance(node.get(key, {}), dict) else node
        node[data.draw(st.sampled_from(["evil", "iter", "z"]))] = data.draw(st.sampled_from(
            [value, [1, value], (value, 2), {"deep": value}]))
        path = _save(Path(tmp) / "out/model_latest.pth", tree)
        with pytest.raises(CheckpointError) as caught:
            read_paddle_checkpoint(path)
        assert named in caught.value.message and not marker.exists()
        passed, text, _ = export_check.compare_written([path], _exported(_state(1)), Path(tmp), 1 << 20)
        assert not passed and named in text and "wrote no checkpoint" not in text and not marker.exists()


def _nested(depth: int) -> bytes:
    """A list holding the same list twice, ``depth`` times over: 2**depth values from a few hundred bytes."""
    data = b"\x80\x04}\x94(\x8c\x03net\x94]\x940"  # PROTO 4, {} (memo 0), MARK, 'net' (1), [] (2), POP
    for i in range(2, 2 + depth):  # EMPTY_LIST MARK BINGET i BINGET i APPENDS MEMOIZE (i + 1) POP
        data += b"](h" + bytes([i]) + b"h" + bytes([i]) + b"e\x940"
    return data + b"h" + bytes([2 + depth]) + b"u."


@pytest.mark.parametrize(("data", "named"), [
    (_nested(20), "more than 100000 values"),
    (b"\x80\x04}\x94(\x8c\x01a\x94]\x94(h\x02eu.", "levels of nesting"),  # a list that holds itself
    (pickle.dumps({"w": np.zeros(4, "float32")}, protocol=4).replace(b"K\x04\x85", b"J\x00\x00\x00\x40\x85"),
     "over the limit of"),
])
def test_bombs_are_refused_before_they_grow(tmp_path: Path, data: bytes, named: str):
    path = tmp_path / "bomb.pth"
    path.write_bytes(data)
    started = time.process_time()
    with pytest.raises(CheckpointError) as caught:
        read_paddle_checkpoint(path)
    assert named in caught.value.message and time.process_time() - started < 30  # a ceiling, not a timing


# ---------------------------------------------------------------- real paddle.save files


def _real_paddle():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import paddle
    return paddle


@pytest.fixture(scope="module")
def trained():
    """A tiny model stepped once by AdamW with a scheduler: its state dict and its optimizer's, as paddle has them."""
    paddle = _real_paddle()
    paddle.seed(3)
    model = paddle.nn.Sequential(paddle.nn.Linear(3, 4), paddle.nn.BatchNorm1D(4))
    sched = paddle.optimizer.lr.StepDecay(0.1, 2)
    opt = paddle.optimizer.AdamW(learning_rate=sched, parameters=model.parameters())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # BatchNorm's note that it tracks the global mean in training
        model(paddle.randn([2, 3])).sum().backward()
    opt.step()
    sched.step()
    optimizer = opt.state_dict()
    optimizer["master_weights"] = {p.name: p.astype("float32") for p in model.parameters()}  # AMP O2's fp32 copies
    return paddle, model, optimizer


@pytest.mark.paddle
@settings(max_examples=fuzz_examples(25), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(path=st.lists(_KEY, min_size=0, max_size=3), extra=st.dictionaries(
    st.sampled_from(["iter", "epoch", "best", "args", "shape", "history", "tags"]), _PLAIN, max_size=4),
       optimizer=st.sampled_from([None, "optimizer", "opt", "optim_G"]), ema=st.booleans(),
       protocol=st.sampled_from([2, 3, 4]), suffix=st.sampled_from([".pdparams", ".pth", ".pd", ".pt", ""]))
def test_real_paddle_save_files_of_generated_shapes_are_read_as_paddle_loads_them(trained, path, extra, optimizer, ema,
                                                                                   protocol, suffix):
    paddle, model, opt = trained
    tree = model.state_dict() if not path else {}
    node = tree
    for key in path[:-1]:
        node = node.setdefault(key, {})
    if path:
        node[path[-1]] = model.state_dict()
        tree.update({k: v for k, v in extra.items() if k not in tree})
        tree["args"] = argparse.Namespace(lr=0.1, epochs=3)
        if ema:
            tree["ema_weights"] = {k: v * 2 for k, v in model.state_dict().items()}
        if optimizer:
            tree[optimizer] = opt
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / f"ckpt{suffix}"
        paddle.save(tree, str(file), protocol=protocol)
        found = read_paddle_checkpoint(file)
        loaded = paddle.load(str(file), return_numpy=True)
    where = "/".join(path)
    assert sorted(found.states) == sorted([where] + (["ema_weights"] if path and ema else []))
    expected = loaded
    for key in path:
        expected = expected[key]
    assert set(found.states[where]) == set(model.state_dict())
    assert all(np.array_equal(found.states[where][k], np.asarray(expected[k])) for k in found.states[where])
    assert found.optimizer == ([optimizer] if path and optimizer else [])


@pytest.mark.paddle
def test_real_optimizer_files_and_plain_value_files_hold_no_model_weights(trained, tmp_path: Path):
    paddle, _, opt = trained
    paddle.save(opt, str(tmp_path / "model.pdopt"))
    found = read_paddle_checkpoint(tmp_path / "model.pdopt")
    assert found.states == {} and found.found.startswith("optimizer state only (") and found.optimizer == ["the whole file"]
    paddle.save({"iter": 3, "net": "resnet", "optim": opt}, str(tmp_path / "model_latest.pth"))
    assert read_paddle_checkpoint(tmp_path / "model_latest.pth").found == (
        "a dict with keys iter, net, optim; optimizer state under optim, no model weights under any other key")


@pytest.mark.paddle
def test_check_exports_passes_a_real_export_of_model_latest_pth_and_fails_one_of_other_weights(trained, tmp_path: Path):
    """The issue's case end to end: train_model_name model_latest.pth, written with paddle.save as
    {'iter', 'state_dict', 'optimizer'}; the export is a real paddle.jit.save of the model."""
    paddle, model, opt = trained
    config = TUTORIAL.replace("train_model_name:latest.pdparams", "train_model_name:model_latest.pth")
    save = tmp_path / "out/t"
    save.mkdir(parents=True)
    paddle.save({"iter": 12, "state_dict": model.state_dict(), "optimizer": opt}, str(save / "model_latest.pth"))
    model.eval()
    paddle.jit.save(model, str(save / "inference/inference"),
                    input_spec=[paddle.static.InputSpec([None, 3], "float32")])
    steps = _steps()
    (check,), notes = export_check.check_exports(tmp_path, steps, config, None, {})
    assert steps[0].status == "passed" and notes == []
    assert check.status == "passed", check.reason
    assert check.note.startswith("6 of 6 trained parameters found in the export with their trained values") \
        and check.note.endswith("(the state dict under 'state_dict')")
    assert check.command == "compare out/t/model_latest.pth with out/t/inference/inference.pdiparams"
    other = {k: v + 1 for k, v in model.state_dict().items()}  # the export of weights the training never wrote
    paddle.save({"iter": 12, "state_dict": other, "optimizer": opt}, str(save / "model_latest.pth"))
    (check,), _ = export_check.check_exports(tmp_path, _steps(), config, None, {})
    assert check.status == "failed" and "so export did not use the trained checkpoint" in check.reason \
        and "(the state dict under 'state_dict')" in check.reason
