"""The one way tipcgen starts a process: a ``Request`` value in, an ``Outcome`` value out (tox's
``ExecuteRequest``/``Execute``/``Outcome``).

Every process, whatever starts it (a ``--help`` probe, git, nvidia-smi, prepare.sh and the runner, a
suite's chains), gets the same guarantees:

- its own session and process group (``start_new_session``), stdin from ``/dev/null``;
- the parent-death signal (Linux ``PR_SET_PDEATHSIG``, best effort): it is told when tipcgen dies (set by
  util-linux's ``setpriv`` where it is there, by bubblewrap's ``--die-with-parent`` in the sandbox, else by
  Python code in the child between fork and exec);
- output read incrementally, at most ``output_cap`` bytes kept (the first and the last halves, with
  ``truncated`` set): a ``--help`` printing 300 MB never costs 300 MB;
- at the end (the leader exited, the time ran out, or the caller raised), the whole group is killed: a
  child that outlives the leader while holding its stdout is waited for only ``linger`` seconds, then
  killed, never for the whole timeout;
- an address-space limit (``RLIMIT_AS``) where ``memory_cap`` asks for one;
- optionally a sandbox (``core/sandbox.py``: bubblewrap, read-only filesystem, no network);
- optionally each output line handed to ``on_line`` as it comes (streaming: ``tipcgen run``'s progress);
- no descriptor of tipcgen's but the three standard ones and those ``pass_fds`` names (the runner's answer
  pipe, run/pipeline.py: bubblewrap passes them into the sandbox as they are).

``run(request)`` runs to the end. ``start(request)`` returns a ``Running`` for the callers that start
several at once and read them later (provenance) or stop them from outside (run, suite): its
``finish()`` reads to the end; using it as a context manager kills the group on the way out.
"""
from __future__ import annotations

import codecs
import functools
import os
import select
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from tipcgen.core import inputs
from tipcgen.core.errors import TipcgenError

if TYPE_CHECKING:
    from tipcgen.core.sandbox import Spec

try:
    import resource  # imported here, never in the forked child (an import there can deadlock on a thread's lock)
except ImportError:  # not POSIX
    resource = None  # type: ignore[assignment]

OUTPUT_CAP = 4 << 20  # bytes of output kept by default (head and tail halves)
LINE_CAP = 1 << 20  # a longer line is handed to on_line in pieces of this size
LINGER = 1.0  # seconds the output is still read after the leader exited (its children may hold the pipe)
_CHUNK = 1 << 16
_LIVE: set[int] = set()  # the pids of the processes started here and not yet reaped (live_pids)
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Request:
    """What to start and under which limits. ``stderr``: "merge" (into the output), "separate" (kept in
    ``Outcome.err``) or "discard"; ``stdout`` "keep" or "discard". ``timeout`` counts from the start.
    ``grace``: after a timeout (or ``stop``), seconds between SIGTERM to the group and SIGKILL. ``silence``:
    seconds without a byte of output after which the process is taken as stuck and ended like a timeout
    (``Outcome.silent``): a runner whose every step is bounded never stays silent longer than a step."""

    argv: Sequence[str]
    cwd: str | Path | None = None
    env: Mapping[str, str] | None = None
    timeout: float | None = None
    output_cap: int = OUTPUT_CAP
    memory_cap: int | None = None  # bytes of address space (RLIMIT_AS)
    sandbox: Spec | None = None
    on_line: Callable[[str], None] | None = None
    stderr: str = "merge"
    stdout: str = "keep"
    stop_at_cap: bool = False  # kill the group once output passed the cap (a probe: nothing useful follows)
    grace: float = 0.0
    linger: float = LINGER
    cpus: tuple[int, ...] = ()  # pin the process to these cores (a suite's slot)
    death_signal: int = signal.SIGTERM
    silence: float | None = None
    pass_fds: tuple[int, ...] = ()  # descriptors the process inherits (every other is closed): the runner's answer pipe


@dataclass
class Outcome:
    """What came of a request: the argv run, its exit code (``-N``: killed by signal N; None: it could not
    start, ``error`` says why), the output kept (bytes; ``truncated`` when more came), whether the time ran
    out or the output stopped for longer than the request's ``silence`` (``silent``), and the seconds it took."""

    argv: list[str]
    exit_code: int | None
    data: bytes = b""
    err: bytes = b""
    truncated: bool = False
    timed_out: bool = False
    seconds: float = 0.0
    error: str = ""
    total_bytes: int = 0
    silent: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.silent

    @property
    def signal(self) -> int | None:
        return -self.exit_code if self.exit_code is not None and self.exit_code < 0 else None

    @property
    def output(self) -> str:
        return self.data.decode("utf-8", errors="replace")

    @property
    def errors(self) -> str:
        return self.err.decode("utf-8", errors="replace")


class _Kept:
    """At most ``cap`` bytes of a stream: its first half and its last half."""

    def __init__(self, cap: int) -> None:
        self.half = max(1, cap // 2)
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_bytes = 0
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_bytes += len(chunk)
        while self.tail_bytes - len(self.tail[0]) >= self.half:
            self.tail_bytes -= len(self.tail.popleft())

    def value(self) -> bytes:
        tail = b"".join(self.tail)
        return bytes(self.head) + tail[max(0, len(tail) - self.half):]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + min(self.tail_bytes, self.half)


class LineTail(deque):
    """The last lines of a stream, at most ``maxlen`` of them and ``max_bytes`` characters in all (a line longer
    than ``line_cap`` is cut there): a script printing 400 MB never keeps 400 MB (``tipcgen run``'s prepare.log)."""

    def __init__(self, maxlen: int, max_bytes: int, line_cap: int = 1 << 16) -> None:
        super().__init__(maxlen=maxlen)
        self.max_bytes, self.line_cap, self.size = max_bytes, line_cap, 0

    def append(self, line: str) -> None:
        line = line[:self.line_cap]
        if self.maxlen is not None and len(self) == self.maxlen:
            self.size -= len(self[0])
        super().append(line)
        self.size += len(line)
        while self.size > self.max_bytes and len(self) > 1:
            self.size -= len(self.popleft())


class _Lines:
    """Bytes in, whole decoded lines out (a line longer than LINE_CAP in pieces)."""

    def __init__(self, emit: Callable[[str], None]) -> None:
        self.emit, self.buf = emit, bytearray()
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def add(self, chunk: bytes) -> None:
        self.buf += chunk
        while True:
            cut = self.buf.find(b"\n")
            if cut < 0:
                if len(self.buf) >= LINE_CAP:
                    self._send(bytes(self.buf[:LINE_CAP]))
                    del self.buf[:LINE_CAP]
                    continue
                return
            self._send(bytes(self.buf[:cut]))
            del self.buf[:cut + 1]

    def close(self) -> None:
        if self.buf:
            self._send(bytes(self.buf))
            self.buf.clear()

    def _send(self, line: bytes) -> None:
        self.emit(self.decoder.decode(line, final=True).rstrip("\r"))


@functools.cache
def _setpriv() -> str | None:
    """util-linux's setpriv where it can set the parent-death signal (``--pdeathsig``: 2.33 and newer; its
    binary holds the option's name, read, never run), else None."""
    found = shutil.which("setpriv") if sys.platform.startswith("linux") else None
    if found is None or not os.path.isabs(found):
        return None
    try:
        return found if b"pdeathsig" in inputs.read_bytes(found, "program", limit=16 << 20) else None
    except TipcgenError:
        return None


def _exec_runs(argv0: str, cwd: str | Path | None, env: Mapping[str, str] | None) -> bool:
    """Whether exec will run what argv0 names (found as Popen finds it): an executable ELF program, or a script
    whose ``#!`` names one. Anything else (not found, not executable, another format, an interpreter that is
    missing or a script itself) is started without setpriv, so that its error is Popen's."""
    base = os.fspath(cwd) if cwd is not None else os.getcwd()
    folders = [""] if "/" in argv0 else [folder or "." for folder in os.get_exec_path(env)]
    for path in (os.path.join(base, folder, argv0) for folder in folders):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            head = inputs.program_head(path)
            if head.startswith(b"#!"):
                words = head[2:].split(b"\n", 1)[0].split()
                interpreter = os.fsdecode(words[0]) if words else ""
                runs = os.path.isabs(interpreter) and os.access(interpreter, os.X_OK)
                head = inputs.program_head(interpreter) if runs else b""
            return head.startswith(b"\x7fELF")
    return False


def _launcher(request: Request, argv: list[str]) -> tuple[list[str], Callable[[], None] | None]:
    """The argv to exec and the code to run in the child before exec (None: none, so that Python starts it by
    vfork instead of copying the whole parent: 2.6 against 5.7 ms of CPU a start from tipcgen's 80 MB, 2.1
    against 9.5 ms from a test worker's 200 MB; bench/bench_process.py).

    - sandboxed, without cores or a memory limit: bubblewrap's ``--die-with-parent`` is the parent-death
      signal (the sandbox's PID namespace ends with it): nothing to run;
    - else, without cores or a memory limit, on Linux with setpriv: ``setpriv --pdeathsig SIG -- argv``, where
      argv[0] is a program exec can run (else its error is Popen's, below);
    - else Python code in the child (``_preexec``): the signal, the cores, the limit."""
    if not request.memory_cap and not request.cpus:
        if request.sandbox is not None:
            return argv, None
        setpriv = _setpriv()
        if setpriv is not None and _exec_runs(argv[0], request.cwd, request.env):
            name = signal.Signals(request.death_signal).name.removeprefix("SIG")
            return [setpriv, "--pdeathsig", name, "--", *argv], None
    return argv, _preexec(os.getpid(), request)


def _preexec(parent: int, request: Request) -> Callable[[], None]:
    """Run in the child before exec: the parent-death signal, the cores, the memory limit."""
    memory, cpus, death = request.memory_cap, request.cpus, request.death_signal
    prctl = None
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork
        except (OSError, AttributeError):
            prctl = None

    def setup() -> None:
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, int(death), 0, 0, 0)
            if os.getppid() != parent:  # tipcgen died before prctl took effect
                os._exit(143)
        if cpus and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, cpus)
        if memory and resource is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    return setup


# How many times a sandbox is started before its failure is the outcome: bubblewrap stops before the command runs
# when a host socket it covers goes between the listing and its mounts (sandbox.wrap); the next start lists anew.
SANDBOX_STARTS = 3
READY_WAIT = 60.0  # seconds for a sandbox to stand (its mounts are milliseconds): then it counts as standing


def _stands(fd: int, says: bool) -> bool:
    """Whether the sandbox stood up: its byte on the ready pipe (sandbox.wrap), or none expected. Closes fd. An end
    of the pipe without the byte: bubblewrap exited before the command (nothing ran)."""
    try:
        if not says:
            return True
        readable, _, _ = select.select([fd], [], [], READY_WAIT)
        return not readable or os.read(fd, 1) == b"."
    finally:
        os.close(fd)


class Running:
    """A started process: read it to its end with ``finish``, or stop it with ``stop``/``kill``."""

    def __init__(self, request: Request) -> None:
        self.request = request
        argv = [str(a) for a in request.argv]
        self.argv = self.args = argv
        self.started = self.last_output = time.monotonic()
        self.timed_out = self.silent = False
        self.stopping_at: float | None = None
        self.out, self.err = _Kept(request.output_cap), _Kept(request.output_cap)
        self.lines = _Lines(request.on_line) if request.on_line else None
        pipe_err = {"merge": subprocess.STDOUT, "separate": subprocess.PIPE, "discard": subprocess.DEVNULL}[request.stderr]
        pipe_out = subprocess.PIPE if request.stdout == "keep" else subprocess.DEVNULL
        if pipe_out == subprocess.DEVNULL and pipe_err == subprocess.STDOUT:
            pipe_err = subprocess.DEVNULL
        env = dict(request.env) if request.env is not None else None
        if request.sandbox is not None:  # the sandbox's allow-list: no token of the caller's reaches it
            env = request.sandbox.environment(os.environ if env is None else env)
        for attempt in range(1, SANDBOX_STARTS + 1):
            ready, wrapped, says = None, argv, False
            if request.sandbox is not None:
                ready = os.pipe()
                wrapped, says = request.sandbox.wrap(argv, request.cwd, ready[1])
            launched, preexec = _launcher(request, wrapped)
            try:
                self.popen = subprocess.Popen(launched, cwd=request.cwd, env=env,
                                              stdin=subprocess.DEVNULL, stdout=pipe_out, stderr=pipe_err,
                                              start_new_session=True, close_fds=True, preexec_fn=preexec,
                                              pass_fds=(*request.pass_fds, *([ready[1]] if says and ready else [])))
            except BaseException:
                if ready:
                    os.close(ready[0])
                raise
            finally:
                if ready:
                    os.close(ready[1])
            if ready is None or _stands(ready[0], says) or attempt == SANDBOX_STARTS:
                break
            self.popen.wait()  # bubblewrap stopped before argv: a host socket it covers went as it mounted
            for handle in (self.popen.stdout, self.popen.stderr):
                if handle is not None:
                    handle.close()
        self.pid = self.popen.pid
        _LIVE.add(self.pid)
        self._streams: dict[int, _Kept] = {}
        self._files = {}
        for handle, kept in ((self.popen.stdout, self.out), (self.popen.stderr, self.err)):
            if handle is not None:
                os.set_blocking(handle.fileno(), False)
                self._streams[handle.fileno()] = kept
                self._files[handle.fileno()] = handle
        self._outcome: Outcome | None = None

    # ------------------------------------------------------------ the group
    def signal_group(self, sig: int) -> None:
        if self._outcome is not None:
            return  # reaped: its pid (the group's id) may be another's now
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def kill(self) -> None:
        """SIGKILL to the whole group (the leader and everything it left)."""
        self.signal_group(signal.SIGKILL)

    def exited(self) -> bool:
        """The leader exited (not reaped yet: its pid, the group's id, stays reserved)."""
        if self.popen.returncode is not None:
            return True
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None and info.si_pid == self.pid

    def poll(self) -> int | None:
        """Its exit code once ``finish`` ended it, else None."""
        return self._outcome.exit_code if self._outcome is not None else None

    def stop(self, grace: float | None = None) -> None:
        """SIGTERM to the group now, SIGKILL after ``grace`` seconds (read by ``finish``)."""
        self.signal_group(signal.SIGTERM)
        self.stopping_at = time.monotonic() + (self.request.grace if grace is None else grace)

    # ------------------------------------------------------------ reading
    def _read(self, fd: int, selector: selectors.BaseSelector) -> None:
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            selector.unregister(fd)
            return
        self._streams[fd].add(chunk)
        self.last_output = time.monotonic()
        if self.lines is not None and fd == (self.popen.stdout.fileno() if self.popen.stdout else -1):
            self.lines.add(chunk)
        if self.request.stop_at_cap and self._streams[fd].total > self.request.output_cap:
            self.kill()

    def finish(self, until: float | None = None) -> Outcome:
        """Read the output to its end (or until the timeout, or a silence longer than the request's), kill the
        group, reap the leader: the Outcome. ``until``: a time.monotonic() after which to give up reading and
        end it (a caller's grace)."""
        if self._outcome is not None:
            return self._outcome
        request = self.request
        selector = selectors.DefaultSelector()
        for fd in self._streams:
            selector.register(fd, selectors.EVENT_READ)
        linger_until: float | None = None
        try:
            while selector.get_map():
                now = time.monotonic()
                if self.stopping_at is None and self._due(now, until):
                    if request.grace > 0:
                        self.stop()  # SIGTERM now, SIGKILL after the grace
                    else:
                        break
                if self.stopping_at is not None and now >= self.stopping_at:
                    break
                if linger_until is None and self.exited():
                    linger_until = now + request.linger
                if linger_until is not None and now >= linger_until:
                    break
                limits = [0.1] + [t - now for t in (self._next_limit(until) if self.stopping_at is None else None,
                                                    self.stopping_at, linger_until) if t is not None]
                for key, _ in selector.select(max(0.0, min(limits))):
                    self._read(key.fd, selector)
            if not selector.get_map() and not self.exited():
                # the output ended, the leader runs on: wait for it within the time left
                while not self.exited():
                    now = time.monotonic()
                    if self.stopping_at is None and self._due(now, until):
                        if request.grace > 0:
                            self.stop()
                            continue
                        break
                    if self.stopping_at is not None and now >= self.stopping_at:
                        break
                    time.sleep(0.02)
        finally:
            selector.close()
        return self._end()

    def _next_limit(self, until: float | None) -> float | None:
        """The earliest of the time limit, the end of the allowed silence and the caller's ``until``."""
        request = self.request
        limits = [t for t in (self.started + request.timeout if request.timeout else None,
                              self.last_output + request.silence if request.silence else None, until) if t is not None]
        return min(limits) if limits else None

    def _due(self, now: float, until: float | None) -> bool:
        """A limit is reached: ``timed_out`` or ``silent`` says which of the request's (neither: the caller's)."""
        limit = self._next_limit(until)
        if limit is None or now < limit:
            return False
        request = self.request
        self.timed_out = request.timeout is not None and now >= self.started + request.timeout
        self.silent = not self.timed_out and request.silence is not None and now >= self.last_output + request.silence
        return True

    def _end(self) -> Outcome:
        self.kill()
        code = self.popen.wait()
        _LIVE.discard(self.pid)
        if self.lines is not None:
            self.lines.close()
        for handle in self._files.values():
            handle.close()
        out, err = self.out, self.err
        self._outcome = Outcome(self.argv, code, out.value(), err.value(), out.truncated or err.truncated,
                                self.timed_out, round(time.monotonic() - self.started, 3), total_bytes=out.total,
                                silent=self.silent)
        return self._outcome

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._outcome is None:
            self.kill()
            self._end()


def live_pids() -> frozenset[int]:
    """The processes this module started and has not reaped yet: never taken for an orphan (run/guard.py)."""
    return frozenset(_LIVE)


def start(request: Request) -> Running:
    """Start the process (OSError when it cannot start: not found, not executable)."""
    return Running(request)


def run(request: Request) -> Outcome:
    """Run to the end under the request's limits. A process that cannot start is an Outcome with
    exit_code None and ``error`` saying why (never an exception)."""
    try:
        running = start(request)
    except OSError as exc:
        return Outcome([str(a) for a in request.argv], None, error=exc.strerror or str(exc))
    with running:
        return running.finish()
