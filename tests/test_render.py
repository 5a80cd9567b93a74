"""Rendering: the committed test_tipc/ is what init renders; the config layout; safe, atomic writes."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tipcgen.format import config, paths
from tipcgen import descriptor
from tipcgen.format import layout
from tipcgen.render import repository
from tipcgen.core import writes
from tipcgen.core.errors import RenderConflictError, TipcgenError

from conftest import ROOT, fail_nth_replace, tipcgen


def test_committed_test_tipc_is_what_init_renders(tmp_path: Path):
    tipcgen("init", "bert-sst2", "--output", str(tmp_path), check=True)
    rendered = {p.relative_to(tmp_path / "test_tipc"): p.read_bytes()
                for p in (tmp_path / "test_tipc").rglob("*") if p.is_file()}
    committed = {p.relative_to(ROOT / "test_tipc"): p.read_bytes()
                 for p in (ROOT / "test_tipc").rglob("*") if p.is_file() and "output" not in p.parts}
    assert sorted(map(str, rendered)) == sorted(map(str, committed))
    for rel, data in rendered.items():
        assert committed[rel] == data, f"test_tipc/{rel} differs: regenerate it with `tipcgen init bert-sst2 --force`"


def test_config_has_the_canonical_51_line_layout():
    text = repository.render_config(descriptor.load("bert-sst2"))
    cfg = config.TipcConfig.parse(text)
    lines = cfg.logical_lines()
    assert cfg.kind == "train_infer_python"
    # after idx 50, found by name: the result checks, then benchmark_train's section (upstream's name)
    assert [section.name for section in cfg.sections()][-2:] == ["result_check_params", "train_benchmark_params"]
    assert [i for i, line in enumerate(lines[:51]) if line.kind == "header"] == [0, 22, 26]
    assert [i for i, line in enumerate(lines[:51]) if line.text == "##"] == [13, 21, 25]
    for slot in layout.TRAIN_INFER_PYTHON:
        if slot.anchors:
            assert lines[slot.index].key in slot.anchors or lines[slot.index].header_name in slot.anchors
    assert cfg.model_name == "bert_sst2" and cfg.python == "python"
    assert config.parse_per_mode(cfg.slot("epoch").value)["whole_train_whole_infer"] == "1"
    assert lines[50].text == "null:null" and text.endswith("\n") and " \n" not in text


def test_render_passes_lint_with_the_repository(tmp_path: Path):
    from tipcgen.configs import lint

    findings = lint.lint_text(repository.render_config(descriptor.load("bert-sst2")), "c.txt", repo_root=str(ROOT))
    assert findings == []


def test_devices_cpu_renders_a_cpu_only_config(tmp_path: Path):
    tipcgen("init", "bert-sst2", "--devices", "cpu", "--output", str(tmp_path), check=True)
    cfg = config.TipcConfig.read(tmp_path / paths.config_rel("bert_sst2"))
    assert cfg.slot("gpu_list").value == "-1"
    assert cfg.slot("train_use_gpu").value == "cpu"
    assert cfg.slot("infer_use_gpu").value == "False"


def test_init_never_overwrites_a_changed_file_without_force(tmp_path: Path):
    tipcgen("init", "bert-sst2", "--output", str(tmp_path), check=True)
    edited = tmp_path / "test_tipc" / "README.md"
    edited.write_text("my notes\n")
    readme_before = edited.read_text()
    proc = tipcgen("init", "bert-sst2", "--output", str(tmp_path))
    assert proc.returncode == 2 and "test_tipc/README.md" in proc.stderr and "--force" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert edited.read_text() == readme_before
    proc = tipcgen("init", "bert-sst2", "--output", str(tmp_path), "--force", check=True)
    assert "overwritten" in proc.stdout
    backups = list((tmp_path / ".tipcgen" / "backup").rglob("README.md"))
    assert backups and backups[0].read_text() == "my notes\n"
    assert edited.read_text() != "my notes\n"


def test_init_writes_all_files_or_none(tmp_path: Path):
    blocker = tmp_path / "test_tipc" / "prepare.sh"
    blocker.mkdir(parents=True)  # a folder where a file must go
    desc = descriptor.load("bert-sst2")
    with pytest.raises(TipcgenError):
        repository.init(desc, tmp_path)
    leftovers = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert leftovers == [], leftovers


def test_a_failed_commit_rolls_back(tmp_path: Path, monkeypatch):
    files = {"a.txt": "a", "b.txt": "b", "c.txt": "c"}
    (tmp_path / "a.txt").write_text("old a")
    fail_nth_replace(monkeypatch, writes, 3)
    with pytest.raises(TipcgenError, match="disk full"):
        repository.write_tree(files, tmp_path, force=True)
    assert (tmp_path / "a.txt").read_text() == "old a"
    assert not (tmp_path / "b.txt").exists() and not (tmp_path / "c.txt").exists()
    assert not list(tmp_path.glob(".tipcgen-stage-*"))


def test_conflict_error_lists_files(tmp_path: Path):
    (tmp_path / "x.txt").write_text("mine")
    with pytest.raises(RenderConflictError) as info:
        repository.write_tree({"x.txt": "theirs", "y.txt": "new"}, tmp_path)
    assert "x.txt" in str(info.value)
    assert not (tmp_path / "y.txt").exists()


def test_the_wheel_ships_templates_and_the_sample(tmp_path: Path):
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True)
    if proc.returncode != 0 and "hatchling" in proc.stderr:
        pytest.skip("hatchling is not installed in this environment")
    assert proc.returncode == 0, proc.stderr
    wheel = next(tmp_path.glob("tipcgen-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "tipcgen/templates/runner/test_train_inference_python.sh.j2" in names
    assert "tipcgen/sample_models/bert-sst2/tipc.yaml" in names
    assert "tipcgen/sample_models/bert-sst2/train.py" in names
    assert "tipcgen/tipc.schema.json" in names  # tipcgen schema --path names it; editors read it
    assert "tipcgen/summary.schema.json" in names  # every reader of a summary.json validates against it
    assert not [n for n in names if "__pycache__" in n]
    # Installed (not editable) and run from elsewhere, it renders the same test_tipc/.
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True)
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run([sys.executable, "-c", "import tipcgen, sys; print(tipcgen.__file__)"], cwd=work,
                          env={**os.environ, "PYTHONPATH": str(site)}, capture_output=True, text=True)
    assert proc.stdout.startswith(str(site)), proc.stdout + proc.stderr
    proc = subprocess.run([sys.executable, "-m", "tipcgen", "init", "bert-sst2"], cwd=work,
                          env={**os.environ, "PYTHONPATH": str(site)}, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (work / "test_tipc" / "prepare.sh").read_bytes() == (ROOT / "test_tipc" / "prepare.sh").read_bytes()
    assert (work / "sample_models" / "bert-sst2" / "infer.py").is_file()


def test_help_does_not_import_paddle():
    code = ("import sys, runpy; sys.argv = ['tipcgen', '--help']\n"
            "try:\n    runpy.run_module('tipcgen', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "assert not [m for m in sys.modules if m.split('.')[0] in ('paddle', 'paddlenlp', 'jinja2')], 'heavy import'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
