"""core/process.py, the one way tipcgen starts a process, and core/sandbox.py (real processes, real bwrap)."""
from __future__ import annotations

import ast
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, needs_bwrap, nodes
from tipcgen.core import process, sandbox

PACKAGE = ROOT / "tipcgen"


def _gone(pid: int, ceiling: float = 30.0) -> bool:
    """The process is dead (gone, or a zombie nobody reaped yet): waited for as an event, generous ceiling."""
    end = time.monotonic() + ceiling
    while time.monotonic() < end:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_outcome_has_exit_code_output_and_signal():
    outcome = process.run(process.Request(["sh", "-c", "echo out; echo err >&2; exit 3"]))
    assert outcome.exit_code == 3 and outcome.output == "out\nerr\n" and not outcome.timed_out
    killed = process.run(process.Request(["sh", "-c", "kill -9 $$"]))
    assert killed.signal == signal.SIGKILL
    separate = process.run(process.Request(["sh", "-c", "echo out; echo err >&2"], stderr="separate"))
    assert (separate.output, separate.errors) == ("out\n", "err\n")


def test_a_program_that_cannot_start_is_an_outcome_not_an_exception(tmp_path: Path):
    outcome = process.run(process.Request([str(tmp_path / "missing")]))
    assert outcome.exit_code is None and outcome.error


# PR_GET_PDEATHSIG read by the child itself: the signal it gets when tipcgen dies, however it was set
_DEATH_SIGNAL = ("import ctypes; v = ctypes.c_int(); ctypes.CDLL(None).prctl(2, ctypes.byref(v)); print(v.value)")
_LAUNCHES = {"setpriv": {}, "python in the child": {"memory_cap": 1 << 40}, "no setpriv": {"no_setpriv": True}}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("launch", sorted(_LAUNCHES))
@pytest.mark.parametrize("death", [signal.SIGTERM, signal.SIGKILL, signal.SIGHUP], ids=lambda s: s.name)
def test_every_process_gets_the_death_signal_whichever_way_it_is_set(launch, death, monkeypatch):
    options = dict(_LAUNCHES[launch])
    if options.pop("no_setpriv", False):
        monkeypatch.setattr(process, "_setpriv", lambda: None)
    elif launch == "setpriv" and process._setpriv() is None:
        pytest.skip("no setpriv with --pdeathsig here (util-linux 2.33+)")
    outcome = process.run(process.Request([sys.executable, "-c", _DEATH_SIGNAL], death_signal=death, **options))
    assert outcome.ok and outcome.output.split() == [str(int(death))], outcome


def test_setpriv_is_used_only_where_the_child_needs_nothing_else(tmp_path: Path, monkeypatch):
    if process._setpriv() is None:
        pytest.skip("no setpriv with --pdeathsig here (util-linux 2.33+)")
    (tmp_path / "tool").write_text("#!/bin/sh\necho tool\n")
    (tmp_path / "tool").chmod(0o755)
    plain = process._launcher(process.Request(["tool"], env={"PATH": str(tmp_path)}), ["tool"])
    assert plain == ([process._setpriv(), "--pdeathsig", "TERM", "--", "tool"], None)
    for options in ({"memory_cap": 1 << 30}, {"cpus": (0,)}):
        argv, preexec = process._launcher(process.Request(["tool"], env={"PATH": str(tmp_path)}, **options), ["tool"])
        assert argv == ["tool"] and preexec is not None, options
    boxed = process._launcher(process.Request(["tool"], sandbox=sandbox.Spec()), ["bwrap", "--die-with-parent", "tool"])
    assert boxed == (["bwrap", "--die-with-parent", "tool"], None)


def _programs(root: Path) -> dict[str, Path]:
    """Files exec cannot run, one of each way: each must fail as Popen fails, with or without setpriv."""
    out = {"missing": root / "missing", "folder": root / "folder"}
    out["folder"].mkdir()
    for name, text, mode in (("not executable", "#!/bin/sh\n", 0o644), ("no shebang", "echo hi\n", 0o755),
                             ("empty", "", 0o755), ("shebang to nothing", "#!/no/such/interpreter\n", 0o755),
                             ("shebang to a folder", f"#!{root}\n", 0o755), ("bare shebang", "#!\n", 0o755),
                             ("shebang to a script", f"#!{root / 'no_shebang'}\n", 0o755),
                             ("relative shebang", "#!sh\n", 0o755)):
        out[name] = root / name.replace(" ", "_")
        out[name].write_text(text)
        out[name].chmod(mode)
    return out


def test_a_program_exec_cannot_run_fails_the_same_way_with_or_without_setpriv(tmp_path: Path, monkeypatch):
    programs = _programs(tmp_path)
    with_setpriv = {name: process.run(process.Request([str(path)])) for name, path in programs.items()}
    monkeypatch.setattr(process, "_setpriv", lambda: None)
    without = {name: process.run(process.Request([str(path)])) for name, path in programs.items()}
    for name in programs:
        got, want = with_setpriv[name], without[name]
        assert (got.exit_code, got.error, got.output) == (want.exit_code, want.error, want.output), name
    assert with_setpriv["missing"].exit_code is None and with_setpriv["not executable"].exit_code is None


def test_output_is_capped_head_and_tail(tmp_path: Path):
    code = "import sys\nsys.stdout.write('HEAD')\nfor i in range(64): sys.stdout.write('x' * 65536)\nsys.stdout.write('TAIL')"
    outcome = process.run(process.Request([sys.executable, "-c", code], output_cap=1 << 16))
    assert outcome.truncated and len(outcome.data) <= 1 << 16
    assert outcome.data.startswith(b"HEAD") and outcome.data.endswith(b"TAIL")
    assert outcome.total_bytes == 64 * 65536 + 8


def test_lines_are_streamed_to_the_callback():
    lines: list[str] = []
    process.run(process.Request(["sh", "-c", "printf 'a\\nb\\r\\nc'"], on_line=lines.append))
    assert lines == ["a", "b", "c"]


@pytest.mark.waits
def test_a_timeout_kills_the_whole_group(tmp_path: Path):
    pidfile = tmp_path / "pid"
    outcome = process.run(process.Request(["sh", "-c", f"sleep 600 & echo $! > {pidfile}; wait"], timeout=1))
    assert outcome.timed_out and outcome.signal == signal.SIGKILL
    assert _gone(int(pidfile.read_text()))


@pytest.mark.waits
def test_a_silence_longer_than_allowed_ends_the_group_and_output_keeps_it_alive(tmp_path: Path):
    """``silence`` bounds the time between two outputs, not the whole run: a process that prints now and then
    runs past it (its silences are shorter), one that stops printing is ended as silent, its group with it."""
    talker = process.run(process.Request(["sh", "-c", "for i in 1 2 3 4 5 6; do echo $i; sleep 0.2; done"],
                                         silence=30, timeout=600))
    assert talker.ok and talker.output.split() == list("123456") and not talker.silent
    pidfile = tmp_path / "pid"
    started = time.monotonic()
    quiet = process.run(process.Request(["sh", "-c", f"echo hello; sleep 600 & echo $! > {pidfile}; wait"],
                                        silence=0.5, timeout=600, grace=0.5))
    assert quiet.silent and not quiet.timed_out and not quiet.ok and quiet.output == "hello\n"
    assert quiet.signal in (signal.SIGTERM, signal.SIGKILL) and time.monotonic() - started < 300
    assert _gone(int(pidfile.read_text()))
    stderr_talker = process.run(process.Request(["sh", "-c", "for i in 1 2 3 4; do echo $i >&2; sleep 0.2; done"],
                                                stderr="separate", silence=30))
    assert stderr_talker.ok and not stderr_talker.silent  # output on either stream is a sign of life


@pytest.mark.waits
def test_a_child_holding_stdout_does_not_keep_the_reader_waiting(tmp_path: Path):
    """The leader exits; its child keeps the pipe open: the reader stops after the linger and kills it
    (counted by what happened to the child, not by wall time)."""
    pidfile = tmp_path / "pid"
    outcome = process.run(process.Request(["sh", "-c", f"(sleep 600 & echo $! > {pidfile}; wait) & echo leader"],
                                          timeout=600))
    assert outcome.exit_code == 0 and outcome.output == "leader\n" and not outcome.timed_out
    assert _gone(int(pidfile.read_text()))


def test_the_memory_cap_is_an_address_space_limit():
    outcome = process.run(process.Request([sys.executable, "-c", "x = bytearray(3 << 30)"], memory_cap=1 << 30,
                                          stderr="separate"))
    assert outcome.exit_code != 0 and "MemoryError" in outcome.errors


def test_the_process_has_its_own_session_and_no_stdin():
    outcome = process.run(process.Request([sys.executable, "-c",
                                           "import os, sys; print(os.getsid(0) == os.getpid(), sys.stdin.read() == '')"]))
    assert outcome.output.split() == ["True", "True"]


@needs_bwrap
def test_the_sandbox_is_read_only_with_a_private_tmp_and_no_network(tmp_path: Path):
    (tmp_path / "open").mkdir()
    script = ("import os, socket\n"
              "for p in (%r, %r, '/tmp/t'):\n"
              "    try:\n        open(p, 'w').write('x'); print('wrote', p)\n"
              "    except OSError as e:\n        print('refused', p)\n"
              "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=5); print('net')\n"
              "except OSError as e:\n    print('nonet', e)\n") % (str(tmp_path / "closed"), str(tmp_path / "open" / "f"))
    outcome = process.run(process.Request([sys.executable, "-c", script], sandbox=sandbox.Spec(
        writable=(str(tmp_path / "open"),), readable=(str(tmp_path), sys.prefix)), cwd=tmp_path, timeout=120))
    # sys.prefix: a venv under /tmp (hidden inside by the private /tmp) is bound back, as run/sandboxed.py does
    assert f"refused {tmp_path / 'closed'}" in outcome.output
    assert f"wrote {tmp_path / 'open' / 'f'}" in outcome.output and "wrote /tmp/t" in outcome.output
    assert "nonet" in outcome.output and not (tmp_path / "closed").exists()
    assert not Path("/tmp/t").exists() or Path("/tmp/t").read_text() != "x"


def test_tipcgen_sandbox_off_makes_it_unavailable(monkeypatch):
    monkeypatch.setenv(sandbox.OFF_VAR, "off")
    assert sandbox.available() == (False, f"{sandbox.OFF_VAR}=off is set")


# ---------------------------------------------------------------- one way to start a process

_EXEC_NAMES = {"system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp"}


def process_starts(path: Path) -> list[str]:
    """Where a module starts a process other than through core/process.py: subprocess, pty, os.system,
    os.popen, os.exec*, os.spawn*, os.fork, os.posix_spawn (imported or called)."""
    found = []
    for node in nodes(path):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] in ("subprocess", "pty")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("subprocess", "pty"):
            found.append(f"{node.lineno}: from {node.module} import")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [f"{node.lineno}: from os import {a.name}" for a in node.names
                      if a.name in _EXEC_NAMES or a.name.startswith(("exec", "spawn"))]
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os"
              and (node.attr in _EXEC_NAMES or node.attr.startswith(("exec", "spawn")))):
            found.append(f"{node.lineno}: os.{node.attr}")
    return found


def test_no_module_starts_a_process_but_core_process():
    shipped = PACKAGE / "render" / "shipped"  # scripts copied into test_tipc/, importing nothing of tipcgen
    found = {str(p.relative_to(ROOT)): hits for p in sorted(PACKAGE.rglob("*.py"))
             if p != PACKAGE / "core" / "process.py" and not p.is_relative_to(shipped)
             for hits in [process_starts(p)] if hits}
    assert found == {}


def test_the_process_start_finder_finds_each_way(tmp_path: Path):
    probe = tmp_path / "m.py"
    probe.write_text("import subprocess\nimport os\nfrom os import execv\nimport pty\n"
                     "os.system('x')\nos.popen('x')\nos.spawnlp(0, 'x')\nos.execvp('x', [])\n", encoding="utf-8")
    hits = process_starts(probe)
    assert len(hits) == 7 and any("os.system" in h for h in hits) and any("pty" in h for h in hits)


def test_a_bwrap_that_is_installed_but_fails_is_no_sandbox(tmp_path: Path, monkeypatch):
    """In a container bwrap may exist and still fail (no user namespaces): then it is not available, with why."""
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv(sandbox.OFF_VAR, raising=False)
    found, why = sandbox.available()
    assert not found and "installed but fails here" in why and "No permissions" in why
    monkeypatch.setenv("PATH", str(tmp_path / "none"))
    assert sandbox.available() == (False, "bwrap (bubblewrap) is not installed")
