"""test_tipc/tipc_preflight.py, the checks every script makes before any step (#58 item 3): the config against its
layout and its model's keys, the run folder made safe to write. In process, on configs and run folders no honest
repository has (generated), and as the runner calls it: a refusal is one message and exit code 2, never a traceback,
never a hang, never a write through a link."""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, fuzz_examples
from tipcgen import descriptor
from tipcgen.format import paths
from tipcgen.render import repository
from tipcgen.render.shipped import tipc_preflight
from tipcgen.render.shipped.tipc_preflight import Refused

SAMPLE = ROOT / "sample_models" / "bert-sst2" / "tipc.yaml"


@functools.lru_cache(maxsize=1)
def _rendered() -> tuple[dict, str]:
    files = repository.render_repository([descriptor.load(SAMPLE)])
    return json.loads(files[paths.LAYOUTS_JSON]), files[paths.config_rel("bert_sst2")]


def _check(tmp_path: Path, text: str | bytes) -> str:
    config = tmp_path / "c.txt"
    config.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape"))
    return tipc_preflight.check(str(config), known=_rendered()[0])


def _table(out: str) -> dict:
    """The table as the runner reads it (tipc_read_table): each line `what name value`."""
    table: dict = {"slot": {}, "section": {}}
    for line in out.split("\n"):  # bash's read ends a line at a newline alone
        what, name, value = (line.split(" ", 2) + [""])[:3]
        if what == "layout":
            table["layout"] = (name, int(value))
        else:
            table[what][name] = value
    return table


def test_the_rendered_config_is_read_with_its_tables_and_sections(tmp_path: Path):
    known, config = _rendered()
    table = _table(_check(tmp_path, config))
    assert table["layout"] == ("standard", 51) and table["slot"]["model_name"] == "1"
    assert table["slot"] == {name: str(index) for name, index in known["layouts"][0]["slots"].items()}
    assert table["section"]["result_check_params:compare"] == "test_tipc/compare_results.py"


@pytest.mark.parametrize("index", range(51))
@pytest.mark.parametrize("how", ["deleted", "doubled"])
def test_any_line_of_the_layout_deleted_or_doubled_is_refused_naming_a_line(tmp_path: Path, index: int, how: str):
    """Every later value would be read from the wrong line: the check must fire on each, naming the file (but for a
    doubled line at or after the last keyed one, bert-sst2's --benchmark: nothing after it is read from a wrong line
    but the null filler, infer_param, which then passes that flag again)."""
    known, text = _rendered()
    lines = text.splitlines()
    if how == "doubled" and index >= max(at for at, _ in known["models"]["bert_sst2"]):
        return
    lines[index:index + 1] = [] if how == "deleted" else [lines[index]] * 2
    with pytest.raises(Refused) as refused:
        _check(tmp_path, "\n".join(lines) + "\n")
    assert refused.value.what.startswith(str(tmp_path / "c.txt")) and refused.value.hint


def _mutations() -> st.SearchStrategy:
    line = st.one_of(st.text(max_size=40), st.sampled_from(["##", "===x===", "<<<<<<< ours", "=======", "a\r",
                                                            "key\uff1avalue", " --flag:1", "--flag: 1", "null:null"]))
    return st.lists(st.tuples(st.integers(0, 70), st.sampled_from(["insert", "delete", "replace"]), line), max_size=4)


@settings(max_examples=fuzz_examples(200), deadline=None)
@given(edits=_mutations(), raw=st.binary(max_size=30))
def test_any_config_is_read_or_refused_with_a_message_never_a_crash(tmp_path_factory, edits, raw):
    lines = _rendered()[1].splitlines()
    for at, how, text in edits:
        at %= len(lines) + 1
        if how == "insert":
            lines.insert(at, text)
        elif at < len(lines):
            lines[at:at + 1] = [] if how == "delete" else [text]
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape") + raw
    try:
        out = _check(tmp_path_factory.mktemp("c"), data)
    except Refused as refused:
        assert refused.what and refused.hint
        return
    table = _table(out)  # what the runner reads: one word for each name, a number for each index
    assert table["layout"][0] == "standard" and all(value.isdigit() for value in table["slot"].values())
    assert all(" " not in name and "\n" not in value for name, value in table["section"].items())


def test_an_untouched_config_with_honest_variations_is_read(tmp_path: Path):
    """What must not fire: blank lines anywhere, trailing whitespace, a null key or value where the layout allows it,
    values with ':' in them, a flag renamed consistently is not (it is a descriptor change)."""
    lines = _rendered()[1].splitlines()
    spaced = []
    for line in lines:
        spaced += [line + "  \t", ""]
    assert _table(_check(tmp_path, "\n".join(spaced)))["layout"] == ("standard", 51)
    lines[12] = lines[12].split(":", 1)[0] + ":http://host:8080/data"  # a value with ':' (the runner keeps it whole)
    assert _table(_check(tmp_path, "\n".join(lines) + "\n"))["slot"]["train_param"] == "12"


def _run(tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    script = tmp_path / "tipc_preflight.py"
    if not script.exists():
        script.write_text((ROOT / "test_tipc" / paths.TIPC_PREFLIGHT).read_text())
        (tmp_path / "tipc_layouts.json").write_text(json.dumps(_rendered()[0]))
    return subprocess.run([sys.executable, "-I", "-S", str(script), *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("args", [[], ["nope"], ["check"], ["check", "a", "b"], ["lines", "c", "x"], ["start", "r"]])
def test_a_wrong_call_prints_the_usage_and_exits_2(tmp_path: Path, args: list[str]):
    proc = _run(tmp_path, *args)
    assert proc.returncode == 2 and "usage" not in proc.stdout and "check CONFIG" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_tables_are_a_message_naming_the_fix(tmp_path: Path):
    _run(tmp_path, "links", "x", "y")
    (tmp_path / "tipc_layouts.json").write_text("{not json")
    proc = _run(tmp_path, "check", "c.txt")
    assert proc.returncode == 2 and "tipc_layouts.json" in proc.stderr and "tipcgen init" in proc.stderr
    assert "Traceback" not in proc.stderr


def _run_folder(tmp_path: Path) -> Path:
    run = tmp_path / "test_tipc/output/m/mode"
    run.mkdir(parents=True)
    (run / "summary.json").write_text("{}")
    (run / "model.pdparams").write_bytes(b"\x80weights")
    return run


@pytest.mark.parametrize("lock", ["garbage", "fifo", "zero", "huge", "folder", "ours", "dead"])
def test_a_lock_left_there_never_hangs_or_crashes_the_start(tmp_path: Path, lock: str):
    """A lock record in any state: read at most its first 64 KiB, a FIFO or device never opened; a record of this
    run (TIPC_RUN_ID) or of a dead process is no obstacle."""
    run = _run_folder(tmp_path)
    path = tmp_path / "test_tipc/output/m/mode.lock"
    if lock == "garbage":
        path.write_bytes(os.urandom(256))
    elif lock == "fifo":
        os.mkfifo(path)
    elif lock == "zero":
        path.symlink_to("/dev/zero")
    elif lock == "huge":
        path.write_text('{"pid": 4194304' + " " * 10_000_000 + "}")  # over pid_max: nobody
    elif lock == "folder":
        path.mkdir()
    elif lock == "ours":
        path.write_text(json.dumps({"pid": os.getpid(), "run_id": "r1"}))
    else:
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
        path.write_text(json.dumps({"pid": int(dead.stdout), "run_id": "r0"}))
    proc = _run(tmp_path, "start", "test_tipc/output/m/mode", sys.executable, env={"TIPC_RUN_ID": "r1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().isdigit() and not run.exists()
    assert sorted(p.name for p in run.with_name("mode.previous").iterdir()) == ["summary.json"]


def test_a_live_run_holding_the_folder_stops_the_start_and_nothing_moves(tmp_path: Path):
    run = _run_folder(tmp_path)
    (tmp_path / "test_tipc/output/m/mode.lock").write_text(json.dumps({"pid": os.getpid(), "run_id": "other"}))
    proc = _run(tmp_path, "start", "test_tipc/output/m/mode", sys.executable, env={"TIPC_RUN_ID": "mine"})
    assert proc.returncode == 2 and f"pid {os.getpid()}" in proc.stderr and f"kill {os.getpid()}" in proc.stderr
    assert (run / "model.pdparams").exists() and not run.with_name("mode.previous").exists()


@pytest.mark.parametrize("where", ["test_tipc", "test_tipc/output", "test_tipc/output/m", "test_tipc/output/m/mode",
                                   "test_tipc/output/m/mode.previous"])
def test_a_link_on_the_way_is_refused_and_its_target_untouched(tmp_path: Path, where: str):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "theirs.pdparams").write_bytes(b"\x80keep")
    if where.endswith(".previous"):
        _run_folder(tmp_path)
    link = tmp_path / where
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    proc = _run(tmp_path, "start", "test_tipc/output/m/mode", sys.executable)
    assert proc.returncode == 2 and f"{where} is a symbolic link to {outside}" in proc.stderr, proc.stderr
    assert "write and delete through no link" in proc.stderr and "Traceback" not in proc.stderr
    assert [p.name for p in outside.iterdir()] == ["theirs.pdparams"]


def test_a_file_where_the_previous_run_goes_is_refused(tmp_path: Path):
    run = _run_folder(tmp_path)
    run.with_name("mode.previous").write_text("mine")
    proc = _run(tmp_path, "start", "test_tipc/output/m/mode", sys.executable)
    assert proc.returncode == 2 and "is a file, where the scripts keep the previous run's folder" in proc.stderr
    assert run.with_name("mode.previous").read_text() == "mine" and (run / "model.pdparams").exists()


def test_the_cuda_count_is_the_override_or_none_without_nvidia_smi(tmp_path: Path):
    assert _run(tmp_path, "start", "out", sys.executable, env={"TIPC_GPU_COUNT": "3"}).stdout == "3\n"
    bare = {"PATH": str(tmp_path / "empty"), "TIPC_GPU_COUNT": ""}
    assert _run(tmp_path, "start", "out", sys.executable, env=bare).stdout == "0\n"
