"""Issue #28, part A, without paddle: every flag checked against its script before the run, the
interpreter checked before prepare, eval/export/inference refused without the run's own model, tracked
files a run changes failing it. Real scripts (tiny argparse ones written here, the stub chain), real
`tipcgen` commands, a real git repository. The paddle half (the denoise project: a chain whose export
holds other weights than the trained ones) is tests/chains/test_denoise.py."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, read_summary, tipcgen
from tipcgen.configs import flag_cache, flag_check, preflight, script_help
from tipcgen.core.errors import RunError
from tipcgen.repro import export_check
from tipcgen.format import paths

CONFIG = "test_tipc/configs/stub_model/train_infer_python.txt"


def _git(repo: Path) -> None:
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _set_line(repo: Path, key: str, line: str) -> None:
    path = repo / CONFIG
    rows = path.read_text().splitlines()
    rows = [line if row.startswith(key + ":") else row for row in rows]
    path.write_text("\n".join(rows) + "\n")


# ---------------------------------------------------------------- what the runner passes, per layout

TUTORIAL = """===========================train_params===========================
model_name:m
python:python
gpu_list:-1
use-gpu:False
--epochs:lite_train_lite_infer=1|whole_train_whole_infer=2
--output-dir:./output/
--batch-size:lite_train_lite_infer=2|whole_train_whole_infer=4
--pretrained:null
train_model_name:latest.pdparams
--data-path:./lite_data
##
trainer:norm_train
norm_train:train.py
##
===========================eval_params===========================
eval:train.py --test-only
##
===========================infer_params===========================
--save-inference-dir:./output/m_infer/
--pretrained:
norm_export:export.py
##
train_model:null
infer_export:null
##
inference:infer.py
--use-gpu:False
--batch-size:1
--model-dir:./output/m_infer/
--img-path:./demo.npy
--benchmark:False
"""


def test_each_layout_family_passes_what_its_own_runner_passes():
    """The tutorial runner never passes its device line nor line 11 (--data-path) to train; a null value
    (--pretrained for train) is not passed; the filled keys are (eval's checkpoint, export's folders)."""
    passed = {(p.step, p.key, p.line) for p in flag_check.passed_flags(TUTORIAL)}
    assert ("train", "--data-path", 11) not in passed and not any(key == "use-gpu" for _, key, _ in passed)
    assert ("train", "--pretrained", 9) not in passed and ("eval", "--pretrained", 9) in passed
    assert {("export", "--save-inference-dir", 20), ("export", "--pretrained", 21), ("train", "--output-dir", 7),
            ("infer", "--img-path", 31)} <= passed


def test_argparse_takes_an_unambiguous_prefix_and_nothing_else():
    flags = [script_help.Flag(("--batch_size",), True), script_help.Flag(("--batch_norm",), False),
             script_help.Flag(("-c", "--config"), True)]
    assert flag_check.accepts(flags, "--config") and flag_check.accepts(flags, "--conf")
    assert flag_check.accepts(flags, "-c Global.x")  # a multi-word key: its first word is the flag
    assert not flag_check.accepts(flags, "--batch")  # ambiguous
    assert not flag_check.accepts(flags, "--batch-size")  # argparse does not mix - and _


def _scripts(repo: Path) -> None:
    (repo / "train.py").write_text("import argparse\np = argparse.ArgumentParser()\n"
                                   "for f in ('--epochs', '--output_dir', '--batch_size', '--test-only', '--pretrained'):\n"
                                   "    p.add_argument(f)\np.parse_args()\n")
    (repo / "export.py").write_text("import argparse\np = argparse.ArgumentParser()\np.add_argument('--weights')\n"
                                    "p.add_argument('--save-inference-dir')\np.parse_args()\n")
    (repo / "infer.py").write_text("import sys\nprint(sys.argv)\n")  # no argparse: said so, never run with --help


def test_a_key_the_script_does_not_accept_is_an_error_naming_the_line_and_the_script(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("TIPCGEN_CACHE_DIR")  # the default: the user's $XDG_CACHE_HOME/tipcgen/flags/
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    _scripts(tmp_path)
    problems = flag_check.check_config(tmp_path, TUTORIAL, {"PATH": os.environ["PATH"]}, unsandboxed=True)
    errors = [(p.line, p.message) for p in problems if p.severity == "error"]
    assert [line for line, _ in errors] == [7, 8, 21], errors  # --output-dir, --batch-size (train), --pretrained (export)
    assert "train passes --batch-size=... (line 8) to train.py (line 14)" in errors[1][1]
    assert next(p.fix for p in problems if p.line == 8).startswith("make the key of train.batch_size (in tipc.yaml; line 8 of the config) the script's flag --batch_size")
    notes = [p.message for p in problems if p.severity == "note"]
    assert notes == ["infer.py does not use argparse (no ArgumentParser in it), so its flags are not checked"]
    # Cached by content in the user's cache (the two probed scripts; a script without argparse is never run):
    # a second check runs no script (a probe would fail now). Nothing is written into the repository.
    assert len(list((tmp_path / "xdg" / "tipcgen" / "flags").glob("*.json"))) == 2
    assert not (tmp_path / paths.FLAG_CACHE).exists()

    def no_probe(*args, **kwargs):
        raise AssertionError("probed again")

    monkeypatch.setattr(flag_check, "probe", no_probe)
    assert flag_check.check_config(tmp_path, TUTORIAL, {"PATH": os.environ["PATH"]}, unsandboxed=True) == problems
    (tmp_path / "train.py").write_text((tmp_path / "train.py").read_text() + "# changed\n")
    with pytest.raises(AssertionError, match="probed again"):
        flag_check.check_config(tmp_path, TUTORIAL, {"PATH": os.environ["PATH"]}, unsandboxed=True)


def test_the_cache_goes_where_tipcgen_cache_dir_says(tmp_path: Path, monkeypatch):
    """A read-only checkout, CI or the tests keep the probes out of the repository."""
    repo, shared = tmp_path / "repo", tmp_path / "shared"
    repo.mkdir()
    _scripts(repo)
    monkeypatch.setenv("TIPCGEN_CACHE_DIR", str(shared))
    flag_check.check_config(repo, TUTORIAL, {"PATH": os.environ["PATH"]}, unsandboxed=True)
    assert len(list((shared / "flags").glob("*.json"))) == 2 and not (repo / ".tipcgen").exists()


@pytest.mark.parametrize("xdg", [None, "", "   ", "relative/cache", "ABS"])
def test_the_cache_folder_is_the_users_and_never_a_relative_one(tmp_path: Path, monkeypatch, xdg):
    """platformdirs names the user's cache folder; TIPCGEN_CACHE_DIR comes first, and a relative (or empty)
    $XDG_CACHE_HOME is ignored as the XDG spec says: such a folder would sit in the current one, maybe a repository."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TIPCGEN_CACHE_DIR", "")
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg") if xdg == "ABS" else xdg)
    expected = tmp_path / "xdg" / "tipcgen" / "flags" if xdg == "ABS" else home / ".cache" / "tipcgen" / "flags"
    if sys.platform == "linux":
        assert flag_cache.cache_dir() == expected
    assert flag_cache.cache_dir().is_absolute()
    # the older platformdirs of Python < 3.11 hands a relative $XDG_CACHE_HOME back as it is
    monkeypatch.setattr(flag_cache.platformdirs, "user_cache_dir", lambda *args, **kwargs: "relative/cache/tipcgen")
    assert flag_cache.cache_dir() == home / ".cache" / "tipcgen" / "flags"
    monkeypatch.setenv("TIPCGEN_CACHE_DIR", str(tmp_path / "shared"))
    assert flag_cache.cache_dir() == tmp_path / "shared" / "flags"


def test_lint_root_and_import_report_the_keys_too(tmp_path: Path):
    _scripts(tmp_path)
    config = tmp_path / "test_tipc/configs/m/train_infer_python.txt"
    config.parent.mkdir(parents=True)
    config.write_text(TUTORIAL)
    lint = tipcgen("lint", str(config), "--root", str(tmp_path), "--trust-repo")
    assert lint.returncode == 1
    assert [line.split(": ")[0].rsplit(":", 1)[1] + " " + line.split()[2] for line in lint.stdout.splitlines()
            if "unknown-flag" in line] == ["7 unknown-flag", "8 unknown-flag", "21 unknown-flag"]
    assert "flags-unchecked" in lint.stdout and "infer.py does not use argparse" in lint.stdout
    assert tipcgen("lint", str(config)).returncode == 0  # without --root no script is looked at
    imported = tipcgen("import", str(config), "-o", str(tmp_path / "tipc.yaml"), "--trust-repo")
    assert imported.returncode == 1 and (tmp_path / "tipc.yaml").is_file()
    assert f"error: {config}:8: train passes --batch-size=..." in imported.stderr


# ---------------------------------------------------------------- run, on the stub chain

def test_run_refuses_a_missing_interpreter_before_prepare_and_python_overrides_it(stub_repo: Path):
    _set_line(stub_repo, "python", "python:python3.7-absent")
    before = (stub_repo / CONFIG).read_text()
    proc = tipcgen("run", "--quiet", cwd=stub_repo)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "interpreter 'python3.7-absent'" in proc.stderr and "--python" in proc.stderr
    assert not (stub_repo / "test_tipc/output").exists()  # stopped before prepare.sh
    proc = tipcgen("run", "--quiet", "--python", "python", cwd=stub_repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (stub_repo / CONFIG).read_text() == before  # the config is left as it is
    results = (stub_repo / "test_tipc/output/stub_model/lite_train_lite_infer/results_python.log").read_text()
    assert "python3.7-absent" not in results


def test_eval_and_export_without_a_trained_checkpoint_are_refused_unless_the_descriptor_says_so(stub_repo: Path):
    text = (stub_repo / CONFIG).read_text().replace("--init_from_ckpt:null", "null:null")  # a null key: nothing passed
    (stub_repo / CONFIG).write_text(text)
    with pytest.raises(RunError) as caught:
        preflight.refuse(stub_repo, Path(CONFIG))
    assert "eval gets no trained checkpoint: it would evaluate whatever stub/stub_eval.py loads by default" in caught.value.message
    proc = tipcgen("run", "--quiet", cwd=stub_repo)
    assert proc.returncode == 2 and "eval gets no trained checkpoint" in proc.stderr
    assert not (stub_repo / "test_tipc/output").exists()
    assert preflight.untrained_steps(text, ("eval",)) == []  # checks.own_weights: [eval]
    desc = (stub_repo / "stub/tipc.yaml")
    desc.write_text(desc.read_text().replace("pretrained: {key: --init_from_ckpt, value: null}", "pretrained: null")
                    + "checks:\n  own_weights: [eval]\n")
    tipcgen("init", str(desc), "--output", str(stub_repo), "--force", check=True)
    assert "null:null" in (stub_repo / CONFIG).read_text()
    assert tipcgen("run", "--quiet", cwd=stub_repo).returncode == 0


def test_a_tracked_file_a_step_changes_fails_the_run_naming_it(stub_repo: Path):
    _git(stub_repo)
    clean = tipcgen("run", "--quiet", cwd=stub_repo)
    assert clean.returncode == 0, clean.stdout
    steps = {s["name"]: s for s in read_summary(stub_repo)["steps"]}
    assert steps["tracked_files"]["status"] == "passed"
    assert "PASSED (results not checked)" in clean.stdout  # a check of the run, not of its results
    # The stub appends its argv to STUB_ARGV: pointed at a committed file, a step writes into the repository.
    dirty = tipcgen("run", "--quiet", cwd=stub_repo, env={"STUB_ARGV": str(stub_repo / "stub/tipc.yaml")})
    assert dirty.returncode == 1
    step = next(s for s in read_summary(stub_repo)["steps"] if s["name"] == "tracked_files")
    assert step["status"] == "failed"
    assert step["reason"].startswith("the runner's steps changed 1 tracked file(s): stub/tipc.yaml")
    # One changed before the run and not touched by it is not the run's doing.
    again = tipcgen("run", "--quiet", cwd=stub_repo)
    assert again.returncode == 0, again.stdout


def test_a_script_whose_help_fails_is_said_so_never_guessed(tmp_path: Path):
    _scripts(tmp_path)
    (tmp_path / "export.py").write_text("import argparse\nraise SystemExit('needs a GPU to start')\n")
    notes = [p.message for p in flag_check.check_config(tmp_path, TUTORIAL, {"PATH": os.environ["PATH"]}, unsandboxed=True)
             if p.severity == "note"]
    assert any(n.startswith("export.py's flags are not checked: `") and "needs a GPU to start" in n for n in notes), notes


def test_inference_without_a_model_folder_key_is_refused_too():
    text = TUTORIAL.replace("--model-dir:./output/m_infer/", "null:null")
    (line, message, fix), = preflight.untrained_steps(text)
    assert line == 30 and message.startswith("infer gets no exported model of this run: it would infer with whatever "
                                             "infer.py loads by default")
    assert "the key of inference.model_dir in tipc.yaml (line 30 of the config)" in fix  # the field, then the line
    assert "checks.own_weights" in fix and preflight.untrained_steps(text, ("infer",)) == []


def test_own_weights_takes_only_step_names(tmp_path: Path):
    from tipcgen import descriptor
    from tipcgen.core.errors import DescriptorError

    text = (ROOT / "tests/fixtures/stub/tipc.yaml").read_text()
    (tmp_path / "tipc.yaml").write_text(text + "checks:\n  own_weights: [train]\n")
    with pytest.raises(DescriptorError, match="checks.own_weights"):
        descriptor.load(tmp_path / "tipc.yaml")
    (tmp_path / "tipc.yaml").write_text(text + "checks:\n  own_weights: [eval, export]\n")
    assert descriptor.load(tmp_path / "tipc.yaml").checks.own_weights == ("eval", "export")


def test_the_parameter_check_finds_trained_values_by_shape_and_names_the_first_that_differs():
    rng = np.random.default_rng(0)
    trained = {"fc.weight": rng.normal(size=(4, 3)).astype("float32"), "fc.bias": np.zeros(3, "float32") + 0.5,
               "bn._mean": rng.normal(size=7).astype("float32"), "step": np.array([3], "int64")}
    export = {"linear_0.w_0": trained["fc.weight"].copy(), "linear_0.b_0": trained["fc.bias"].copy(),
              "extra_0": np.ones(2, "float32")}  # bn folded away, one parameter export adds
    passed, found = export_check.compare(trained, export)
    assert passed and found == ("2 of 3 trained parameters found in the export with their trained values; 1 have "
                                "no exported parameter of their shape (folded or left out by export)")
    export["linear_0.w_0"] = export["linear_0.w_0"] + 0.25  # the export holds other weights of that shape
    passed, found = export_check.compare(trained, export)
    assert not passed and found.startswith("trained parameter fc.weight [4, 3] is not in the export: its 1 "
                                           "parameter(s) of that shape hold other values (nearest, linear_0.w_0, "
                                           "differs by up to 0.25)")
    assert export_check.compare(trained, {"x": np.ones(9, "float32")})[1].startswith("none of the 3 trained parameters")


def test_inference_that_read_another_model_than_the_runs_export_fails_the_check(tmp_path: Path):
    from tipcgen.results.summary import Step

    (tmp_path / "out/t").mkdir(parents=True)
    (tmp_path / "out/t/inference.pdiparams").write_bytes(b"")
    (tmp_path / "shipped").mkdir()
    steps = [Step.flat("train", "t", "passed", training="gpus_-1", model_dir="out/t"),
             Step.flat("export", "t_export", "passed", training="gpus_-1", model_dir="out/t"),
             Step.flat("infer", "python_infer_cpu", "passed", training="gpus_-1", model_dir="shipped")]
    (check,), notes = export_check.check_exports(tmp_path, steps, TUTORIAL, None, {})
    assert check.name == "export_params_gpus_-1" and check.status == "failed" and notes == []
    assert check.reason == ("the training wrote no checkpoint (.pdparams, .pth, .pd, .pt) under out/t: the exported "
                            "parameters cannot be compared with a checkpoint of this run; inference python_infer_cpu read shipped, not this run's "
                            "export out/t")
    assert steps[0].status == "failed" and steps[0].reason.startswith("it wrote no checkpoint out/t/latest.pdparams (train_model_name")
    steps[0].status, steps[2].case.model_dir = "passed", "out/t"
    (check,), _ = export_check.check_exports(tmp_path, steps, TUTORIAL, None, {})
    assert check.status == "failed" and check.reason.startswith("the training wrote no checkpoint (.pdparams, .pth, .pd, .pt) under out/t")  # never a skip
