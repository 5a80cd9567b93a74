"""What keeps runs apart and stops them whole: one lock per output folder, a run id on every
process of a run, the parent's death passed down, and signals turned into an interrupted summary.

Every process of a run carries ``TIPC_RUN_ID=<id>`` in its environment (children inherit it), so
"every child of the run" is found in /proc by that id whatever process group or session a step
put itself in (``timeout`` makes its own group). The scripts run in their own session, so a
terminal's Ctrl-C reaches tipcgen alone, which stops the run on purpose and writes the summary.

A step's daemon that leaves its session and clears its environment (the run id with it) is still found:
while the scripts run, tipcgen is the subreaper of what they orphan (``Leftovers``), and kills it, with its
descendants, once they are over (issue #59 item 5).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import stat
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

import filelock

from tipcgen.core import inputs, process, writes
from tipcgen.core.errors import RunError, TipcgenError

RUN_ID_VAR = "TIPC_RUN_ID"
GRACE_SECONDS = 5.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(Exception):
    """tipcgen run received SIGINT, SIGTERM or SIGHUP."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def lock_path(run_dir: Path) -> Path:
    """``<run folder>.lock``, next to the folder: the runner empties the folder, never the lock. The record of
    the run that holds it (pid, host, run id, start): what a refusal names, what the generated runner's
    the runner's ``check_lock`` (test_tipc/tipc_preflight.py) reads, the run id whose leftovers a later run stops. The exclusion itself is the OS lock
    on ``os_lock_path``."""
    return run_dir.with_name(run_dir.name + ".lock")


def os_lock_path(run_dir: Path) -> Path:
    """``<run folder>.flock``: the file ``filelock`` holds an ``flock`` on for the whole run. The kernel lets it go
    when the run's process ends, even by SIGKILL, so a run that holds it is alive, and a record left without it is
    stale whatever its pid is now. It stays in place once released (filelock's design: waiters share one inode).
    Not the record's own file: filelock 3.x opens its file with O_TRUNC, which would empty a live run's record."""
    return run_dir.with_name(run_dir.name + ".flock")


_LOCK_BYTES = 1 << 16  # a lock is one line of JSON


def _read_lock(path: Path) -> dict[str, Any]:
    """The lock's record; {} where it is not a regular file of at most _LOCK_BYTES holding a JSON object (never
    a wait on a FIFO, never /dev/zero read to the end: core/inputs.py)."""
    try:
        data = json.loads(inputs.read_bytes(path, "run lock", _LOCK_BYTES))
    except (OSError, ValueError, RecursionError, TipcgenError):
        return {}
    return data if isinstance(data, dict) else {}


def _refuse_odd(path: Path) -> None:
    """A folder, FIFO, device, socket or link where the lock's files go: refused, never read, opened or removed
    (a link is never followed: filelock 3.x would open its target with O_TRUNC)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise RunError(f"cannot read {path}: {exc.strerror}", "run where test_tipc/output is readable") from None
    if stat.S_ISDIR(mode):
        raise RunError(f"{path} is a folder, where tipcgen run keeps its lock file", "remove that folder and run again")
    if not stat.S_ISREG(mode):
        raise RunError(f"{path} is not a regular file (a link, pipe, device or socket), where tipcgen run "
                       "keeps its lock file", f"remove it (rm {path}) and run again")


def _whole(value: object) -> int | None:
    """A record's pid when it is a whole number (JSON true is not one)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@contextmanager
def run_lock(run_dir: Path, run_id: str, note: Callable[[str], None]) -> Iterator[Path]:
    """Hold the output folder's lock for the run; refuse while another run holds it, take over a stale one."""
    path, held = lock_path(run_dir), os_lock_path(run_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunError(f"cannot create {path.parent}: {exc.strerror}", "run where test_tipc/output is writable") from None
    _refuse_odd(path)
    _refuse_odd(held)
    exclusion = filelock.FileLock(str(held))
    try:
        exclusion.acquire(timeout=0)
    except filelock.Timeout:
        old = _read_lock(path)  # {} when the holder has not written it yet
        pid = _whole(old.get("pid"))
        raise RunError(f"another tipcgen run (pid {pid if pid is not None else '?'}, started "
                       f"{old.get('started', '?')}) is writing {run_dir}; its lock is {path}",
                       f"wait for it to finish, or stop it{f' (kill {pid})' if pid is not None else ''}; "
                       "each mode has its own folder") from None
    except OSError as exc:
        raise RunError(f"cannot take the lock {held}: {exc.strerror}", "run where test_tipc/output is writable") from None
    try:
        _take(path, run_id, note)
        yield path
    finally:
        try:
            if _read_lock(path).get("run_id") == run_id:
                writes.remove_file(path.parent, path, "run lock")
        except TipcgenError:
            pass  # a later run finds it stale (nobody holds the OS lock)
        finally:
            exclusion.release()


def _take(path: Path, run_id: str, note: Callable[[str], None]) -> None:
    """Under the OS lock: a record already there is a stale run's (the OS let its lock go when it ended), unless
    it names another host (an OS lock on a shared folder is not always seen from there); its leftover processes
    are stopped, then this run's record is written over it."""
    host = socket.gethostname()
    if os.path.lexists(path):
        old = _read_lock(path)
        if old.get("host") not in (None, host):
            raise RunError(f"{path} is held by a run on host {old.get('host')} (pid {old.get('pid')})",
                           f"if that run is over, delete {path} and run again")
        stopped = stop_run_processes(str(old.get("run_id") or ""))
        note(f"note: recovered the stale lock {path} of pid {old.get('pid')} (started {old.get('started', '?')}), "
             f"which is no longer running" + (f"; stopped {stopped} leftover process(es) of it" if stopped else ""))
    holder = {"pid": os.getpid(), "host": host, "run_id": run_id,
              "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    try:
        writes.write_file(path, json.dumps(holder), within=path.parent)
    except TipcgenError as exc:
        raise RunError(exc.message, "run where test_tipc/output is writable") from None


def run_processes(run_id: str) -> list[int]:
    """The live processes (this user's) whose environment carries this run id, tipcgen itself excepted."""
    if not run_id or not Path("/proc").is_dir():
        return []  # no /proc (macOS): the scripts' own traps and the parent-death signal remain
    needle = f"{RUN_ID_VAR}={run_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def stop_run_processes(run_id: str, grace: float = GRACE_SECONDS) -> int:
    """TERM every process of the run, then KILL what is left after grace seconds; how many there were."""
    pids = run_processes(run_id)
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and run_processes(run_id):
        time.sleep(0.1)
    for pid in run_processes(run_id):
        _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and run_processes(run_id):
        time.sleep(0.05)
    return len(pids)


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP while installed: the first raises Interrupted while ``armed`` (the
    scripts run), or is kept in ``received`` otherwise; later ones are only kept, so the stopping
    and the summary are never cut short. A signal ignored when tipcgen started (nohup) stays ignored."""

    def __init__(self) -> None:
        self.armed = True
        self.received: int | None = None
        self._previous: dict[int, Any] = {}  # what signal.signal gave back: a handler, SIG_DFL/SIG_IGN or None

    def _handle(self, signum: int, _frame: object) -> None:
        first = self.received is None
        if first:
            self.received = signum
        if first and self.armed:
            raise Interrupted(signum)

    def __enter__(self) -> StopSignals:
        for signum in STOP_SIGNALS:
            if signal.getsignal(signum) != signal.SIG_IGN:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, old in self._previous.items():
            signal.signal(signum, old)


_PR_SET_CHILD_SUBREAPER = 36


def _subreaper(on: bool) -> bool:
    """Make this process the reaper of its orphaned descendants (Linux ``PR_SET_CHILD_SUBREAPER``): a daemon a
    step double-forks is re-parented to tipcgen, not to init, so the run can find and end it even when it left
    its session and cleared its environment (the run id with it). False where it cannot be had."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children() -> dict[int, int]:
    """pid -> parent pid of every process in /proc (this user's and others'); {} without /proc."""
    out: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                data = handle.read(4096)
            out[int(name)] = int(data[data.rindex(b")") + 2:].split()[1])  # the field after the state
        except (OSError, ValueError, IndexError):
            continue
    return out


class Leftovers:
    """While a run's scripts run: this process adopts what they orphan (``_subreaper``); ``end()`` (once the
    scripts are over) kills every adopted process with all its descendants and reaps it, then every process
    that still carries the run id (``stop_run_processes``): a step's daemon never outlives the run, sandboxed
    or not. Children this process had before, and the processes core/process.py started, are left alone."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.before: set[int] = set()
        self.adopting = False

    def __enter__(self) -> Leftovers:
        me = os.getpid()
        self.before = {pid for pid, parent in _children().items() if parent == me}
        self.adopting = _subreaper(True)
        return self

    def adopted(self) -> list[int]:
        me, keep = os.getpid(), self.before | process.live_pids()
        return [pid for pid, parent in _children().items() if parent == me and pid not in keep]

    def end(self) -> int:
        """Kill what the run left behind; how many adopted processes there were."""
        found = self.adopted() if self.adopting else []
        deadline = time.monotonic() + GRACE_SECONDS
        while found and time.monotonic() < deadline:  # killed from the top, a tree's children come here next
            tree, doomed = _children(), set(self.adopted())
            if not doomed:
                break
            more = doomed
            while more:
                more = {pid for pid, parent in tree.items() if parent in more} - doomed
                doomed |= more
            for pid in doomed:
                _signal(pid, signal.SIGKILL)
            reaped = 0
            for pid in self.adopted():
                try:
                    reaped += os.waitpid(pid, os.WNOHANG)[0] == pid
                except ChildProcessError:
                    reaped += 1
            if not reaped:
                time.sleep(0.02)
        stop_run_processes(self.run_id, grace=1.0)
        return len(found)

    def __exit__(self, *exc: object) -> None:
        try:
            self.end()
        finally:
            if self.adopting:
                _subreaper(False)


def signal_run_processes(run_id: str, signum: int) -> None:
    for pid in run_processes(run_id):
        _signal(pid, signum)
