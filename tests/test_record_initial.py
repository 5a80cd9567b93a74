"""Issue #59: a "training" that saves the model as it was initialised (no optimizer step, a learning rate of 0,
a warmup from 0 with one step) is not trained, though none of its parameters is in a weight file there before it
(repro/record.initial_values: every bias and normalisation tensor of its own still exactly 0 or 1). Real Paddle
trainings of tiny models on the CPU (seconds each), saved with paddle.save and recorded by the Recorder's own
reader: the rule fires on those that never stepped, and never on honest ones (SGD, Adam, AdamW with weight decay,
1 or 2 steps, a warmup from 0 with two steps, a frozen backbone, a fine-tune of pretrained weights, a dead
auxiliary head, BatchNorm, biases initialised off 0, a model with no bias or normalisation at all: there the rule
says nothing, and the run's note says it was not checked). Generators over state dicts drive the pure rule."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tipcgen.repro import record

_ENV = dict(os.environ)
paddle = pytest.importorskip("paddle")
nn = paddle.nn
# Importing paddle sets OMP_NUM_THREADS=1 in this process's environment, which every later chain of the session
# would inherit (GNU nproc then says 1: the runner's steps would run one at a time): put it back as it was.
for _name in set(os.environ) - set(_ENV):
    del os.environ[_name]
os.environ.update(_ENV)


# ---------------------------------------------------------------- real trainings

class Net(nn.Layer):
    """A tiny conv net: conv (+BatchNorm) -> pool -> hidden Linear + LayerNorm -> head (+ an auxiliary head)."""

    def __init__(self, bn: bool = True, bias: bool = True, aux: bool = False, bias_init: float | None = None):
        super().__init__()
        battr = False if not bias else (paddle.ParamAttr(initializer=nn.initializer.Constant(bias_init))
                                        if bias_init is not None else None)
        self.conv = nn.Conv2D(1, 4, 3, bias_attr=battr)
        self.bn = nn.BatchNorm2D(4) if bn else None
        self.fc = nn.Linear(4, 8, bias_attr=battr)
        self.ln = nn.LayerNorm(8) if bn else None
        self.head = nn.Linear(8, 3, bias_attr=battr)
        self.aux = nn.Linear(8, 3) if aux else None  # never used by forward: a dead branch

    def forward(self, x):
        x = self.conv(x)
        if self.bn is not None:
            x = self.bn(x)
        x = paddle.nn.functional.relu(x).mean(axis=[2, 3])
        x = self.fc(x)
        if self.ln is not None:
            x = self.ln(x)
        return self.head(paddle.nn.functional.relu(x))


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    return (paddle.to_tensor(rng.normal(size=(6, 1, 6, 6)).astype("float32")),
            paddle.to_tensor(rng.integers(0, 3, size=(6,)).astype("int64")))


def _train(model: nn.Layer, optimizer, steps: int, scheduler=None) -> None:
    x, y = _data()
    model.train()
    for _ in range(steps):
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        if scheduler is not None:
            scheduler.step()


def _judge(tmp_path: Path, model: nn.Layer, before: dict | None = None) -> tuple[int, int, str, list[str]]:
    """The model saved by paddle.save into a training's folder and judged as export_check judges it: against the
    weight file ``before`` (a pretrained state dict, saved first) if any. (changed, compared, why, witnesses)."""
    recorder = record.Recorder(tmp_path, tmp_path / "run", 1 << 30, env={})
    training = record.Training("t", model_dir="out")
    if before is not None:
        paddle.save(before, str(tmp_path / "pretrained.pdparams"))
        training.before, _ = recorder.weights_before()
    (tmp_path / "out").mkdir(parents=True)
    paddle.save(model.state_dict(), str(tmp_path / "out/model.pdparams"))
    (weights,) = recorder.weights_in(tmp_path / "out")
    n, total, why = record.trained_text(weights, training)
    witnesses, _ = record.initial_values(weights.params, weights.constant, training.before_digests())
    return n, total, why, witnesses


def _fresh(seed: int = 1, **kw) -> Net:
    paddle.seed(seed)
    return Net(**kw)


def _sgd(model, lr=0.1, **kw):
    return paddle.optimizer.SGD(learning_rate=lr, parameters=model.parameters(), **kw)


def _adam(model, lr=1e-3, **kw):
    return paddle.optimizer.Adam(learning_rate=lr, parameters=model.parameters(), **kw)


def _adamw(model, lr=1e-3, **kw):
    return paddle.optimizer.AdamW(learning_rate=lr, parameters=model.parameters(), weight_decay=0.01, **kw)


def _warmup(model, steps):
    scheduler = paddle.optimizer.lr.LinearWarmup(learning_rate=0.01, warmup_steps=4, start_lr=0.0, end_lr=0.01)
    _train(model, paddle.optimizer.AdamW(learning_rate=scheduler, parameters=model.parameters(),
                                         weight_decay=0.01), steps, scheduler)


HONEST = {
    "sgd, 1 step": lambda m: _train(m, _sgd(m), 1),
    "sgd with momentum and L2 decay, 2 steps": lambda m: _train(m, paddle.optimizer.Momentum(
        0.05, parameters=m.parameters(), weight_decay=1e-4), 2),
    "adam, 1 step": lambda m: _train(m, _adam(m), 1),
    "adam, lr 1e-6, 1 step": lambda m: _train(m, _adam(m, lr=1e-6), 1),
    "adamw with weight decay, 2 steps": lambda m: _train(m, _adamw(m), 2),
    "warmup from lr 0, 2 steps": lambda m: _warmup(m, 2),
}


@pytest.mark.parametrize("how", sorted(HONEST))
@pytest.mark.parametrize("shape", ["bn", "no norm"])
def test_an_honest_tiny_training_is_not_the_initial_values(tmp_path: Path, how: str, shape: str):
    model = _fresh(bn=shape == "bn")
    HONEST[how](model)
    n, total, why, witnesses = _judge(tmp_path, model)
    assert why == "" and n == total > 0, why
    assert witnesses  # the rule looked: the biases (and norms) moved


@pytest.mark.parametrize("freeze", ["stop_gradient", "trainable"])
def test_a_frozen_backbone_with_only_the_head_trained_passes(tmp_path: Path, freeze: str):
    model = _fresh()
    for layer in (model.conv, model.bn, model.fc, model.ln):
        for p in layer.parameters():
            if freeze == "trainable":
                p.trainable = False
            else:
                p.stop_gradient = True  # only the head's weight and bias move
    _train(model, _adam(model), 1)
    n, total, why, _ = _judge(tmp_path, model)
    assert why == "", why


def test_a_frozen_pretrained_backbone_fine_tuned_head_passes_and_counts_the_head(tmp_path: Path):
    pretrained = _fresh(seed=3)
    _train(pretrained, _sgd(pretrained), 3)  # pretrained weights: every bias and norm moved off 0 and 1
    model = _fresh(seed=4)
    model.set_state_dict({k: v for k, v in pretrained.state_dict().items() if not k.startswith("head.")})
    for layer in (model.conv, model.bn, model.fc, model.ln):
        layer.eval()
        for p in layer.parameters():
            p.stop_gradient = True
    _train(model, _adamw(model), 2)
    n, total, why, _ = _judge(tmp_path, model, before=pretrained.state_dict())
    # the head's weight and bias, and BatchNorm's running stats (a forward pass in train mode moves them); the
    # frozen rest kept its values
    assert why == "" and n == 4, (n, total, why)


def test_a_fine_tune_of_pretrained_weights_passes(tmp_path: Path):
    pretrained = _fresh(seed=3)
    _train(pretrained, _sgd(pretrained), 3)
    model = _fresh(seed=4)
    model.set_state_dict({k: v for k, v in pretrained.state_dict().items() if not k.startswith("head.")})
    _warmup(model, 2)
    n, total, why, _ = _judge(tmp_path, model, before=pretrained.state_dict())
    assert why == "" and n > 2, why


def test_a_dead_auxiliary_head_keeps_its_bias_0_while_the_rest_trains(tmp_path: Path):
    model = _fresh(aux=True)
    _train(model, _adam(model), 1)
    assert not model.aux.bias.numpy().any()  # never reached by a gradient: still 0
    n, total, why, _ = _judge(tmp_path, model)
    assert why == "", why


def test_biases_initialised_off_0_are_not_taken_for_trained_or_initial(tmp_path: Path):
    trained = _fresh(bias_init=0.1)
    _train(trained, _sgd(trained), 1)
    assert _judge(tmp_path / "a", trained)[2] == ""
    untrained = _fresh(bias_init=0.1, bn=False)  # its initial values are no 0 or 1: the rule cannot tell
    assert _judge(tmp_path / "b", untrained)[2] == ""


def test_a_model_with_no_bias_or_norm_leaves_the_rule_silent(tmp_path: Path):
    for steps in (0, 1):
        model = _fresh(bn=False, bias=False)
        _train(model, _sgd(model), steps)
        n, total, why, witnesses = _judge(tmp_path / str(steps), model)
        assert why == "" and witnesses == [], why  # untrained or not, nothing to tell it by (the note says so)


FAKE = {
    "saved as initialised": lambda m: None,
    "adam with lr 0, 3 steps (BatchNorm's running stats move)": lambda m: _train(m, _adam(m, lr=0.0), 3),
    "sgd with lr 0 and weight decay, 2 steps": lambda m: _train(m, _sgd(m, lr=0.0, weight_decay=0.01), 2),
    "warmup from lr 0, 1 step": lambda m: _warmup(m, 1),
    "gradients cleared before each step": lambda m: _cleared(m),
}


def _cleared(model: nn.Layer) -> None:
    optimizer = _adam(model)
    x, y = _data()
    for _ in range(2):
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.clear_grad()
        optimizer.step()


@pytest.mark.parametrize("how", sorted(FAKE))
def test_a_training_that_never_steps_fails_naming_the_initial_values(tmp_path: Path, how: str):
    model = _fresh()
    FAKE[how](model)
    n, total, why, _ = _judge(tmp_path, model)
    assert n == 0 and why.startswith("out/model.pdparams holds the model's initial values, not trained ones: all 7 "
                                     "of its bias and normalisation tensors are still exactly 0 or 1 ("), why
    assert why.endswith("so no optimizer step changed them (check that the training steps its optimizer, with a "
                        "learning rate above 0, before it saves: a warmup from 0 needs two steps, and an AMP loss "
                        "scaler skips each step whose gradients overflow)")


def test_a_pretrained_backbone_saved_with_its_fresh_head_fails_naming_the_pretrained_file(tmp_path: Path):
    """bert-sst2 shaped: from_pretrained, then save: the head's weight is new random values, its bias is 0."""
    pretrained = _fresh(seed=3)
    _train(pretrained, _sgd(pretrained), 3)
    model = _fresh(seed=4)
    model.set_state_dict({k: v for k, v in pretrained.state_dict().items() if not k.startswith("head.")})
    n, total, why, _ = _judge(tmp_path, model, before=pretrained.state_dict())
    assert why == ("out/model.pdparams holds the model's initial values, not trained ones: all 1 of its bias and "
                   f"normalisation tensors are still exactly 0 or 1 (head.bias); the other {total - 2} are those of "
                   "pretrained.pdparams, there before the train step, so no optimizer step changed them (check that "
                   "the training steps its optimizer, with a learning rate above 0, before it saves: a warmup from 0 "
                   "needs two steps, and an AMP loss scaler skips each step whose gradients overflow)"), why


# ---------------------------------------------------------------- the pure rule, generated

_KIND = st.sampled_from(["linear", "conv", "bn", "ln", "gn", "nobias"])


def _model(draw, layers: list[tuple[str, int]], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The state dict a fresh Paddle model of these layers has: weights random, biases 0, norms' scale 1 and
    shift 0, BatchNorm's running stats as a forward pass in train mode left them (off 0 and 1)."""
    state: dict[str, np.ndarray] = {}
    for i, (kind, width) in enumerate(layers):
        name = draw(st.sampled_from(["", "backbone.", "model/", "net.blocks."])) + f"{kind}{i}"
        if kind in ("linear", "conv", "nobias"):
            shape = (width, width) if kind != "conv" else (width, width, 3, 3)
            state[f"{name}.weight"] = rng.normal(size=shape).astype("float32")
            if kind != "nobias":
                state[f"{name}.bias"] = np.zeros(width, "float32")
        else:
            state[f"{name}.weight"] = np.ones(width, "float32")
            state[f"{name}.bias"] = np.zeros(width, "float32")
            if kind == "bn":
                state[f"{name}._mean"] = rng.normal(size=width).astype("float32")
                state[f"{name}._variance"] = rng.uniform(0.5, 2, size=width).astype("float32")
    return state


def _rule(state: dict[str, np.ndarray], before: dict[str, np.ndarray] | None = None) -> tuple[list[str], list[str]]:
    params = {n: record.digest(a) for n, a in record.compared(state).items()}
    constant = tuple(n for n, a in record.compared(state).items() if record._filled(a))
    return record.initial_values(params, constant, {record.digest(a) for a in (before or {}).values()})


_LAYERS = st.lists(st.tuples(_KIND, st.integers(2, 6)), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), layers=_LAYERS, seed=st.integers(0, 2**16), pretrained=st.integers(0, 6))
def test_generated_models_saved_as_initialised_fire_when_they_have_a_bias_or_norm(data, layers, seed, pretrained):
    """Any fresh model (a first layers part loaded from weights there before: a pretrained backbone, trained
    off 0 and 1), saved untrained: the rule fires whenever a bias or normalisation tensor of its own is left,
    and is silent where none is."""
    rng = np.random.default_rng(seed)
    state = _model(data.draw, layers, rng)
    names = list(state)[:pretrained * 2]
    before = {n: state[n] + rng.uniform(0.1, 1, size=state[n].shape).astype("float32") for n in names}
    state.update(before)
    witnesses, still = _rule(state, before)
    own = [n for n in state if n not in before and not n.endswith(record.RUNNING_STATS)
           and state[n].ndim == 1 and state[n].size > 1]
    assert sorted(witnesses) == sorted(own)
    assert still == witnesses  # every one still 0 or 1: fires where there is one


@settings(max_examples=60, deadline=None)
@given(data=st.data(), layers=_LAYERS, seed=st.integers(0, 2**16),
       step=st.sampled_from([1e-6, -1e-3, 0.5, "uniform", "decay", "one element"]))
def test_generated_models_with_any_bias_or_norm_moved_never_fire(data, layers, seed, step):
    """Trained: any one bias or normalisation tensor moved off its constant (by a tiny step, a uniform shift, a
    weight decay of a scale, one element only), every other left as initialised (frozen, dead): never fires."""
    rng = np.random.default_rng(seed)
    state = _model(data.draw, layers, rng)
    movable = [n for n in state if state[n].ndim == 1 and not n.endswith(record.RUNNING_STATS)]
    if not movable:
        assert _rule(state)[0] == []  # no bias or norm: silent
        return
    name = data.draw(st.sampled_from(movable))
    value = state[name].copy()
    if step == "uniform":
        value = value - np.float32(1e-3)
    elif step == "decay":
        value = value * np.float32(1 - 1e-4) if value[0] == 1 else value - np.float32(1e-4)
    elif step == "one element":
        value[0] += np.float32(0.25)
    else:
        value = value + rng.normal(size=value.shape).astype("float32") * np.float32(step)
    assert not record._filled(value)
    state[name] = value
    witnesses, still = _rule(state)
    assert name in witnesses and name not in still and len(still) < len(witnesses)


def test_running_stats_and_pretrained_constants_are_no_witnesses():
    state = {"bn._mean": np.zeros(4, "float32"), "bn._variance": np.ones(4, "float32"),
             "bn.running_mean": np.zeros(4, "float32"), "w": np.ones((4, 4), "float32"),
             "pre.bias": np.zeros(4, "float32"), "scale": np.ones(1, "float32")}
    assert _rule(state, before={"pre.bias": state["pre.bias"]}) == ([], [])
    assert _rule({"b": np.full(4, -0.0, "float32"), "s": np.ones((1, 4), "float32")}) == (["b", "s"], ["b", "s"])
