"""`tipcgen align`: each guard that reprod_log lacks, shown failing on real files; the log format; the report.

Files are written the way the two frameworks' scripts write them (np.save of a dict, as
ReprodLogger.save does; np.savez for the pickle-free form). The worked bert-sst2 example (torch +
transformers + paddle) is the last test, marked `align` and skipped when that stack is absent.
"""
from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import ROOT
from tipcgen.repro import align
from tipcgen.repro import align_report
from tipcgen.cli.align import align_app
from tipcgen.core.errors import TipcgenError

EXAMPLE = ROOT / "sample_models" / "bert-sst2" / "align"
RNG = np.random.RandomState(0)
LOGITS = RNG.randn(4, 2).astype("float32")
FIXED_TIME = time.mktime((2021, 11, 17, 20, 15, 50, 0, 0, -1))


def save(path: Path, data: dict) -> Path:
    """Write a checkpoint file exactly as ReprodLogger.save does."""
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, data)
    return path


def compare(*args: str):
    """Run `tipcgen align compare ARGS`; returns (exit code, output, exception)."""
    result = CliRunner().invoke(align_app, ["compare", *args])
    return result.exit_code, result.output, result.exception


def pair(tmp_path: Path, ref: dict, pd: dict) -> tuple[str, str]:
    return str(save(tmp_path / "x_torch.npy", ref)), str(save(tmp_path / "x_paddle.npy", pd))


# ---------------------------------------------------------------- the guards, each failing on real files

def test_close_outputs_pass_and_exit_0(tmp_path):
    ref, pd = pair(tmp_path, {"logits": LOGITS}, {"logits": LOGITS + np.float32(1e-7)})
    code, out, _ = compare(ref, pd, "--log", str(tmp_path / "forward_diff.log"))
    assert code == 0, out
    assert out.splitlines()[-1].endswith("root INFO: diff check passed")
    assert (tmp_path / "forward_diff.log").read_text().splitlines()[-1].endswith("diff check passed")


def test_a_difference_over_the_threshold_fails_and_exits_1(tmp_path):
    ref, pd = pair(tmp_path, {"logits": LOGITS}, {"logits": LOGITS + np.float32(1e-3)})
    code, out, _ = compare(ref, pd)
    assert code == 1
    assert "mean diff: check passed: False" in out and "logits: mean diff 0.001 > threshold 1e-06" in out
    assert compare(ref, pd, "--threshold", "1e-2")[0] == 0


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_or_inf_fails_even_where_reprod_log_passes(tmp_path, bad):
    broken = LOGITS.copy()
    broken[0, 0] = bad
    ref, pd = pair(tmp_path, {"logits": LOGITS}, {"logits": broken})
    code, out, _ = compare(ref, pd, "--threshold", "1e9")
    assert code == 1
    assert f"x_paddle.npy has 1 {'NaN' if np.isnan(bad) else 'Inf'}" in out
    # both sides NaN at the same place is still not an aligned output
    ref2, _ = pair(tmp_path, {"logits": broken}, {"logits": broken})
    assert compare(ref2, pd, "--allow-identical")[0] == 1


def test_shapes_must_match_exactly_no_broadcasting(tmp_path):
    ref, pd = pair(tmp_path, {"loss": np.zeros((4, 1), "float32")}, {"loss": np.zeros((4,), "float32")})
    code, out, _ = compare(ref, pd)
    assert code == 1
    assert "shapes differ: " in out and "(4, 1)" in out and "(4,)" in out


def test_no_silent_transpose(tmp_path):
    ref, pd = pair(tmp_path, {"w": LOGITS}, {"w": np.ascontiguousarray(LOGITS.T)})
    code, out, _ = compare(ref, pd)
    assert code == 1
    assert "shapes differ" in out and "the transpose of each other" in out


def test_dtypes_must_match_exactly(tmp_path):
    ref, pd = pair(tmp_path, {"logits": LOGITS}, {"logits": LOGITS.astype("float64")})
    code, out, _ = compare(ref, pd)
    assert code == 1
    assert "dtypes differ: " in out and "float32" in out and "float64" in out


def test_missing_keys_are_named_on_both_sides(tmp_path):
    ref, pd = pair(tmp_path, {"loss_0": np.array([1.0]), "loss_1": np.array([2.0])},
                   {"loss_0": np.array([1.0]), "lr_0": np.array([0.1])})
    code, out, _ = compare(ref, pd)
    assert code == 1
    assert re.search(r"key\(s\) only in \S*x_torch.npy: loss_1", out)
    assert re.search(r"key\(s\) only in \S*x_paddle.npy: lr_0", out)


def test_identical_files_are_flagged(tmp_path):
    """BERT-SST2-Prod's backward step compared the torch losses with themselves: all diffs 0, 'passed'."""
    ref = save(tmp_path / "bp_align_torch.npy", {f"loss_{i}": np.array([0.69 - i * 1e-3]) for i in range(10)})
    copy = tmp_path / "bp_align_paddle.npy"
    shutil.copyfile(ref, copy)
    code, out, _ = compare(str(ref), str(copy))
    assert code == 1 and "byte-identical" in out
    code, out, _ = compare(str(ref), str(ref))
    assert code == 1 and "the same file" in out
    code, out, _ = compare(str(ref), str(copy), "--allow-identical")
    assert code == 0 and "WARNING: the two files are byte-identical" in out


def test_all_zero_diffs_from_different_files_warn(tmp_path):
    ref = save(tmp_path / "a_torch.npy", {"a": np.array([1.0]), "b": np.array([2.0])})
    pd = save(tmp_path / "a_paddle.npy", {"b": np.array([2.0]), "a": np.array([1.0])})  # other key order
    code, out, _ = compare(str(ref), str(pd))
    assert code == 0 and "WARNING: every difference is exactly 0" in out


def test_unreadable_and_unsafe_files_are_user_errors(tmp_path):
    plain = tmp_path / "plain.npy"
    np.save(plain, LOGITS)
    _, _, exc = compare(str(plain), str(plain))
    assert isinstance(exc, TipcgenError) and "not a dict" in str(exc)
    _, _, exc = compare(str(tmp_path / "nope.npy"), str(plain))
    assert isinstance(exc, TipcgenError) and "no such file" in str(exc)
    evil = tmp_path / "evil.npy"
    np.save(evil, np.array({"x": _Exploit(tmp_path / "exploited")}, dtype=object), allow_pickle=True)
    _, _, exc = compare(str(evil), str(plain))
    assert isinstance(exc, TipcgenError) and "refusing to load" in str(exc)
    assert not (tmp_path / "exploited").exists()


class _Exploit:
    """Unpickling this runs a command: a checkpoint file must never be able to do that."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch '{self.marker}'",))


def test_align_imports_neither_paddle_nor_torch():
    code = ("import sys, tipcgen.repro.align, tipcgen.repro.align_report, tipcgen.cli.align; "
            "print([m for m in ('paddle', 'torch', 'reprod_log', 'transformers') if m in sys.modules])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.stdout.strip() == "[]", proc.stderr


# ---------------------------------------------------------------- formats

def test_log_text_is_reprod_logs_format():
    """Byte for byte what ReprodDiffHelper.report writes (BERT-SST2-Prod's forward_diff.log layout)."""
    result = align.compare_info({"logits": np.array([1.0, 2.0]), "loss": np.array(0.5, "float32")},
                                {"logits": np.array([1.0, 2.5]), "loss": np.array(0.5, "float32")},
                                threshold=1.0)
    assert align.log_lines(result, FIXED_TIME) == [
        "[2021/11/17 20:15:50] root INFO: logits: ",
        "[2021/11/17 20:15:50] root INFO: \tmean diff: check passed: True, value: 0.25",
        "[2021/11/17 20:15:50] root INFO: loss: ",
        "[2021/11/17 20:15:50] root INFO: \tmean diff: check passed: True, value: 0.0",
        "[2021/11/17 20:15:50] root INFO: diff check passed",
    ]


def test_method_all_prints_min_max_mean_each_with_its_own_verdict():
    result = align.compare_info({"a": np.array([0.0, 0.0])}, {"a": np.array([0.0, 1.0])}, "all", 0.6)
    lines = [line.split("INFO: ")[1] for line in align.log_lines(result)]
    assert lines == ["a: ", "\tmin diff: check passed: True, value: 0.0",
                     "\tmax diff: check passed: False, value: 1.0",
                     "\tmean diff: check passed: True, value: 0.5",  # reprod_log would print False here
                     "diff check failed"]


def test_nested_dicts_are_indented_like_reprod_log():
    info = {"step_0": {"loss": np.array([1.0]), "lr": np.array([0.1])}}
    lines = [line.split("INFO: ")[1] for line in align.log_lines(align.compare_info(info, info))[:3]]
    assert lines == ["step_0", "\tloss: ", "\t\tmean diff: check passed: True, value: 0.0"]


def test_npz_round_trip_and_npy_against_npz(tmp_path):
    data = {"logits": LOGITS, "grads": {"w": np.ones((2, 2), "float32")}}
    npy = align.save_info(tmp_path / "a_torch.npy", data)
    npz = align.save_info(tmp_path / "a_paddle.npz", data)
    loaded = align.load_info(npz)
    assert set(loaded) == {"logits", "grads"} and loaded["grads"]["w"].shape == (2, 2)
    assert np.load(npy, allow_pickle=True).tolist()["logits"].dtype == np.float32  # what reprod_log reads
    assert compare(str(npy), str(npz))[0] == 0


def test_reads_files_written_under_numpy_1(tmp_path):
    """numpy 1.x pickles name numpy.core, not numpy._core (the 2021 BERT-SST2-Prod files)."""
    holder = np.empty((), dtype=object)
    holder[()] = {"logits": LOGITS}
    raw = pickle.dumps(holder, protocol=3).replace(b"numpy._core.multiarray\n", b"numpy.core.multiarray\n")
    assert b"numpy.core.multiarray" in raw
    path = tmp_path / "forward_torch.npy"
    with path.open("wb") as handle:
        np.lib.format.write_array_header_1_0(handle, {"descr": "|O", "fortran_order": False, "shape": ()})
        handle.write(raw)
    assert np.array_equal(align.load_info(path)["logits"], LOGITS)


def test_read_log_takes_the_verdict_and_worst_value(tmp_path):
    log = tmp_path / "forward_diff.log"
    log.write_text("[2021/11/17 20:15:50] root INFO: logits: \n"
                   "[2021/11/17 20:15:50] root INFO: \tmean diff: check passed: True, value: 1.30385160446167e-07\n"
                   "[2021/11/17 20:15:50] root INFO: diff check passed\n")
    verdict = align.read_log(log)
    assert verdict.passed is True and verdict.worst == pytest.approx(1.30385160446167e-07)


@pytest.mark.paddle
def test_log_matches_reprod_log_itself(tmp_path):
    """Where reprod_log is installed (it imports paddle), its own report is the reference text."""
    pytest.importorskip("paddle")
    reprod_log = pytest.importorskip("reprod_log")
    import logging

    ref, pd = pair(tmp_path, {"logits": LOGITS, "acc": np.array([0.5]), "n": {"b": np.array([2, 3])}},
                   {"logits": LOGITS + np.float32(3e-4), "acc": np.array([0.5]), "n": {"b": np.array([2, 4])}})
    for method in ("mean", "max", "min"):
        helper = reprod_log.ReprodDiffHelper()
        helper.compare_info(helper.load_info(ref), helper.load_info(pd))
        theirs = tmp_path / f"reprod_{method}.log"
        helper.report(diff_method=method, diff_threshold=1e-3, path=str(theirs))
        logging.getLogger("root").handlers.clear()  # reprod_log adds handlers on every report
        ours = align.write_log(align.compare_files(ref, pd, method, 1e-3), tmp_path / f"ours_{method}.log")
        strip = lambda p: [re.sub(r"^\[[^]]*\] ", "", line) for line in p.read_text().splitlines()]  # noqa: E731
        assert strip(ours) == strip(theirs), method


# ---------------------------------------------------------------- the report

def write_reproduction(folder: Path, log_name: str = "_diff.log", **overrides) -> None:
    """Five checkpoints as a user's Step1..Step5 folders hold them, each with its diff log."""
    files = {
        "Step1/forward": ({"logits": LOGITS}, {"logits": LOGITS + np.float32(2e-7)}),
        "Step2/metric": ({"accuracy": np.array([0.75])}, {"accuracy": np.array([0.75])}),
        "Step3/loss": ({"loss": np.array(0.69, "float32")}, {"loss": np.array(0.6900001, "float32")}),
        "Step4/bp_align": ({f"loss_{i}": np.array([0.69 + i * 1e-3], "float32") for i in range(3)},
                           {f"loss_{i}": np.array([0.69 + i * 1e-3 + 1e-7], "float32") for i in range(3)}),
        "Step5/train_align": ({"acc": np.array([0.9125])}, {"acc": np.array([0.9110])}),
    }
    files.update(overrides)
    for stem, (ref, pd) in files.items():
        save(folder / f"{stem}_torch.npy", ref)
        save(folder / f"{stem}_paddle.npy", pd)
        result = align.compare_files(folder / f"{stem}_torch.npy", folder / f"{stem}_paddle.npy",
                                     allow_identical=True)
        align.write_log(result, folder / f"{stem}{log_name}")


def write_tipc_summary(root: Path, ok: bool = True) -> None:
    path = root / "test_tipc/output/bert_sst2/lite_train_lite_infer/summary.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"ok": ok, "passed": 8, "failed": 0 if ok else 1, "skipped": 2,
                                "model": "bert_sst2", "mode": "lite_train_lite_infer"}))


def report(*args: str):
    result = CliRunner().invoke(align_app, ["report", *args])
    return result.exit_code, result.output, result.exception


@pytest.mark.parametrize("log_name", ["_diff.log", "_diff_log.txt"])
def test_report_shows_six_rows_all_passing(tmp_path, log_name):
    write_reproduction(tmp_path / "repro", log_name)
    write_tipc_summary(tmp_path)
    code, out, exc = report(str(tmp_path / "repro"), "--root", str(tmp_path))
    assert code == 0, (out, exc)
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:7]}
    assert rows == dict.fromkeys(["forward", "metric", "loss", "backward", "train", "tipc"], "PASS")
    assert f"Step1/forward{log_name}" in out and "8 passed, 0 failed, 2 skipped" in out
    assert out.splitlines()[-1] == "6 checkpoints: 6 pass, 0 fail, 0 missing"


def test_report_json_marks_missing_and_failing_rows(tmp_path):
    repro = tmp_path / "repro"
    write_reproduction(repro, **{"Step5/train_align": ({"acc": np.array([0.9125])}, {"acc": np.array([0.9000])})})
    for name in ("loss_torch.npy", "loss_paddle.npy", "loss_diff.log"):
        (repro / "Step3" / name).unlink()
    code, out, _ = report(str(repro), "--root", str(tmp_path), "--format", "json", "--json", str(tmp_path / "r.json"))
    assert code == 1
    data = json.loads(out)
    assert json.loads((tmp_path / "r.json").read_text()) == data
    status = {row["checkpoint"]: row["status"] for row in data["rows"]}
    assert status == {"forward": "pass", "metric": "pass", "loss": "missing", "backward": "pass",
                      "train": "fail", "tipc": "missing"}
    train = next(row for row in data["rows"] if row["checkpoint"] == "train")
    assert train["worst"] == pytest.approx(0.0125) and train["threshold"] == 0.0015
    assert data["missing"] == 2 and data["fail"] == 1


def test_report_thresholds_from_options_and_descriptor(tmp_path):
    repro = tmp_path / "repro"
    write_reproduction(repro, **{"Step1/forward": ({"logits": LOGITS}, {"logits": LOGITS + np.float32(5e-6)})})
    write_tipc_summary(tmp_path)
    assert report(str(repro), "--root", str(tmp_path))[0] == 1
    code, out, _ = report(str(repro), "--root", str(tmp_path), "--threshold", "forward=1e-5")
    assert code == 0 and "1e-05" in out
    descriptor = tmp_path / "tipc.yaml"
    descriptor.write_text("model_name: bert_sst2\nalign:\n  thresholds: {forward: 1.0e-5, train: 0.002}\n")
    assert report(str(repro), "--root", str(tmp_path), "--descriptor", str(descriptor))[0] == 0
    # the command line beats the descriptor
    assert report(str(repro), "--root", str(tmp_path), "--descriptor", str(descriptor), "-t", "forward=1e-6")[0] == 1
    descriptor.write_text("model_name: bert_sst2\n")  # no align section: the guide's defaults
    assert report(str(repro), "--root", str(tmp_path), "--descriptor", str(descriptor))[0] == 1


@pytest.mark.parametrize("option", ["forwrd=1e-5", "forward", "forward=abc", "forward=-1"])
def test_report_rejects_bad_threshold_options(tmp_path, option):
    write_reproduction(tmp_path)
    _, _, exc = report(str(tmp_path), "-t", option)
    assert isinstance(exc, TipcgenError)


def test_report_recheck_catches_a_log_that_lies(tmp_path):
    """A diff log saying 'passed' next to files that do not align (the log was made from other files)."""
    repro = tmp_path / "repro"
    write_reproduction(repro)
    save(repro / "Step1/forward_paddle.npy", {"logits": LOGITS + np.float32(1e-2)})
    code, out, _ = report(str(repro), "--root", str(tmp_path))
    assert code == 1
    assert re.search(r"^forward\s+FAIL", out, re.M)
    assert "forward_diff.log says passed, the re-check fails" in out


def test_report_log_only_and_flagged_identical(tmp_path):
    repro = tmp_path / "repro"
    write_reproduction(repro)
    (repro / "Step3/loss_torch.npy").unlink()
    (repro / "Step3/loss_paddle.npy").unlink()
    shutil.copyfile(repro / "Step4/bp_align_torch.npy", repro / "Step4/bp_align_paddle.npy")
    write_tipc_summary(tmp_path, ok=False)
    code, out, _ = report(str(repro), "--root", str(tmp_path), "--format", "json")
    rows = {row["checkpoint"]: row for row in json.loads(out)["rows"]}
    assert code == 1
    assert rows["loss"]["status"] == "pass" and "from the log only" in rows["loss"]["detail"]
    assert rows["backward"]["status"] == "fail" and any("byte-identical" in n for n in rows["backward"]["notes"])
    assert rows["metric"]["status"] == "pass"  # equal accuracies may be bit-identical: a warning only
    assert rows["tipc"]["status"] == "fail"


def test_report_of_a_missing_folder_is_a_user_error(tmp_path):
    _, _, exc = report(str(tmp_path / "nowhere"))
    assert isinstance(exc, TipcgenError)


# ---------------------------------------------------------------- the worked example, end to end

@pytest.mark.paddle
@pytest.mark.align
def test_bert_sst2_example_aligns_forward_metric_loss_backward_and_train(tmp_path):
    """run_all.py on CPU: both sides, conversion, five diff logs; then the report (~30 s on 2 cores)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    out = tmp_path / "align"
    env = dict(os.environ, GLOG_minloglevel="2", PYTHONWARNINGS="ignore", HF_HUB_OFFLINE="1")
    proc = subprocess.run([sys.executable, str(EXAMPLE / "run_all.py"), "--out", str(out), "--root", str(tmp_path)],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    for stem in ("forward", "metric", "loss", "bp_align", "train_align"):
        assert (out / f"{stem}_diff.log").read_text().splitlines()[-1].endswith("root INFO: diff check passed")
    result = align.compare_files(out / "bp_align_torch.npy", out / "bp_align_paddle.npy")
    assert len(result.keys) == 20 and result.passed  # loss_i and lr_i of 10 AdamW steps
    code, text, _ = report(str(out), "--root", str(tmp_path), "--format", "json")
    rows = {row["checkpoint"]: row["status"] for row in json.loads(text)["rows"]}
    assert code == 1  # no TIPC run in tmp_path
    assert rows == {"forward": "pass", "metric": "pass", "loss": "pass", "backward": "pass", "train": "pass",
                    "tipc": "missing"}
    assert align_report.ROW_NAMES == tuple(rows)
