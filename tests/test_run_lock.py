"""The run lock (run/guard.py run_lock, issue #58 item 4): the exclusion is filelock's OS lock on
``<run folder>.flock``, which the kernel lets go when its process ends (even by SIGKILL); ``<run folder>.lock`` is
the holder's record (pid, host, run id, start) that a refusal names and the generated runner's ``tipc_check_lock``
reads. What is hostile there (a link, a FIFO, a folder, a socket, garbage) is refused or taken over, never
followed, never waited on. No test here bounds a wall-clock time: a holder is waited for by the line it prints."""
from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, finishes
from tipcgen.core.errors import RunError
from tipcgen.run import guard

MODE = "lite_train_lite_infer"
_CEILING = 600.0  # seconds a blocked call may take before the test says so (a ceiling, not a bound)




def _take(run_dir: Path, run_id: str = "new") -> list[str]:
    notes: list[str] = []
    with guard.run_lock(run_dir, run_id, notes.append) as path:
        record = json.loads(path.read_text())
        assert record["run_id"] == run_id and record["pid"] == os.getpid(), record
    return notes


@contextmanager
def _held_elsewhere(run_dir: Path) -> Iterator[None]:
    """The OS lock held through an open file description of its own, as another process's would be."""
    held = guard.os_lock_path(run_dir)
    held.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(held, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


def test_a_free_lock_is_taken_and_given_back_without_a_note(tmp_path: Path):
    run_dir = tmp_path / "out" / MODE
    assert _take(run_dir) == []
    assert not guard.lock_path(run_dir).exists()  # the record goes with the run
    held = guard.os_lock_path(run_dir)
    assert held.is_file() and not held.is_symlink()  # filelock keeps its file: waiters share one inode
    assert _take(run_dir, "again") == []  # released: the next run takes it, nothing stale


def test_the_record_reads_as_the_generated_runner_reads_it(tmp_path: Path):
    """tipc_check_lock (templates/runner/tipc_steps.sh.j2) matches `"run_id": "<id>"` and `"pid": N` in the text."""
    run_dir = tmp_path / "out" / MODE
    with guard.run_lock(run_dir, "a" * 32, lambda line: None) as path:
        text = path.read_text()
    assert f'"run_id": "{"a" * 32}"' in text
    assert re.search(r'"pid": ([0-9]+)', text).group(1) == str(os.getpid())


def test_a_second_taker_is_refused_naming_the_holder_and_the_record_is_untouched(tmp_path: Path):
    run_dir = tmp_path / "out" / MODE
    with guard.run_lock(run_dir, "first", lambda line: None) as path:
        before = path.read_bytes()
        with pytest.raises(RunError) as caught:
            _take(run_dir, "second")
        assert f"another tipcgen run (pid {os.getpid()}" in caught.value.message
        assert f"kill {os.getpid()}" in caught.value.hint
        assert path.read_bytes() == before
    assert _take(run_dir, "third") == []


def test_a_holder_killed_by_sigkill_leaves_a_stale_record_that_is_taken_over(tmp_path: Path):
    """The kernel lets the OS lock go with the process: no pid test, no /proc, no wait."""
    run_dir = tmp_path / "out" / MODE
    code = ("import sys, time\nfrom pathlib import Path\nfrom tipcgen.run import guard\n"
            f"with guard.run_lock(Path({str(run_dir)!r}), 'dead', print):\n"
            "    print('held', flush=True)\n    time.sleep(3600)\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunError, match=f"pid {holder.pid}"):
            _take(run_dir)
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    assert json.loads(guard.lock_path(run_dir).read_text())["pid"] == holder.pid  # SIGKILL left the record
    notes = _take(run_dir)
    assert len(notes) == 1 and "recovered the stale lock" in notes[0] and f"pid {holder.pid}" in notes[0], notes


def test_a_record_naming_a_live_process_of_another_program_is_stale(tmp_path: Path):
    """pid reuse: the record names a live process (this test's own), but nobody holds the OS lock."""
    run_dir = tmp_path / "out" / MODE
    record = guard.lock_path(run_dir)
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "run_id": "f" * 32}))
    notes = _take(run_dir)
    assert "recovered the stale lock" in notes[0] and f"pid {os.getpid()}" in notes[0]


def test_a_record_of_another_host_is_not_taken_over(tmp_path: Path):
    """An OS lock on a shared folder is not always seen from another host: its record is left to the user."""
    run_dir = tmp_path / "out" / MODE
    record = guard.lock_path(run_dir)
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"pid": 7, "host": "elsewhere.example", "run_id": "x"}))
    with pytest.raises(RunError, match="held by a run on host elsewhere.example"):
        _take(run_dir)
    assert json.loads(record.read_text())["host"] == "elsewhere.example"
    with _held_elsewhere(run_dir):  # flock(LOCK_NB) raises if the refusal kept the OS lock
        pass


def _garbage() -> st.SearchStrategy[bytes]:
    objects = st.dictionaries(st.sampled_from(["pid", "host", "run_id", "started", "x"]),
                              st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20),
                                        st.lists(st.integers(), max_size=3)), max_size=5)
    return st.one_of(st.binary(max_size=300), st.text(max_size=200).map(str.encode),
                     objects.map(lambda value: json.dumps(value).encode()),
                     st.recursive(st.integers() | st.text(max_size=5), lambda inner: st.lists(inner, max_size=3),
                                  max_leaves=20).map(lambda value: json.dumps(value).encode()))


def _foreign_host(content: bytes) -> bool:
    try:
        value = json.loads(content)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and value.get("host") not in (None, socket.gethostname())


def _left_record(folder: Path, content: bytes) -> tuple[Path, Path]:
    """A run folder's path under FOLDER and its lock record, holding CONTENT (the folder itself not made)."""
    run_dir = folder / "out" / MODE
    record = guard.lock_path(run_dir)
    record.parent.mkdir(parents=True)
    record.write_bytes(content)
    return run_dir, record


@settings(max_examples=60, deadline=None)
@given(content=_garbage())
def test_any_record_left_without_a_holder_is_taken_over_or_refused_by_host(content: bytes):
    with tempfile.TemporaryDirectory() as folder:
        run_dir, record = _left_record(Path(folder), content)
        if _foreign_host(content):
            with pytest.raises(RunError, match="held by a run on host"):
                finishes(lambda: _take(run_dir), _CEILING)
            assert record.read_bytes() == content
        else:
            notes = finishes(lambda: _take(run_dir), _CEILING)
            assert len(notes) == 1 and "recovered the stale lock" in notes[0], notes
            assert not record.exists()


@settings(max_examples=40, deadline=None)
@given(content=_garbage())
def test_any_record_next_to_a_held_os_lock_is_a_refusal_never_a_crash(content: bytes):
    with tempfile.TemporaryDirectory() as folder:
        run_dir, record = _left_record(Path(folder), content)
        with _held_elsewhere(run_dir):
            with pytest.raises(RunError) as caught:
                finishes(lambda: _take(run_dir), _CEILING)
        assert caught.value.message.startswith("another tipcgen run (pid ")
        assert record.read_bytes() == content  # the holder's record is never touched


@pytest.mark.parametrize("which", ["record", "os lock"])
@pytest.mark.parametrize("shape", ["fifo", "link", "dangling_link", "dev_zero", "socket", "folder"])
def test_a_lock_path_that_is_not_a_file_is_refused_never_followed(tmp_path: Path, which: str, shape: str):
    run_dir = tmp_path / "out" / MODE
    path = guard.lock_path(run_dir) if which == "record" else guard.os_lock_path(run_dir)
    path.parent.mkdir(parents=True)
    victim = tmp_path / "bashrc"
    victim.write_text("the user's own file\n")
    if shape == "fifo":
        os.mkfifo(path)
    elif shape == "link":
        path.symlink_to(victim)
    elif shape == "dangling_link":
        path.symlink_to(tmp_path / "nowhere")
    elif shape == "dev_zero":
        path.symlink_to("/dev/zero")
    elif shape == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.close()
    else:
        path.mkdir()
    with pytest.raises(RunError) as caught:
        finishes(lambda: _take(run_dir), _CEILING)
    if shape == "folder":
        assert "is a folder" in caught.value.message
    else:
        assert "not a regular file" in caught.value.message and f"rm {path}" in caught.value.hint
    assert os.path.lexists(path)  # never removed: the user looks at it
    assert victim.read_text() == "the user's own file\n"  # a link's target is never opened (filelock 3.x: O_TRUNC)
    assert not (tmp_path / "nowhere").exists()
