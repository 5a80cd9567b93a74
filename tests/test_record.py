"""Issue #59 item 1, without paddle: the export proof reads what tipcgen recorded at the runner's handshakes
(repro/record.py), never a file's time. A training that copies, hard-links, sym-links or re-saves committed
weights into its checkpoint folder, and a later step that overwrites the trained checkpoint with committed
weights and sets its time back, each fail naming what happened; an honest training, a fine-tune of committed
weights and a training that saves best/latest/EMA side by side pass. The handshakes are driven here as
run/pipeline.py drives them (started before a train/eval/export step, ended after a training); the exported
parameters are handed in as the .pdiparams reader would return them (the chain half, with real paddle and
the real runner, is tests/chains/test_checkpoints.py and tests/test_record_runs.py)."""
from __future__ import annotations

import json
import os
import pickle
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tipcgen.repro import export_check, record
from tipcgen.results.summary import Step

TUTORIAL = (Path(__file__).parent / "test_chain_proof.py").read_text().split('TUTORIAL = """', 1)[1].split('"""', 1)[0]
RUN_DIR = "test_tipc/output/m/lite_train_lite_infer"


def _state(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"conv1.weight": rng.normal(size=(4, 1, 3, 3)).astype("float32"),
            "conv1.bias": rng.normal(size=4).astype("float32"),
            "conv2.weight": rng.normal(size=(1, 4, 3, 3)).astype("float32")}


def _save(path: Path, state: dict[str, np.ndarray], protocol: int = 4) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        pickle.dump(state, handle, protocol=protocol)
    return path


def _steps() -> list[Step]:
    return [Step.flat("train", "t", "passed", training="gpus_-1", model_dir="out/t"),
            Step.flat("eval", "t_eval", "passed", training="gpus_-1"),
            Step.flat("export", "t_export", "passed", training="gpus_-1", model_dir="out/t")]


class Chain:
    """One training's handshakes, in the runner's order, over a repository in ``root``."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str] | None = None) -> None:
        self.root, self.monkeypatch = root, monkeypatch
        self.recorder = record.Recorder(root, root / RUN_DIR, 1 << 30, env=env or {})  # no HOME: no cache read
        self.save = root / "out/t"

    def train(self, write) -> None:
        self.recorder.started("train", "t")
        self.save.mkdir(parents=True, exist_ok=True)
        write(self.save)
        self.recorder.ended("train", "t", "out/t")

    def check(self, exported: dict[str, np.ndarray], between=None) -> tuple[Step, list[Step]]:
        """eval and export after the training (``between``: what a later step does first); the export check."""
        if between is not None:
            between()
        self.recorder.started("eval", "t_eval")
        self.recorder.started("export", "t_export")
        (self.save / "inference.pdiparams").write_bytes(b"")
        self.monkeypatch.setattr(export_check, "read_exported", lambda *a: ({f"p_{i}": v.copy() for i, v in
                                                                           enumerate(exported.values())}, ""))
        steps = _steps()
        (check,), self.notes = export_check.check_exports(self.root, steps, TUTORIAL, None, {}, records=self.recorder)
        return check, steps


@pytest.fixture
def chain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Chain:
    _save(tmp_path / "pretrained/best.pdparams", _state(9))  # the weights the repository ships
    _save(tmp_path / "weights/other.pdparams", _state(8))
    return Chain(tmp_path, monkeypatch)


# ---------------------------------------------------------------- must not fire

def test_an_honest_training_passes_and_says_how_many_parameters_it_changed(chain: Chain):
    chain.train(lambda save: _save(save / "latest.pdparams", _state(1)))
    check, steps = chain.check(_state(1))
    assert check.status == "passed", check.reason
    assert check.note == ("3 of 3 trained parameters found in the export with their trained values; parameters the "
                          "training changed: 3 of 3 in "
                          "out/t/latest.pdparams")
    assert steps[0].status == "passed"


def test_a_fine_tune_of_committed_weights_with_frozen_layers_passes(chain: Chain):
    tuned = dict(_state(9), **{"conv2.weight": _state(9)["conv2.weight"] + 0.25})  # conv1 frozen
    chain.train(lambda save: _save(save / "latest.pdparams", tuned))
    check, _ = chain.check(tuned)
    assert check.status == "passed", check.reason
    assert check.note.endswith("1 of 3 in out/t/latest.pdparams")


def test_a_training_that_saves_best_latest_and_ema_passes_on_the_one_exported(chain: Chain):
    def write(save: Path) -> None:
        _save(save / "best.pdparams", _state(1))
        _save(save / "latest.pdparams", _state(2))
        _save(save / "ema/model.pdparams", _state(3))
    chain.train(write)
    check, _ = chain.check(_state(3))
    assert check.status == "passed", check.reason
    assert check.command == "compare out/t/ema/model.pdparams with out/t/inference.pdiparams"


def test_an_export_s_own_copy_written_after_the_record_is_not_a_checkpoint_of_the_training(chain: Chain):
    chain.train(lambda save: _save(save / "latest.pdparams", _state(1)))
    check, _ = chain.check(_state(9), between=lambda: _save(chain.save / "exported_copy.pdparams", _state(9)))
    assert check.status == "failed" and "3 of 3 trained parameters differ" in check.reason


# ---------------------------------------------------------------- the hostile contributor's chains

def _copy(src: Path, dst: Path) -> None:
    shutil.copyfile(src, dst)


def _hardlink(src: Path, dst: Path) -> None:
    os.link(src, dst)


def _symlink(src: Path, dst: Path) -> None:
    dst.symlink_to(src)


def _resave(src: Path, dst: Path) -> None:
    """The same parameters under other names, pickled another way: other bytes, the same values."""
    with src.open("rb") as handle:
        state = pickle.load(handle)
    _save(dst, {f"renamed.{k}": v for k, v in reversed(state.items())}, protocol=3)


@pytest.mark.parametrize(("put", "what"), [
    (_copy, "(its bytes) is pretrained/best.pdparams, a weight file there before the train step"),
    (_hardlink, "(its bytes) is pretrained/best.pdparams, a weight file there before the train step"),
    (_resave, "holds no parameter of its own: all 3 are those of pretrained/best.pdparams, there before the train step")])
def test_a_training_that_puts_committed_weights_in_its_folder_fails_naming_them(chain: Chain, put, what):
    chain.train(lambda save: put(chain.root / "pretrained/best.pdparams", save / "latest.pdparams"))
    check, _ = chain.check(_state(9))
    assert check.status == "failed"
    assert check.reason == ("the training wrote no checkpoint of its own, judged by content against the weight files "
                            f"there before it: out/t/latest.pdparams {what}")


def test_a_checkpoint_overwritten_after_the_record_with_its_time_set_back_fails_naming_the_change(chain: Chain):
    chain.train(lambda save: _save(save / "latest.pdparams", _state(1)))
    trained = chain.save / "latest.pdparams"
    stamp = trained.stat()

    def overwrite() -> None:  # a later step: the committed weights over the trained checkpoint, its time set back
        shutil.copyfile(chain.root / "pretrained/best.pdparams", trained)
        os.utime(trained, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    check, _ = chain.check(_state(9), between=overwrite)
    assert check.status == "failed"
    assert check.reason == ("checkpoint out/t/latest.pdparams changed after the training ended, before eval t_eval "
                            "started (it now holds the bytes of pretrained/best.pdparams, a weight file there before "
                            "the train step)")


def test_a_checkpoint_overwritten_after_eval_started_fails_the_export_against_the_record(chain: Chain):
    """Overwritten after the last handshake (no eval or export step started after it): the export, made from the
    overwritten file, is compared with the recorded parameters."""
    chain.train(lambda save: _save(save / "latest.pdparams", _state(1)))
    chain.recorder.started("eval", "t_eval")
    _save(chain.save / "latest.pdparams", _state(9))
    steps = _steps()
    (chain.save / "inference.pdiparams").write_bytes(b"")
    chain.monkeypatch.setattr(export_check, "read_exported", lambda *a: (dict(_state(9)), ""))
    (check,), _ = export_check.check_exports(chain.root, steps, TUTORIAL, None, {}, records=chain.recorder)
    assert check.status == "failed" and check.reason.startswith(
        "out/t/latest.pdparams changed after the training ended (it now holds the bytes of pretrained/best.pdparams, "
        "a weight file there before the train step): 3 of 3 parameters the training wrote (recorded as it ended) are "
        "not in the export")


def test_a_training_without_a_record_fails_where_the_runner_should_have_waited(chain: Chain):
    _save(chain.save / "latest.pdparams", _state(1))  # written, never recorded: no handshake
    (chain.save / "inference.pdiparams").write_bytes(b"")
    (check,), _ = export_check.check_exports(chain.root, _steps(), TUTORIAL, None, {}, records=chain.recorder)
    assert check.status == "failed" and check.reason.startswith("tipcgen holds no record of what training t wrote")


def test_the_weights_before_leave_out_the_run_folder_and_git_and_read_links_where_they_lead(tmp_path: Path):
    _save(tmp_path / "a.pdparams", _state(1))
    _save(tmp_path / RUN_DIR / "old/latest.pdparams", _state(2))  # the run's own folder: the runner clears it
    _save(tmp_path / ".git/objects/x.pdparams", _state(3))
    _save(tmp_path / ".hidden/w.pth", _state(4))  # a hidden folder is still the repository
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/link.pdparams").symlink_to(tmp_path / "a.pdparams")
    (tmp_path / "data.npy").write_bytes(b"not weights")
    before, left = record.Recorder(tmp_path, tmp_path / RUN_DIR, 1 << 30).weights_before()
    found = {w.path: w for w in before}
    assert sorted(found) == [".hidden/w.pth", "a.pdparams", "sub/link.pdparams"] and left == 0
    assert found["sub/link.pdparams"].link == "a.pdparams" and found["sub/link.pdparams"].sha256 == found["a.pdparams"].sha256


# ---------------------------------------------------------------- generated hostile chains

_NAME = st.text(alphabet=st.sampled_from(list("abcdefghij_0123456789")), min_size=1, max_size=8)
def _where(entry: tuple[list[str], str, str]) -> tuple[str, ...]:
    return (*entry[0], entry[1] + entry[2])


_PUT = {"copy": _copy, "hardlink": _hardlink, "symlink": _symlink, "resave": _resave}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(committed=st.lists(st.tuples(st.lists(_NAME, max_size=2), _NAME,
                                    st.sampled_from([".pdparams", ".pth", ".pt", ".pd"])),
                          min_size=1, max_size=4, unique_by=_where),
       pick=st.integers(min_value=0), how=st.sampled_from(sorted(_PUT)),
       when=st.sampled_from(["in the train step", "after it, time set back"]),
       extra=st.sampled_from(["", "best.pdparams", "ema/model.pdparams"]))
def test_generated_committed_weights_put_into_the_checkpoint_always_fail(committed, pick, how, when, extra):
    """Any committed weight file (any folder, name, suffix), put in the checkpoint's place by a copy, a hard or
    symbolic link or a re-save, by the training or by a later step that sets the file's time back, beside
    honest-looking other checkpoints or not: the export of those weights fails, naming what happened."""
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as monkeypatch:
        root = Path(tmp)
        files = [_save(root / Path(*folders, name + suffix), _state(50 + i))
                 for i, (folders, name, suffix) in enumerate(committed)]
        k = pick % len(files)
        chain = Chain(root, monkeypatch)

        def put(save: Path) -> None:
            target = save / "latest.pdparams"
            if target.exists() or target.is_symlink():
                target.unlink()
            _PUT[how](files[k], target)

        def write(save: Path) -> None:
            if extra:
                _save(save / extra, _state(50 + k))  # another checkpoint, a copy of the same committed weights
            if when == "in the train step":
                put(save)
            else:
                _save(save / "latest.pdparams", _state(1))  # trained for real, then replaced
        chain.train(write)
        stamp = (chain.save / "latest.pdparams").stat()

        def later() -> None:
            if when != "in the train step":
                put(chain.save)
                if not (chain.save / "latest.pdparams").is_symlink():
                    os.utime(chain.save / "latest.pdparams", ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        check, _ = chain.check(_state(50 + k), between=later)
        assert check.status == "failed", (how, when, check.note)
        rel = os.path.relpath(files[k], root)
        if when == "in the train step":
            assert check.reason.startswith("the training wrote no checkpoint of its own"), check.reason
            assert rel in check.reason
        else:
            assert check.reason.startswith("checkpoint out/t/latest.pdparams changed after the training ended, "
                                           "before eval t_eval started"), check.reason


def test_the_handshake_line_is_read_through_words_and_nothing_else_is_one():
    from tipcgen.format import words

    assert words.handshake_of("[tipc] WAIT 123 start train norm_train_gpus_-1") == ("123", "start", "train",
                                                                                   "norm_train_gpus_-1")
    assert words.handshake_of("[tipc] WAIT 9 ended train a b") == ("9", "ended", "train", "a b")
    for line in ("[tipc] WAIT start train x", "[tipc] WAIT x1 start train x", "[tipc] WAIT 1 begun train x",
                 "[tipc] WAIT 1 start train", "[tipc] RUN  train x", "tipc WAIT 1 start train x"):
        assert words.handshake_of(line) is None, line
    assert words.progress_mark("[tipc] WAIT 1 start train x") is None  # not a step's progress line
    steps = (Path(__file__).parents[1] / "templates/runner/tipc_steps.sh.j2").read_text()
    assert steps.count(words.ANSWER_FD_VAR) >= 5  # the runner reads the variable run/pipeline.py sets


def test_a_kept_runner_s_training_is_judged_against_the_weights_before_it_started(chain: Chain):
    """A kept runner (init --submission) does not wait for tipcgen: the weights are recorded before it starts and
    its checkpoints read after the run. A copy of committed weights still fails; a training that wrote what an
    earlier run had left in its own folder (a seeded training run again) is not judged against that."""
    _save(chain.save / "latest.pdparams", _state(1))  # an earlier run's checkpoint, in the training's own folder
    kept = record.Recorder(chain.root, chain.root / RUN_DIR, 1 << 30, handshake=False)
    kept.started("train", "*")
    _save(chain.save / "latest.pdparams", _state(1))  # the same seeded training again
    chain.recorder = kept
    (chain.save / "inference.pdiparams").write_bytes(b"")
    chain.monkeypatch.setattr(export_check, "read_exported", lambda *a: (dict(_state(1)), ""))
    (check,), _ = export_check.check_exports(chain.root, _steps(), TUTORIAL, None, {}, records=kept)
    assert check.status == "passed", check.reason
    shutil.copyfile(chain.root / "pretrained/best.pdparams", chain.save / "latest.pdparams")
    kept = record.Recorder(chain.root, chain.root / RUN_DIR, 1 << 30, handshake=False)
    kept.started("train", "*")
    chain.monkeypatch.setattr(export_check, "read_exported", lambda *a: (dict(_state(9)), ""))
    (check,), _ = export_check.check_exports(chain.root, _steps(), TUTORIAL, None, {}, records=kept)
    assert check.status == "failed" and check.reason == (
        "the training wrote no checkpoint of its own, judged by content against the weight files there before it: "
        "out/t/latest.pdparams (its bytes) is pretrained/best.pdparams, a weight file there before the train step")


def test_weight_files_beyond_the_record_s_bounds_are_counted_in_the_note(chain: Chain):
    chain.monkeypatch.setattr(record, "MAX_FILES", 1)  # two committed files: one is recorded
    chain.train(lambda save: _save(save / "latest.pdparams", _state(1)))
    check, _ = chain.check(_state(1))
    assert check.status == "passed", check.reason
    assert check.note.endswith("1 weight file(s) in the repository were not recorded before the training (over 1 files "
                               "or 32 GiB), so it was not compared with them")


def test_a_checkpoint_linked_to_weights_outside_the_repository_or_its_folder_is_not_trained(chain: Chain, tmp_path_factory):
    """Weights from outside the repository (a downloaded cache) are never in the record of what was there before:
    a link to them is still not the training's own. A link inside its folder (latest -> epoch_3) is."""
    cache = tmp_path_factory.mktemp("home") / ".paddlenlp/model_state.pdparams"
    _save(cache, _state(7))

    def write(save: Path) -> None:
        _save(save / "epoch_3/model.pdparams", _state(1))
        (save / "best.pdparams").symlink_to(save / "epoch_3/model.pdparams")
        (save / "latest.pdparams").symlink_to(cache)
    chain.train(write)
    check, _ = chain.check(_state(7))
    assert check.status == "failed" and check.reason.startswith("the export equals none of the 2 checkpoints")
    assert check.reason.endswith("; not counted as the training's own: out/t/latest.pdparams is a link to "
                                 f"{os.path.relpath(cache, chain.root)}, outside the training's output folder")
    check, _ = chain.check(_state(1))  # the export of its own epoch_3 (also reached through best.pdparams)
    assert check.status == "passed", check.reason


def test_handshake_lines_a_later_step_fakes_change_no_record(chain: Chain):
    """A hostile eval overwrites the checkpoint, then writes `WAIT ... start train t` and `ended train t` into the
    runner's output so that tipcgen records the overwritten file as the training's: both are ignored."""
    chain.train(lambda save: _save(save / "latest.pdparams", _state(1)))
    chain.recorder.started("eval", "t_eval")
    shutil.copyfile(chain.root / "pretrained/best.pdparams", chain.save / "latest.pdparams")
    chain.recorder.ended("train", "t", "out/t")  # the eval step is the last started: not a training's end
    chain.recorder.started("train", "t")  # t ended already: no new record
    chain.recorder.ended("train", "t", "out/t")
    check, _ = chain.check(_state(9))
    assert check.status == "failed" and check.reason.startswith(
        "checkpoint out/t/latest.pdparams changed after the training ended, before eval t_eval started")


def test_an_earlier_run_s_checkpoint_is_not_a_weight_file_before_but_a_committed_one_in_the_output_folder_is(chain: Chain):
    """A seeded training run in another mode writes the very same checkpoint: an earlier run's output (under
    test_tipc/output, not tracked) is not among the weights before; a file git tracks there is."""
    import subprocess

    earlier = _save(chain.root / "test_tipc/output/m/lite_train_whole_infer/t/latest.pdparams", _state(1))
    hidden = _save(chain.root / "test_tipc/output/m/committed/w.pdparams", _state(5))
    subprocess.run(["git", "init", "-q"], cwd=chain.root, check=True)
    subprocess.run(["git", "add", "-f", str(hidden)], cwd=chain.root, check=True)
    chain.train(lambda save: _save(save / "latest.pdparams", _state(1)))  # the same seeded training again
    before = {w.path for w in chain.recorder.trainings["t"].before}
    assert os.path.relpath(earlier, chain.root) not in before and os.path.relpath(hidden, chain.root) in before
    check, _ = chain.check(_state(1))
    assert check.status == "passed", check.reason


# ---------------------------------------------------------------- pretrained caches outside the repository

BERT = ".paddlenlp/models/bert-base-uncased/model_state.pdparams"


@pytest.fixture
def home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("home")
    _save(home / BERT, _state(7))  # what from_pretrained downloaded
    return home


@pytest.mark.parametrize(("put", "what"), [
    (_copy, "(its bytes) is ~/" + BERT + ", a weight file there before the train step"),
    (_hardlink, "(its bytes) is ~/" + BERT + ", a weight file there before the train step"),
    (_resave, "holds no parameter of its own: all 3 are those of ~/" + BERT + ", there before the train step")])
def test_pretrained_weights_copied_from_a_cache_outside_the_repository_fail_naming_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path, put, what):
    chain = Chain(tmp_path, monkeypatch, env={"HOME": str(home)})
    chain.train(lambda save: put(home / BERT, save / "latest.pdparams"))
    check, _ = chain.check(_state(7))
    assert check.status == "failed"
    assert check.reason == ("the training wrote no checkpoint of its own, judged by content against the weight files "
                            f"there before it: out/t/latest.pdparams {what}")


def test_a_fine_tune_of_cached_pretrained_weights_with_frozen_layers_passes(tmp_path: Path, monkeypatch, home: Path):
    chain = Chain(tmp_path, monkeypatch, env={"HOME": str(home)})
    tuned = dict(_state(7), **{"conv2.weight": _state(7)["conv2.weight"] + 0.25})  # conv1 frozen
    chain.train(lambda save: _save(save / "latest.pdparams", tuned))
    check, _ = chain.check(tuned)
    assert check.status == "passed", check.reason
    assert check.note.endswith("parameters the training changed (the others hold values of weights there before it): "
                               "1 of 3 in out/t/latest.pdparams")


def test_ppnlp_home_and_every_paddle_cache_the_step_sees_are_recorded(tmp_path: Path, home: Path):
    elsewhere = tmp_path / "nlp_models"
    _save(elsewhere / "models/ernie/model_state.pdparams", _state(11))
    for i, name in enumerate(record.weight_cache.HOME_CACHES):
        _save(home / name / "sub" / f"w{i}.pdparams", _state(20 + i))
    repo = tmp_path / "repo"
    repo.mkdir()
    recorder = record.Recorder(repo, repo / RUN_DIR, 1 << 30, env={"HOME": str(home), "PPNLP_HOME": str(elsewhere)})
    recorder.started("train", "t")
    paths = sorted(w.path for w in recorder.trainings["t"].before)
    assert paths == sorted([str(elsewhere / "models/ernie/model_state.pdparams"),  # PPNLP_HOME replaces ~/.paddlenlp
                            *(f"~/{n}/sub/w{i}.pdparams" for i, n in enumerate(record.weight_cache.HOME_CACHES)
                              if n != ".paddlenlp")])
    # a relative HOME or PPNLP_HOME names no cache; a cache inside the repository is recorded as the repository's
    relative = record.Recorder(repo, repo / RUN_DIR, 1 << 30, env={"HOME": "home", "PPNLP_HOME": "x"})
    assert relative.weights_cached() == ([], 0) and relative.caches == []
    inside = record.Recorder(repo, repo / RUN_DIR, 1 << 30, env={"HOME": str(repo)})
    _save(repo / ".paddlenlp/w.pdparams", _state(3))
    assert inside.weights_cached() == ([], 0) and [w.path for w in inside.weights_before()[0]] == [".paddlenlp/w.pdparams"]
    # a repository inside a cache: its files (an earlier run's checkpoints among them) are not the cache's
    nested = home / ".paddleclas/checkout"
    _save(nested / "test_tipc/output/m/x/latest.pdparams", _state(5))
    assert not any("checkout" in w.path for w in record.Recorder(nested, nested / RUN_DIR, 1 << 30,
                                                                  env={"HOME": str(home)}).weights_cached()[0])
    # a cache prepare.sh creates after the run started (the recorder was made before it) is recorded
    late = tmp_path / "late_home"
    later = record.Recorder(repo, repo / RUN_DIR, 1 << 30, env={"HOME": str(late)})
    assert later.weights_cached() == ([], 0)
    _save(late / ".paddleocr/det/inference.pdiparams", _state(4))
    assert [w.path for w in later.weights_cached()[0]] == ["~/.paddleocr/det/inference.pdiparams"]


def test_a_cache_file_s_record_is_kept_across_runs_and_never_matches_a_changed_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path):
    """The second run reads no cached file again; a file written again with its size and time set back is read
    again (its change time moved: no repository can set that back), so a stale record never vouches for it."""
    monkeypatch.setenv("TIPCGEN_CACHE_DIR", str(tmp_path / "tipcgen-cache"))
    env = {"HOME": str(home)}
    first = record.Recorder(tmp_path, tmp_path / RUN_DIR, 1 << 30, env=env).weights_cached()[0]
    assert [w.path for w in first] == ["~/" + BERT] and first[0].params
    assert len(list((tmp_path / "tipcgen-cache/weights").iterdir())) == 1
    reads: list[Path] = []
    real = record._sha256
    monkeypatch.setattr(record, "_sha256", lambda path: reads.append(path) or real(path))
    again = record.Recorder(tmp_path, tmp_path / RUN_DIR, 1 << 30, env=env).weights_cached()[0]
    assert reads == [] and again == first  # from tipcgen's cache: the file was not read
    cached = home / BERT
    stamp = cached.stat()
    _save(cached, _state(8))  # another model of the same size, its time set back
    os.utime(cached, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert cached.stat().st_size == stamp.st_size and cached.stat().st_mtime_ns == stamp.st_mtime_ns
    now = record.Recorder(tmp_path, tmp_path / RUN_DIR, 1 << 30, env=env).weights_cached()[0]
    assert reads == [cached] and now[0].sha256 != first[0].sha256


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(cache=st.sampled_from(record.weight_cache.HOME_CACHES), folders=st.lists(_NAME, max_size=3), name=_NAME,
       suffix=st.sampled_from([".pdparams", ".pth", ".pt", ".pd"]), how=st.sampled_from(["copy", "hardlink", "resave"]),
       honest=st.booleans())
def test_generated_cached_weights_put_into_the_checkpoint_always_fail(cache, folders, name, suffix, how, honest):
    """Any file in any of the caches (any folder, name, suffix), copied, hard-linked or re-saved into the
    checkpoint's place, beside an honest checkpoint of the training's own or not: the export of those weights
    fails, naming the cached file as ``~/...``."""
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as monkeypatch:
        root, home = Path(tmp) / "repo", Path(tmp) / "home"
        source = _save(home / cache / Path(*folders) / (name + suffix), _state(60))
        root.mkdir()
        chain = Chain(root, monkeypatch, env={"HOME": str(home)})

        def write(save: Path) -> None:
            if honest:
                _save(save / "best.pdparams", _state(61))
            _PUT[how](source, save / "latest.pdparams")
        chain.train(write)
        check, _ = chain.check(_state(60))
        assert check.status == "failed", check.note
        assert "~/" + os.path.relpath(source, home) in check.reason, check.reason


# ---------------------------------------------------------------- the model's initial values (tests/test_record_initial.py: real Paddle)

def _fresh(seed: int) -> dict[str, np.ndarray]:
    """A model as initialised: weights random, the bias 0, a LayerNorm's scale 1 and shift 0."""
    rng = np.random.default_rng(seed)
    return {"fc.weight": rng.normal(size=(4, 6)).astype("float32"), "fc.bias": np.zeros(6, "float32"),
            "ln.weight": np.ones(6, "float32"), "ln.bias": np.zeros(6, "float32"),
            "head.weight": rng.normal(size=(6, 3)).astype("float32")}


def test_a_checkpoint_holding_the_model_s_initial_values_fails_naming_it(chain: Chain):
    chain.train(lambda save: _save(save / "latest.pdparams", _fresh(1)))
    check, _ = chain.check(_fresh(1))
    assert check.status == "failed" and check.reason == (
        "the training wrote no checkpoint of its own, judged by content against the weight files there before it: "
        "out/t/latest.pdparams holds the model's initial values, not trained ones: all 3 of its bias and "
        "normalisation tensors are still exactly 0 or 1 (fc.bias among them), so no optimizer step changed them "
        "(check that the training steps its optimizer, with a learning rate above 0, before it saves: a warmup "
        "from 0 needs two steps, and an AMP loss scaler skips each step whose gradients overflow)")
    trained = dict(_fresh(1), **{"ln.weight": np.full(6, 0.999, "float32")})  # one step of decay: it moved
    chain.recorder.trainings.clear()  # another run of the training (the first checkpoint is now there before it)
    chain.train(lambda save: _save(save / "latest.pdparams", trained))
    check, _ = chain.check(trained)
    assert check.status == "passed", check.reason


def test_a_checkpoint_with_no_bias_or_norm_passes_and_the_run_says_the_rule_could_not_tell(chain: Chain):
    state = {k: v for k, v in _fresh(2).items() if k.endswith("weight") and v.ndim == 2}
    chain.train(lambda save: _save(save / "latest.pdparams", state))
    check, _ = chain.check(state)
    assert check.status == "passed", check.reason
    assert chain.notes == ["not checked: export_params_gpus_-1: whether out/t/latest.pdparams hold(s) the model's "
                           "initial values rather than trained ones: no bias or normalisation tensor of its own (one "
                           "off its constant initial value shows an optimizer step), so only its difference from the "
                           "weight files there before the training was checked"]
    chain.recorder.trainings.clear()
    chain.train(lambda save: _save(save / "latest.pdparams", _state(1)))  # biases of its own, moved: no note
    check, _ = chain.check(_state(1))
    assert check.status == "passed" and chain.notes == []


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entry=st.one_of(st.binary(max_size=200), st.builds(lambda d: json.dumps(d).encode(), st.dictionaries(
    st.sampled_from(["sha256", "size", "params", "constant", "why", "x"]),
    st.one_of(st.none(), st.integers(), st.text(max_size=70), st.lists(st.text(max_size=5), max_size=3),
              st.dictionaries(st.text(max_size=5), st.text(max_size=80), max_size=2))))))
def test_a_bad_or_forged_cache_entry_is_never_taken_for_the_file(tmp_path: Path, monkeypatch, entry: bytes):
    """Whatever an entry under the file's own name holds (bytes, JSON of any shape, a digest of another
    file): the record is the file's content, read again, unless the entry is well formed (then it was
    tipcgen's: the sandbox keeps tipcgen's cache read-only for a step)."""
    cache = tmp_path / f"tipcgen-cache-{abs(hash(entry))}"
    monkeypatch.setenv("TIPCGEN_CACHE_DIR", str(cache))
    home = tmp_path / "home"
    model = home / BERT
    if not model.exists():
        _save(model, _state(7))
    info = model.stat()
    (cache / "weights").mkdir(parents=True, exist_ok=True)
    (cache / "weights" / record.weight_cache.entry_name(info)).write_bytes(entry)
    repo = tmp_path / "repo"
    forged = record.weight_cache.read(info)  # what the entry says, if tipcgen would take it
    (weights,), _ = record.Recorder(repo, repo / RUN_DIR, 1 << 30, env={"HOME": str(home)}).weights_cached()
    if forged is None:  # not taken: the file was read again, and its record is what it holds
        truth = record.Recorder(repo, repo / RUN_DIR, 1 << 30, env={}).weights(model, 1 << 30)
        assert (weights.sha256, weights.params) == (truth.sha256, truth.params) and truth.params
        assert record.weight_cache.read(info)[:2] == (truth.sha256, truth.params)  # the entry replaced
    else:  # well formed: a 64-hex sha256, the file's own size, digests of the digest's shape
        assert weights.sha256 == forged[0] and len(forged[0]) == 64
