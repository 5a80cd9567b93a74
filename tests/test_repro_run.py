"""The reproduction target (descriptor `target:`) and the provenance every summary.json carries."""
from __future__ import annotations

import subprocess
from pathlib import Path
from xml.etree import ElementTree

import pytest

from conftest import HAS_PADDLE, ROOT, make_stub_repo, read_summary, tipcgen
from tipcgen.core.errors import DescriptorError
from tipcgen.descriptor.target import Target
from tipcgen.results.target_check import check

WHOLE = "whole_train_whole_infer"


def _stub_with_target(tmp_path: Path, target: str) -> Path:
    make_stub_repo(tmp_path, init=False)
    descriptor = tmp_path / "stub" / "tipc.yaml"
    descriptor.write_text(descriptor.read_text() + target)
    tipcgen("init", str(descriptor), "--output", str(tmp_path), check=True)
    return tmp_path


@pytest.mark.parametrize("paper, code, verdict", [(0.80, 0, "reproduced"), (0.90, 1, "MISSED")])
def test_a_whole_run_reports_the_target_met_or_missed_with_the_figures(tmp_path, paper, code, verdict):
    repo = _stub_with_target(tmp_path, f"target: {{metrics: {{accuracy: {paper}}}, tolerance: 0.02, relative: true}}\n")
    proc = tipcgen("run", "--mode", WHOLE, cwd=repo, env={"STUB_ACCURACY": "0.8125"})
    assert proc.returncode == code, proc.stdout[-3000:] + proc.stderr
    bound = paper * 0.98
    assert f"accuracy: 0.8125 vs paper {paper:.4f} (tolerance 2%, >= {bound:.4f}): {verdict}" in proc.stdout
    target = read_summary(repo, mode=WHOLE)["target"]
    assert target["reproduced"] is (code == 0) and read_summary(repo, mode=WHOLE)["ok"] is (code == 0)
    (metric,) = target["metrics"]
    assert metric["measured"] == 0.8125 and metric["paper"] == paper and metric["bound"] == pytest.approx(bound)
    assert metric["step"].endswith("_eval")
    suite = ElementTree.parse(repo / "test_tipc/output/stub_model" / WHOLE / "junit.xml").getroot().find("testsuite")
    (case,) = [c for c in suite.iter("testcase") if c.get("name") == "target accuracy"]
    assert (case.find("failure") is None) is (code == 0)  # a CI reading only JUnit sees a missed target
    assert int(suite.get("failures")) == (0 if code == 0 else 1)
    tipcgen("report", "--format", "md", cwd=repo, check=True)
    assert f"- accuracy: 0.8125 vs paper {paper:.4f}" in (repo / "test_tipc/output/stub_model" / WHOLE / "report.md").read_text()


def test_the_target_is_checked_only_on_whole_train_whole_infer_basic_chain():
    from tipcgen import descriptor
    from tipcgen.results.target_check import against_target

    desc = descriptor.load("bert-sst2")
    evals = [("eval", {"accuracy": 0.5})]
    assert against_target(desc, "lite_train_lite_infer", "basic", evals) == {}
    assert against_target(desc, WHOLE, "paddle2onnx", evals) == {}
    assert against_target(desc, WHOLE, "basic", evals)["reproduced"] is False


def test_check_is_relative_or_absolute_and_knows_lower_is_better():
    evals = [("eval_gpus_0", {"accuracy": 0.70}), ("eval_gpus_-1", {"accuracy": 0.79, "loss": 0.52})]
    result = check(Target({"accuracy": 0.80, "loss": 0.50}, 0.02, relative=False, lower_is_better=("loss",)), evals)
    rows = {m.metric: m for m in result.metrics}
    assert rows["accuracy"].measured == 0.79 and rows["accuracy"].step == "eval_gpus_-1" and rows["accuracy"].reproduced
    assert rows["loss"].bound == pytest.approx(0.52) and rows["loss"].reproduced and result.reproduced
    strict = check(Target({"accuracy": 0.80, "f1": 0.7}, 0.01, relative=True), evals)
    assert not strict.reproduced and [m.reproduced for m in strict.metrics] == [False, False]
    assert strict.metrics[1].measured is None  # not printed by any eval step: missed, not skipped
    assert check(Target({"accuracy": 0.5}), []).note and not check(Target({"accuracy": 0.5}), []).reproduced


@pytest.mark.parametrize("value, field", [
    ({"metrics": {}}, "target.metrics"), ({"metrics": {"acc": "high"}}, "target.metrics.acc"),
    ({"metrics": {"acc": 0.8}, "tolerance": -1}, "target.tolerance"),
    ({"metrics": {"acc": 0.8}, "relative": "yes"}, "target.relative"),
    ({"metrics": {"acc": 0.8}, "paper": "x"}, "target.paper"),
    ({"metrics": {"acc": 0.8}, "lower_is_better": ["loss"]}, "target.lower_is_better")])
def test_a_bad_target_names_its_field(value, field):
    """Through the loader: the section's types and fields are the model's (descriptor/structure.py), the rest parse's."""
    import yaml

    from tipcgen import descriptor
    doc = {**yaml.safe_load((ROOT / "sample_models" / "bert-sst2" / "tipc.yaml").read_text()), "target": value}
    with pytest.raises(DescriptorError, match=field.replace(".", r"\.")):
        descriptor.load_text(yaml.safe_dump(doc, sort_keys=False), source="tipc.yaml", base_dir=ROOT)


def test_bert_sst2_carries_a_target():
    from tipcgen import descriptor

    target = descriptor.load("bert-sst2").target
    assert target is not None and "accuracy" in target.metrics


def test_every_summary_carries_provenance(stub_repo):
    subprocess.run(["git", "init", "-q"], cwd=stub_repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=stub_repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"], cwd=stub_repo, check=True)
    (stub_repo / "stub" / "stub_eval.py").write_text((stub_repo / "stub" / "stub_eval.py").read_text() + "\n")
    mode = "lite_train_lite_infer"
    proc = tipcgen("run", "--mode", mode, cwd=stub_repo)
    assert proc.returncode == 0, proc.stdout[-2000:]
    p = read_summary(stub_repo, mode=mode)["provenance"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=stub_repo, capture_output=True, text=True).stdout.strip()
    assert p["git"]["commit"] == head and p["git"]["dirty"] is True and p["git"]["changed_files"] == 1
    assert len(p["descriptor"]["sha256"]) == 64 and p["descriptor"]["changed_since_render"] is False
    from importlib.metadata import version

    assert p["versions"]["python"] and "paddlenlp" in p["versions"]
    if HAS_PADDLE:
        assert p["versions"]["paddle"] == version("paddlepaddle") and "paddle_cuda_version" in p["versions"]
    else:  # the stub chain runs where paddle is missing: recorded as missing, never guessed
        assert p["versions"]["paddle"] is None and "paddle_cuda_version" not in p["versions"]
    assert "gpus" in p["device"] and p["data_hashing"]["larger_files"] == "size+mtime"
    assert isinstance(p["data"], list) and isinstance(p["seeds"], dict) and len(p["config_sha256"]) == 64
    tipcgen("report", "--format", "md", cwd=stub_repo, check=True)
    text = (stub_repo / "test_tipc/output/stub_model" / mode / "report.md").read_text()
    assert "## Provenance" in text and f"| git commit | {head[:12]} (dirty) |" in text


def test_provenance_without_git_says_so(tmp_path):
    from tipcgen.run.provenance import file_checksum, git_info

    info = git_info(tmp_path)
    assert info["commit"] is None and "not in a git repository" in info["note"]
    small, big = tmp_path / "small.tsv", tmp_path / "big.tsv"
    small.write_text("a\t1\n")
    big.write_bytes(b"x" * 100)
    assert file_checksum(small, [1000])["method"] == "sha256"
    assert file_checksum(big, [10])["method"] == "size+mtime"  # over the hashing budget: size and mtime, said so
