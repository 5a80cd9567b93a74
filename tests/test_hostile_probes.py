"""Issue #34, "the repository's code runs in reading commands": a stranger's repository, read by lint, import
and doctor, runs nothing outside a sandbox and writes nothing through one; config text never becomes an
option or a program; a committed cache vouches for nothing; probes are bounded in output, time and
processes. Real scripts, real bwrap (where it works; the no-sandbox path by TIPCGEN_SANDBOX=off)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, fuzz_examples, needs_bwrap, tipcgen
from test_chain_proof import TUTORIAL
from tipcgen.configs import flag_cache, flag_check, script_help
from tipcgen.core import sandbox

CONFIG = "test_tipc/configs/m/train_infer_python.txt"
NO_SANDBOX = {sandbox.OFF_VAR: "off"}
_FLAGS = ("--epochs", "--output-dir", "--batch-size", "--pretrained", "--test-only", "--save-inference-dir")
ARGPARSE = ("import argparse\np = argparse.ArgumentParser()\n"
            + "".join(f"p.add_argument({f!r})\n" for f in _FLAGS) + "p.parse_args()\n")


@pytest.fixture(autouse=True)
def _probe_each_interpreter_once(doctor_probes_once):
    """doctor's probe of the interpreter itself (tipcgen's fixed code, which imports paddle) runs once per worker
    (conftest.doctor_probes_once): these tests are about the repository's code, which that probe never runs;
    every --help probe of a repository script still runs each time."""


def _payload(outside: Path, kind: str) -> str:
    """Code that, if it ever runs, leaves a mark: a file in the repository, one outside, a network try."""
    marks = {"open": "open({p!r}, 'w').write('pwned')",
             "system": "__import__('os').system('touch ' + {p!r})",
             "subprocess": "__import__('subprocess').run(['touch', {p!r}])"}[kind]
    return ("import socket, sys\n"
            + marks.format(p="PWNED_IN_REPO") + "\n" + marks.format(p=str(outside / "PWNED_OUTSIDE")) + "\n"
            "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=3)\n"
            "    sys.exit('NETWORK REACHED')\nexcept OSError:\n    pass\n")


def _repo(tmp_path: Path, train: str = ARGPARSE, config: str = TUTORIAL) -> tuple[Path, Path]:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    outside.mkdir()
    (repo / CONFIG).parent.mkdir(parents=True)
    (repo / CONFIG).write_text(config)
    (repo / "train.py").write_text(train)
    (repo / "export.py").write_text(ARGPARSE)
    (repo / "infer.py").write_text("import sys\n")
    return repo, outside


def _marks(repo: Path, outside: Path) -> list[str]:
    return sorted(str(p) for p in [*repo.rglob("PWNED*"), *outside.rglob("PWNED*")])


def _commands(repo: Path, extra: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    return [("lint", str(repo / CONFIG), "--root", str(repo), *extra),
            ("import", str(repo / CONFIG), *extra),
            ("doctor", "--root", str(repo), *extra)]


# ---------------------------------------------------------------- an import-time payload

@pytest.mark.parametrize("kind", ["open", "system", "subprocess"])
@pytest.mark.parametrize("where", ["script", "imported module"])
def test_reading_commands_run_no_payload_without_a_sandbox(tmp_path: Path, kind: str, where: str, monkeypatch):
    payload = _payload(tmp_path / "outside", kind)
    train = (payload + ARGPARSE) if where == "script" else ("import helper\n" + ARGPARSE)
    repo, outside = _repo(tmp_path, train)
    if where != "script":
        (repo / "helper.py").write_text(payload)
    monkeypatch.setenv("TIPCGEN_CACHE_DIR", str(tmp_path / "cache"))
    for command in _commands(repo):
        proc = tipcgen(*command, cwd=repo, env=NO_SANDBOX)
        assert _marks(repo, outside) == [], (command, proc.stdout, proc.stderr)
        shown = proc.stdout + proc.stderr
        assert "--help was not run" in shown and "--trust-repo" in shown and "bubblewrap" in shown, (command, shown)
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").rglob("*.json"))
    # The trust option is what lets it run (the payload's marks are then the user's choice).
    tipcgen("lint", str(repo / CONFIG), "--root", str(repo), "--trust-repo", cwd=repo, env=NO_SANDBOX)
    assert (outside / "PWNED_OUTSIDE").exists()


@needs_bwrap
@pytest.mark.parametrize("kind", ["open", "system", "subprocess"])
def test_in_the_sandbox_a_payload_writes_nothing_and_reaches_no_network(tmp_path: Path, kind: str, monkeypatch):
    repo, outside = _repo(tmp_path, _payload(tmp_path / "outside", kind) + ARGPARSE)
    monkeypatch.setenv("TIPCGEN_CACHE_DIR", str(tmp_path / "cache"))
    for command in _commands(repo):
        proc = tipcgen(*command, cwd=repo)
        assert _marks(repo, outside) == [], (command, proc.stdout, proc.stderr)
        assert "NETWORK REACHED" not in proc.stdout + proc.stderr
        assert "--help was not run" not in proc.stdout + proc.stderr  # it ran, in the sandbox


# ---------------------------------------------------------------- config text is never an option or a program

_OPTION_WORDS = st.tuples(st.sampled_from(["-c", "-Bc", "-Ec", "-sc", "-Sc", "-uc"]),
                          st.sampled_from(["__import__('os').system('touch PWNED')",
                                           "open('PWNED','w')", "__import__('pathlib').Path('PWNED').touch()"]))


@settings(max_examples=fuzz_examples(24), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(word=_OPTION_WORDS)
def test_a_command_word_like_an_option_never_executes(tmp_path_factory, word):
    """`-c<code>#.py` as a config's train script (a file of that name committed, so that it is probed): the probe
    is `python -- SCRIPT --help`, so the word is a script path, never `python -c CODE`. Unsandboxed and trusted,
    the strongest case: nothing but the file's own harmless code may run."""
    tmp_path = tmp_path_factory.mktemp("word")
    name = f"{word[0]}{word[1]}#.py"
    config = TUTORIAL.replace("norm_train:train.py", f"norm_train:{name}")
    repo, outside = _repo(tmp_path, config=config)
    (repo / name).write_text(ARGPARSE)
    env = dict(NO_SANDBOX, TIPCGEN_CACHE_DIR=str(tmp_path / "cache"))
    tipcgen("lint", str(repo / CONFIG), "--root", str(repo), "--trust-repo", cwd=repo, env=env)
    assert _marks(repo, outside) == []


def test_a_config_python_line_naming_a_script_never_runs_it(tmp_path: Path, monkeypatch):
    """`python:./tool.sh`: lint and doctor probe with the user's interpreter; the committed script never runs."""
    repo, outside = _repo(tmp_path, config=TUTORIAL.replace("python:python", "python:./tool.sh"))
    tool = repo / "tool.sh"
    tool.write_text(f"#!/bin/sh\ntouch PWNED_IN_REPO {outside}/PWNED_OUTSIDE\nexec python \"$@\"\n")
    tool.chmod(0o755)
    monkeypatch.setenv("TIPCGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TIPC_PYTHON", raising=False)
    for command in _commands(repo, ("--trust-repo",)):
        tipcgen(*command, cwd=repo, env=NO_SANDBOX)
        assert _marks(repo, outside) == [], command
    assert flag_check.probe_interpreter("python:./tool.sh\n", dict(os.environ))[0] == "python"
    assert flag_check.probe_interpreter("python:python3\n", dict(os.environ))[0] == "python3"


def test_only_python_files_inside_the_repository_are_probed(tmp_path: Path):
    repo, outside = _repo(tmp_path)
    (repo / "tool.sh").write_text("touch PWNED\n")
    (outside / "far.py").write_text(ARGPARSE)
    (repo / "link.py").symlink_to(outside / "far.py")
    for name in ("tool.sh", "../outside/far.py", "link.py", str(outside / "far.py"), "-c1#.py"):
        with pytest.raises(script_help.TipcgenError):
            script_help.checked_script(repo, name)
    assert script_help.checked_script(repo, "train.py") == repo / "train.py"


# ---------------------------------------------------------------- the cache is the user's

def test_a_committed_cache_entry_does_not_make_a_misspelt_key_pass(tmp_path: Path):
    """The cache the repository commits (.tipcgen/cache/flags/, named as tipcgen once named its entries) is never
    read: the misspelt key (--batch-size, the script has --batch_size) is still an error."""
    train = ARGPARSE.replace("'--batch-size'", "'--batch_size'")
    repo, _ = _repo(tmp_path, train)
    python = shutil.which("python")
    for script, data in (("train.py", train), ("export.py", ARGPARSE)):
        name = hashlib.sha256(data.encode() + b"\0" + python.encode()).hexdigest() + ".json"
        entry = repo / ".tipcgen/cache/flags" / name
        entry.parent.mkdir(parents=True, exist_ok=True)
        entry.write_text(json.dumps({"script": script, "flags": [{"names": [f], "takes_value": True}
                                                                 for f in (*_FLAGS, "--batch-size")]}))
    env = {"TIPCGEN_CACHE_DIR": "", "XDG_CACHE_HOME": str(tmp_path / "xdg"), sandbox.OFF_VAR: ""}
    proc = tipcgen("lint", str(repo / CONFIG), "--root", str(repo), "--trust-repo", cwd=repo, env=env)
    assert proc.returncode == 1 and "unknown-flag" in proc.stdout and "--batch-size" in proc.stdout, proc.stdout
    assert list((tmp_path / "xdg" / "tipcgen" / "flags").glob("*.json"))  # the user's cache holds the probe


@pytest.mark.parametrize("bad", ["not json", json.dumps({"flags": [{"names": ["--x\x1b]0;t\x07"], "takes_value": True}]}),
                                 json.dumps({"flags": "all"}), json.dumps({"flags": [{"names": [], "takes_value": 1}]}),
                                 # an entry of the older format (no choices, help, required), and those of wrong types
                                 json.dumps({"flags": [{"names": ["--x"], "takes_value": True}]}),
                                 json.dumps({"flags": [{"names": ["--x"], "takes_value": True, "choices": "ab",
                                                        "help": "", "required": False}]}),
                                 json.dumps({"flags": [{"names": ["--x"], "takes_value": True, "choices": [],
                                                        "help": None, "required": "yes"}]})])
def test_a_bad_cache_entry_is_ignored_and_probed_again(tmp_path: Path, monkeypatch, bad: str):
    repo, _ = _repo(tmp_path)
    monkeypatch.setenv("TIPCGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(sandbox.OFF_VAR, "off")
    python = shutil.which("python")
    first, cached = flag_check.script_flags(repo, "train.py", python, unsandboxed=True)
    assert not cached and not isinstance(first, str)
    [entry] = (tmp_path / "cache" / "flags").glob("*.json")
    entry.write_text(bad)
    again, cached = flag_check.script_flags(repo, "train.py", python, unsandboxed=True)
    assert not cached and again == first


def test_a_cache_entry_linked_to_a_huge_file_is_not_read(tmp_path: Path, monkeypatch):
    repo, _ = _repo(tmp_path)
    monkeypatch.setenv("TIPCGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(sandbox.OFF_VAR, "off")
    python = shutil.which("python")
    flag_check.script_flags(repo, "train.py", python, unsandboxed=True)
    [entry] = (tmp_path / "cache" / "flags").glob("*.json")
    big = tmp_path / "big"
    with big.open("wb") as f:
        f.truncate(400 << 20)  # sparse: 400 MiB that cost no disk
    entry.unlink()
    entry.symlink_to(big)
    found, cached = flag_check.script_flags(repo, "train.py", python, unsandboxed=True)
    assert not cached and not isinstance(found, str)


def test_the_cache_key_follows_the_repository_files_the_script_imports(tmp_path: Path):
    repo, _ = _repo(tmp_path, "import helper\nfrom pkg import mod\n" + ARGPARSE)
    (repo / "helper.py").write_text("X = 1\n")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "mod.py").write_text("from . import deep\n")
    (repo / "pkg" / "deep.py").write_text("Y = 1\n")
    data = (repo / "train.py").read_bytes()
    python = shutil.which("python")
    key = flag_cache.key(repo, "train.py", data, python, True)
    assert key != flag_cache.key(repo, "train.py", data, python, False)
    (repo / "pkg" / "deep.py").write_text("Y = 2\n")  # two imports down
    assert flag_cache.key(repo, "train.py", data, python, True) != key


def _imports_by_hand(root: Path, script: Path) -> list[Path]:
    """What the key follows, the plain way: every import's candidate files looked at one by one."""
    import ast

    top, seen, todo = root.resolve(), {}, [script]
    while todo and len(seen) < flag_cache._MAX_IMPORTED:
        path = todo.pop()
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError, OSError):
            continue
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [(0, alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                names = [(node.level, base)] + [(node.level, f"{base}.{a.name}" if base else a.name) for a in node.names]
            for level, name in names:
                for base_dir in [path.parent] if level else [root, script.parent]:
                    for _ in range(max(0, level - 1)):
                        base_dir = base_dir.parent
                    stem = base_dir.joinpath(*[p for p in name.split(".") if p])
                    for found in (stem.with_suffix(".py") if name else None, stem / "__init__.py"):
                        if (found is not None and found not in seen and found != script and found.is_file()
                                and found.resolve().is_relative_to(top)):
                            seen[found] = None
                            todo.append(found)
    return sorted(seen)


_MODULES = st.sampled_from(["helper", "pkg", "pkg.mod", "pkg.sub.deep", "os", "sys", "paddle", "tools.x", "missing"])
_IMPORT_LINES = st.one_of(
    _MODULES.map(lambda m: f"import {m}"),
    st.tuples(_MODULES, st.sampled_from(["mod", "deep", "x", "*", "helper"])).map(lambda t: f"from {t[0]} import {t[1]}"),
    st.tuples(st.integers(1, 3), st.sampled_from(["", "mod", "sub", "sub.deep"]), st.sampled_from(["deep", "mod", "y"]))
    .map(lambda t: f"from {'.' * t[0]}{t[1]} import {t[2]}"))


@settings(max_examples=fuzz_examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.dictionaries(st.sampled_from(["train.py", "helper.py", "pkg/__init__.py", "pkg/mod.py",
                                              "pkg/sub/__init__.py", "pkg/sub/deep.py", "tools/x.py", "tools/train.py"]),
                             st.lists(_IMPORT_LINES, max_size=4).map("\n".join), min_size=1),
       broken=st.booleans())
def test_the_files_the_key_follows_are_every_import_looked_at_one_by_one(tmp_path_factory, files, broken):
    """The key skips a name whose first part a folder does not hold (os, paddle): generated repositories of
    packages, relative imports and missing modules give the same files as looking at every candidate."""
    repo = tmp_path_factory.mktemp("imports")
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text + ("\nimport (" if broken and name == "helper.py" else "") + "\n")
    for script in [repo / name for name in files]:
        assert flag_cache._imported_files(repo, script) == _imports_by_hand(repo, script), (script, files)


@pytest.mark.waits
def test_a_timed_out_probe_is_not_cached(tmp_path: Path, monkeypatch):
    slow = "import os, time\nif not os.environ.get('FAST_HELP'):\n    time.sleep(600)\n" + ARGPARSE
    repo, _ = _repo(tmp_path, slow)
    monkeypatch.setenv("TIPCGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("FAST_HELP", raising=False)
    python = shutil.which("python")
    first, _ = flag_check.script_flags(repo, "train.py", python, timeout=1, unsandboxed=True)
    assert isinstance(first, str) and "did not finish in 1 s" in first
    assert "--probe-timeout" not in first  # lint, import and doctor have no such option
    monkeypatch.setenv("TIPCGEN_SANDBOX_ENV", "FAST_HELP")  # a variable the sandbox's allow-list lets through
    monkeypatch.setenv("FAST_HELP", "1")  # the probe finishes: asked again (the timeout is no part of the cache key,
    # so a ceiling stands in for the 1 s a loaded machine's Python start could miss)
    again, cached = flag_check.script_flags(repo, "train.py", python, timeout=120, unsandboxed=True)
    assert not cached and not isinstance(again, str)


# ---------------------------------------------------------------- bounded probes

_MEASURE = """
import json, sys
from pathlib import Path
from tipcgen.configs import script_help
try:
    script_help.probe(script_help.Script("train", "train.py"), Path(sys.argv[1]), "python", 600)
    said = "no error"
except script_help.TipcgenError as exc:
    said = exc.message
# VmHWM: the peak RSS of this process's memory since its exec (ru_maxrss would carry the forking parent's)
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"rss_kb": peak, "said": said}))
"""


@pytest.mark.parametrize("boxed", [True, False])
def test_a_help_printing_300_mb_keeps_tipcgen_small(tmp_path: Path, boxed: bool):
    if boxed and not sandbox.available()[0]:
        pytest.skip("no working bubblewrap here")
    flood = "import argparse, sys\nfor _ in range(300):\n    sys.stdout.write('x' * (1 << 20))\n"
    repo, _ = _repo(tmp_path, flood)
    env = dict(os.environ, PYTHONPATH=str(ROOT), **({} if boxed else NO_SANDBOX))
    proc = subprocess.run([sys.executable, "-c", _MEASURE, str(repo)], env=env, capture_output=True, text=True,
                          timeout=600)
    found = json.loads(proc.stdout.splitlines()[-1])
    assert found["rss_kb"] < 150 << 10, found  # tipcgen's own peak: far below the 300 MB printed
    assert "printed more than" in found["said"], found


def _alive(token: str) -> list[int]:
    """Processes whose command line holds token and are not zombies."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if token.encode() in (proc / "cmdline").read_bytes() and \
                    (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                out.append(int(proc.name))
        except OSError:
            continue
    return out


def _none_left(token: str, ceiling: float = 60.0) -> bool:
    end = time.monotonic() + ceiling
    while _alive(token):
        if time.monotonic() > end:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.waits
def test_a_child_holding_stdout_is_killed_and_the_probe_answers(tmp_path: Path, monkeypatch):
    """--help forks a child that keeps stdout open; the leader prints the help and exits: the probe answers with
    the flags (no timeout) and the child, found by its pid, is dead afterwards."""
    token = f"tipcgen-held-{os.getpid()}-{time.monotonic_ns()}"
    held = (f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', {token!r}])\n"
            + ARGPARSE)
    repo, _ = _repo(tmp_path, held)
    monkeypatch.setenv(sandbox.OFF_VAR, "off")
    flags = script_help.probe(script_help.Script("train", "train.py"), repo, "python", 600)
    assert {f.name for f in flags} >= {"--epochs", "--batch-size"}
    assert _none_left(token)


def test_a_daemon_started_by_help_does_not_outlive_lint(tmp_path: Path, monkeypatch):
    """A daemon (its own session, double fork) started by --help: in the sandbox its pid namespace ends with the
    probe; without one the probe does not run at all. Either way nothing of it is left after lint."""
    token = f"tipcgen-daemon-{os.getpid()}-{time.monotonic_ns()}"
    daemon = ("import os, sys\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
              f"        os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(600)', {token!r}])\n"
              "    os._exit(0)\n" + ARGPARSE)
    repo, _ = _repo(tmp_path, daemon)
    monkeypatch.setenv("TIPCGEN_CACHE_DIR", str(tmp_path / "cache"))
    try:
        proc = tipcgen("lint", str(repo / CONFIG), "--root", str(repo), cwd=repo)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert _none_left(token)
    finally:
        for pid in _alive(token):
            os.kill(pid, 9)


def test_flag_names_from_help_are_escaped_before_printing(tmp_path: Path, monkeypatch):
    escaped = ARGPARSE.replace("'--batch-size'", "'--batch\\x1b]0;owned\\x07size'")
    repo, _ = _repo(tmp_path, escaped)
    monkeypatch.setenv("TIPCGEN_CACHE_DIR", str(tmp_path / "cache"))
    proc = tipcgen("lint", str(repo / CONFIG), "--root", str(repo), "--trust-repo", cwd=repo, env=NO_SANDBOX)
    assert "unknown-flag" in proc.stdout and "\x1b" not in proc.stdout and "\x07" not in proc.stdout, proc.stdout
