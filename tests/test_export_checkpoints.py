"""Issues #34 (5) and #35 (1), without paddle: which checkpoints a training wrote (any name, folders,
best/latest/EMA side by side; which of them it trained: tests/test_record.py), the checkpoint the config names and
a training that did not write it, the export compared with each (passes on one, else names the nearest),
the size limit naming its option, eval and export given the same checkpoint, and the verdict: a proof
that did not run fails it. ``.pdparams`` are written as paddle.save writes a state dict (a pickled dict
of numpy arrays); the chain half is tests/chains/test_checkpoints.py."""
from __future__ import annotations

import pickle
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tipcgen.core.errors import CheckpointError
from tipcgen.repro import export_check
from tipcgen.results.summary import Step, Summary

RNG = np.random.default_rng(3)


def _state(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"conv1.weight": rng.normal(size=(4, 1, 3, 3)).astype("float32"),
            "conv1.bias": rng.normal(size=4).astype("float32"),
            "conv2.weight": rng.normal(size=(1, 4, 3, 3)).astype("float32")}


def _save(path: Path, state: dict[str, np.ndarray]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        pickle.dump(state, handle, protocol=4)
    return path


def _exported(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """As Paddle 3's export names them."""
    return {f"p_{i}": value.copy() for i, value in enumerate(state.values())}


def test_the_checkpoints_in_a_training_s_folder_are_every_pdparams_below_it_links_not_followed(tmp_path: Path):
    """Read as they are: only for a training without a record (a kept runner's); which of them the training
    trained is judged by content (tests/test_record.py), never by a file's time."""
    save = tmp_path / "out"
    for name in ("best.pdparams", "latest.pdparams", "ema/model.pdparams", "epoch_3/model.pdparams"):
        _save(save / name, _state(1))
    (save / "latest.pdopt").write_bytes(b"optimizer")
    old = _save(tmp_path / "pretrained.pdparams", _state(2))
    (save / "linked.pdparams").symlink_to(old)
    found = export_check.written_checkpoints(save)
    assert [p.relative_to(save).as_posix() for p in found] == [
        "best.pdparams", "latest.pdparams", "ema/model.pdparams", "epoch_3/model.pdparams"]
    assert export_check.written_checkpoints(tmp_path / "none") == []


@pytest.mark.parametrize(("name", "missing"), [
    (".", None), ("best.pdparams", None), ("latest", None), ("epoch_3", None), ("epoch_3/model.pdparams", None),
    ("net.pdparams", "net.pdparams"), ("epoch_9", "epoch_9"), (None, None)])
def test_the_checkpoint_the_config_names_is_one_the_training_wrote(tmp_path: Path, name, missing):
    save = tmp_path / "out"
    for file in ("best.pdparams", "latest.pdparams", "epoch_3/model.pdparams"):
        _save(save / file, _state(1))
    (save / "epoch_9").mkdir()  # a folder without a checkpoint in it
    written = export_check.written_checkpoints(save)
    assert export_check.missing_checkpoint(save, name, written) == (save / missing if missing else None)
    empty = tmp_path / "empty"
    empty.mkdir()
    if name:  # a training that saved nothing (a save gated by an eval interval) misses every name, '.' too
        assert export_check.missing_checkpoint(empty, name, []) == empty / name


def test_the_export_passes_when_it_holds_one_checkpoint_and_else_names_the_nearest(tmp_path: Path):
    best, latest = _state(1), _state(2)
    ckpts = [_save(tmp_path / "out/best.pdparams", best), _save(tmp_path / "out/latest.pdparams", latest)]
    passed, text, which = export_check.compare_written(ckpts, _exported(latest), tmp_path, 1 << 20)
    assert passed and which == ckpts[1] and text == "3 of 3 trained parameters found in the export with their trained values"
    near = dict(best, **{"conv1.weight": best["conv1.weight"] + 0.5})  # best but one parameter
    passed, text, which = export_check.compare_written(ckpts, _exported(near), tmp_path, 1 << 20)
    assert not passed and which == ckpts[0]
    assert text.startswith("the export equals none of the 2 checkpoints the training wrote (out/best.pdparams, "
                           "out/latest.pdparams); the nearest, out/best.pdparams: trained parameter conv1.weight "
                           "[4, 1, 3, 3] is not in the export: its 1 parameter(s) of that shape hold other values "
                           "(nearest, p_0, differs by up to 0.5)")
    committed = _state(9)  # the weights a repository ships: every parameter differs
    passed, text, which = export_check.compare_written(ckpts, _exported(committed), tmp_path, 1 << 20)
    assert not passed and "(3 of 3 trained parameters differ)" in text and which in ckpts


def test_a_checkpoint_over_the_limit_fails_naming_the_option(tmp_path: Path):
    ckpt = _save(tmp_path / "out/model.pdparams", _state(1))
    with pytest.raises(CheckpointError) as caught:
        export_check.compare_written([ckpt], _exported(_state(1)), tmp_path, 100)
    size = ckpt.stat().st_size
    assert caught.value.message == (f"checkpoint out/model.pdparams is {size} bytes, over the limit of 100 bytes "
                                    "(--max-checkpoint-bytes)")
    assert caught.value.hint == f"raise it: tipcgen run --max-checkpoint-bytes {size}"
    assert export_check.default_max_bytes() >= 1 << 30  # a quarter of the memory, never under 1 GiB


TUTORIAL = (Path(__file__).parent / "test_chain_proof.py").read_text().split('TUTORIAL = """', 1)[1].split('"""', 1)[0]


def _steps(eval_cmd: str, export_cmd: str) -> list[Step]:
    return [Step.flat("train", "t", "passed", training="gpus_-1", model_dir="out/t"),
            Step.flat("eval", "t_eval", "passed", training="gpus_-1", command=eval_cmd),
            Step.flat("export", "t_export", "passed", training="gpus_-1", model_dir="out/t", command=export_cmd)]


def test_eval_and_export_given_other_checkpoints_fail_the_check_from_their_recorded_commands(tmp_path: Path):
    (tmp_path / "out/t").mkdir(parents=True)
    (tmp_path / "out/t/inference.pdiparams").write_bytes(b"")
    _save(tmp_path / "out/t/latest.pdparams", _state(1))
    assert export_check.passed_value("python eval.py --pretrained w/a --pretrained=out/t/latest.pdparams", "--pretrained") \
        == "out/t/latest.pdparams"  # the last one, as argparse reads it
    same = _steps("python train.py --test-only --pretrained=out/t/latest.pdparams",
                  "python export.py --pretrained=./out/t/latest.pdparams --save-inference-dir=out/t")
    (check,), _ = export_check.check_exports(tmp_path, same, TUTORIAL, None, {})
    assert check.reason == ("no interpreter to read the export with: out/t/inference: no .json or .pdmodel program "
                            "beside the .pdiparams")  # a proof that cannot run fails
    assert check.status == "failed" and same[0].status == "passed"
    other = _steps("python train.py --test-only --pretrained=weights/shipped.pdparams",
                   "python export.py --pretrained=out/t/latest.pdparams")
    (check,), _ = export_check.check_exports(tmp_path, other, TUTORIAL, None, {})
    assert check.status == "failed" and check.reason.endswith(
        "eval t_eval was given weights/shipped.pdparams (--pretrained) but export out/t/latest.pdparams "
        "(--pretrained): both must load the checkpoint this run trained")


def test_a_training_that_wrote_no_named_checkpoint_fails_naming_the_file(tmp_path: Path):
    (tmp_path / "out/t").mkdir(parents=True)
    (tmp_path / "out/t/train.log").write_text("epoch 0\n")
    steps = _steps("", "")
    export_check.check_exports(tmp_path, steps, TUTORIAL, None, {})
    assert steps[0].status == "failed" and steps[0].reason.startswith(
        "it wrote no checkpoint out/t/latest.pdparams (train_model_name 'latest.pdparams', the descriptor's train.checkpoint)")
    alone = [Step.flat("train", "t", "passed", training="gpus_-1", model_dir="out/t")]  # nothing loads it (benchmark)
    export_check.check_exports(tmp_path, alone, TUTORIAL, None, {})
    assert alone[0].status == "passed"


def test_a_proof_that_did_not_run_fails_the_verdict_and_only_a_missing_device_excuses_a_skip():
    def summary(*checks: Step) -> Summary:
        steps = [Step("train", "t", "passed"), Step.flat("check", "fixed_inputs", "passed", reference="fixed", check={"logs": 1}),
                 *checks]
        return Summary(model="m", mode="lite_train_lite_infer", config="c", steps=steps, runner_exit_code=0,
                       required_kinds=["train"])

    assert summary(Step.flat("check", "export_params_gpus_-1", "passed", reference="trained")).verdict == "PASSED"
    skipped = summary(Step.flat("check", "export_params_gpus_-1", "skipped", reference="trained", reason="no checkpoint"))
    assert skipped.verdict == "FAILED" and skipped.exit_code == 1 and [s.name for s in skipped.unproven()] == ["export_params_gpus_-1"]
    assert summary(Step.flat("check", "tracked_files", "skipped", reference="git")).verdict == "FAILED"
    gpu = summary(Step.flat("check", "export_params_gpus_0", "skipped", reference="trained", device="gpu",
                       reason="gpu_list entry '0' needs a CUDA device; none found"))
    assert gpu.verdict == "PASSED" and gpu.unproven() == []


def _where(entry: tuple[list[str], str]) -> tuple[str, ...]:
    return (*entry[0], entry[1])


_NAME = st.text(alphabet=st.sampled_from(list("abcdefghij_0123456789")), min_size=1, max_size=8)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout=st.lists(st.tuples(st.lists(_NAME, max_size=2), _NAME), min_size=1, max_size=5,
                       unique_by=_where),
       pick=st.integers(min_value=0), delta=st.floats(min_value=1e-3, max_value=10))
def test_generated_checkpoint_layouts_pass_on_the_one_exported_and_name_it_as_nearest_when_perturbed(layout, pick, delta):
    """Any names, any folder depth, any count side by side: the export of one passes naming it; the same
    export with one parameter moved fails, and the nearest named is that checkpoint."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = [_save(root / "out" / Path(*folders, f"{name}.pdparams"), _state(100 + i))
                 for i, (folders, name) in enumerate(layout)]
        written = export_check.written_checkpoints(root / "out")
        assert sorted(written) == sorted(paths)
        k = pick % len(paths)
        state = _state(100 + k)
        passed, _, which = export_check.compare_written(written, _exported(state), root, 1 << 20)
        assert passed and which == paths[k]
        moved = dict(state, **{"conv1.bias": state["conv1.bias"] + np.float32(delta)})
        passed, text, which = export_check.compare_written(written, _exported(moved), root, 1 << 20)
        assert not passed and which == paths[k] and "trained parameter conv1.bias [4]" in text


def test_an_export_without_pdiparams_fails_the_check_unless_the_chain_is_a_stand_in(tmp_path: Path):
    (tmp_path / "out/t").mkdir(parents=True)
    _save(tmp_path / "out/t/latest.pdparams", _state(1))
    steps = _steps("", "")
    (check,), notes = export_check.check_exports(tmp_path, steps, TUTORIAL, None, {})
    assert check.status == "failed" and notes == [] and check.reason.startswith("the export wrote no .pdiparams under out/t")
    assert export_check.check_exports(tmp_path, steps, TUTORIAL, None, {"TIPC_NO_PADDLE": "1"})[0] == []


def test_tracked_files_that_git_could_not_read_after_the_run_fail_the_check():
    from tipcgen.run import tracked

    assert tracked.check_step([("before the run", None), ("prepare.sh", None)]) is None  # no git: nothing claimed
    step = tracked.check_step([("before the run", {}), ("prepare.sh", {}), ("the runner's steps", None)])
    assert step is not None and step.status == "failed" and step.reason.startswith(
        "git status could not be read after the runner's steps")
