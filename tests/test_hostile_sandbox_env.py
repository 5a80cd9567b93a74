"""Issue #59 item 3: what a sandboxed process can reach besides files. Its environment is an allow-list
(core/sandbox.py KEPT, KEPT_PREFIXES: the caller's tokens never reach a step), and no host unix socket is
reachable (/run, /var/run, XDG_RUNTIME_DIR hidden; /tmp private; abstract sockets stay with the host's network
namespace; every other socket the host lists is covered). Real bwrap, real sockets."""
from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import needs_bwrap
from tipcgen.core import process, sandbox

SECRETS = {"GITHUB_TOKEN": "ghp_x", "AWS_SECRET_ACCESS_KEY": "a", "HF_TOKEN": "h", "SSH_AUTH_SOCK": "/run/ssh.sock",
           "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/0/bus", "NPM_TOKEN": "n", "GIT_ASKPASS": "/bin/true",
           "OPENAI_API_KEY": "o", "LD_PRELOAD": "/tmp/evil.so", "BASH_ENV": "/tmp/evil.sh", "ENV": "/tmp/e.sh",
           "PROMPT_COMMAND": "touch x", "http_proxy": "http://p:3128"}
HONEST = {"PATH": os.environ["PATH"], "HOME": "/root", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC",
          "PYTHONPATH": "/x", "PYTHONUNBUFFERED": "1", "FLAGS_use_cuda": "0", "GLOG_v": "0",
          "CUDA_VISIBLE_DEVICES": "0", "NVIDIA_VISIBLE_DEVICES": "all", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
          "TIPC_RUN_ID": "abc", "TIPC_PYTHON": "python3", "PADDLE_TRAINERS_NUM": "1", "TERM": "xterm"}

_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(names=st.lists(_NAME, min_size=1, max_size=20))
def test_only_allowed_names_pass(names):
    env = {**{name: "v" for name in names}, **SECRETS, **HONEST}
    kept = sandbox.Spec().environment(env)
    for name in kept:
        assert name in sandbox.KEPT or name.startswith(sandbox.KEPT_PREFIXES), name
    assert not set(SECRETS) & set(kept)
    assert set(HONEST) <= set(kept)  # must not fire: what a chain and tipcgen's runner read


def test_the_user_may_let_a_variable_through():
    env = {"WANDB_MODE": "offline", "GITHUB_TOKEN": "x", sandbox.ENV_VAR: " WANDB_MODE ,"}
    assert set(sandbox.Spec().environment(env)) == {"WANDB_MODE", sandbox.ENV_VAR}
    assert "GIT_CONFIG_COUNT" in sandbox.Spec(env_keep=("GIT_*",)).environment({"GIT_CONFIG_COUNT": "1"})


def _box(readable: tuple[str, ...] = (), writable: tuple[str, ...] = ()) -> sandbox.Spec:
    """A sandbox this interpreter runs in: its prefix bound back where it lies under /tmp (a checkout there, its
    venv with it), as run's own sandbox binds it (run/sandboxed.py)."""
    prefix = (sys.prefix,) if os.path.realpath(sys.prefix).startswith("/tmp") else ()
    return sandbox.Spec(readable=(*prefix, *readable), writable=writable)


def _sandboxed(code: str, env: dict[str, str] | None = None) -> process.Outcome:
    return process.run(process.Request([sys.executable, "-I", "-c", code], env=env, sandbox=_box(),
                                       timeout=60, stderr="separate"))


@needs_bwrap
def test_a_sandboxed_process_sees_only_the_allow_list():
    outcome = _sandboxed("import json, os; print(json.dumps(dict(os.environ)))", {**SECRETS, **HONEST})
    assert outcome.exit_code == 0, outcome.errors
    seen = json.loads(outcome.output)
    assert not set(SECRETS) & set(seen), seen
    assert {k: seen.get(k) for k in HONEST} == HONEST
    inherited = _sandboxed("import json, os; print(json.dumps(dict(os.environ)))")  # env=None: tipcgen's own
    assert set(json.loads(inherited.output)) <= {*os.environ} and "GITHUB_TOKEN" not in inherited.output


_CONNECT = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect(sys.argv[1])\n"
            "    print('CONNECTED')\nexcept OSError as exc:\n    print('refused', exc.errno)\n")


def _listening(folder: Path) -> tuple[socket.socket, str]:
    path = str(folder / f"tipcgen-test-{os.getpid()}.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(1)
    return server, path


@needs_bwrap
@pytest.mark.parametrize("where", ["run", "xdg_runtime_dir", "tmp"])
def test_no_host_unix_socket_is_reachable(where, monkeypatch):
    if where == "run":
        if not os.access("/run", os.W_OK):
            pytest.skip("/run is not writable here")
        folder = Path(tempfile.mkdtemp(dir="/run"))
    elif where == "xdg_runtime_dir":
        folder = Path(tempfile.mkdtemp(dir="/var/tmp" if os.access("/var/tmp", os.W_OK) else Path.home()))
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    else:
        folder = Path(tempfile.mkdtemp())
    server, path = _listening(folder)
    try:
        reach = process.run(process.Request([sys.executable, "-I", "-c", _CONNECT, path], timeout=30))
        assert "CONNECTED" in reach.output  # the test's own check: unsandboxed, it connects
        boxed = process.run(process.Request([sys.executable, "-I", "-c", _CONNECT, path], sandbox=_box(),
                                            timeout=60, stderr="separate"))
        assert boxed.exit_code == 0 and "refused" in boxed.output, boxed.output + boxed.errors
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


@needs_bwrap
@pytest.mark.parametrize("where", ["home", "bound_readable", "bound_writable"])
def test_a_host_socket_anywhere_else_is_covered(where, tmp_path):
    """A socket outside the hidden folders (an agent's under a home folder: ~/.gnupg/S.gpg-agent, an IDE's, a
    database's) or in a folder the sandbox binds again (the repository, a venv under /tmp) is reachable through
    its path alone, read-only mount or not: the sandbox covers each the host lists (/proc/net/unix)."""
    if where == "home":
        base = Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else Path.home()
        folder = Path(tempfile.mkdtemp(dir=base, prefix=".gnupg-like "))  # a space in the path, as any may hold
        spec = _box()
    else:
        folder = tmp_path / "repo"
        folder.mkdir()
        spec = _box(**{"readable" if where == "bound_readable" else "writable": (str(folder),)})
    server, path = _listening(folder)
    try:
        assert path in sandbox.host_sockets(inside=[str(folder)])
        boxed = process.run(process.Request([sys.executable, "-I", "-c", _CONNECT, path], sandbox=spec,
                                            timeout=60, stderr="separate"))
        assert boxed.exit_code == 0 and "refused" in boxed.output, boxed.output + boxed.errors
        # must not fire: the folder's other files are there as they are
        (folder / "data.txt").write_text("kept")
        seen = process.run(process.Request([sys.executable, "-I", "-c",
                                            f"print(open({str(folder / 'data.txt')!r}).read())"], sandbox=spec,
                                           timeout=60, stderr="separate"))
        assert seen.output.strip() == "kept", seen.errors
    finally:
        server.close()
        if where == "home":
            shutil.rmtree(folder, ignore_errors=True)


_LISTING_PATH = st.one_of(st.text(min_size=0, max_size=40).filter(lambda t: "\n" not in t and "\r" not in t),
                          st.sampled_from(["@abstract", "@/tmp/.X11-unix/X0", "/run/user/0/bus", "relative/sock",
                                           "/tmp/x.sock", "/proc/self/../net", "/ with space", "/"]))


@settings(max_examples=300, deadline=None)
@given(paths=st.lists(_LISTING_PATH, max_size=12))
def test_the_listing_yields_only_paths_that_are_sockets_now(paths, tmp_path_factory):
    """Whatever /proc/net/unix holds (abstract names, unbound entries, relative or odd paths, paths now gone or no
    longer a socket, spaces), only absolute paths that are a socket now, outside what the sandbox hides, come
    out: each one real socket in the listing exactly once."""
    folder = tmp_path_factory.mktemp("listing")
    server, real = _listening(folder)
    try:
        lines = ["Num       RefCount Protocol Flags    Type St Inode Path"]
        lines += [f"0000000000000000: 00000002 00000000 00010000 0001 01 {i} {p}".rstrip() for i, p in enumerate(paths)]
        lines.insert(len(lines) // 2 + 1, f"0000000000000000: 00000002 00000000 00010000 0001 01 9 {real}")
        lines.append(f"0000000000000000: 00000002 00000000 00010000 0001 01 9 {real}")
        found = sandbox.host_sockets("\n".join(lines), inside=[str(folder)])
        assert found.count(real) == 1
        for path in found:
            assert os.path.isabs(path) and not path.startswith(("/run/", "/tmp/x")), found
    finally:
        server.close()


@needs_bwrap
def test_the_hidden_folders_are_empty_and_the_rest_is_there():
    outcome = _sandboxed("import os; print(sorted(os.listdir('/run')), os.path.isdir('/usr/bin'))")
    assert outcome.exit_code == 0, outcome.errors
    assert outcome.output.strip() == "[] True"


def _gone_sockets(monkeypatch, tmp_path: Path, times: int) -> list[int]:
    """host_sockets answers, ``times`` times, a socket that went (with its folder) before bubblewrap mounted it, as
    a program's socket does when it ends between the listing and the mounts; then the host's own listing."""
    listed = sandbox.host_sockets
    calls: list[int] = []

    def gone(listing=None, inside=()):
        calls.append(1)
        if len(calls) <= times:
            return [str(Path("/var/tmp") / f"tipcgen-gone-{os.getpid()}-{tmp_path.name}" / "S.agent")]
        return listed(listing, inside)
    monkeypatch.setattr(sandbox, "host_sockets", gone)
    return calls


_COUNT = "import sys\nwith open(sys.argv[1], 'a') as f:\n    f.write('ran\\n')\nsys.exit(7)\n"


@needs_bwrap
def test_a_socket_gone_as_the_sandbox_mounts_is_a_second_start_not_a_failed_step(monkeypatch, tmp_path):
    """bubblewrap stops before the command when a socket it covers is gone by its mounts (`Can't mkdir parents`):
    a race with any program that ends, another test's sandbox included. The start is tried again with the sockets
    listed anew; the command runs once, its exit code its own."""
    calls = _gone_sockets(monkeypatch, tmp_path, times=1)
    counter = tmp_path / "count.txt"
    boxed = process.run(process.Request([sys.executable, "-I", "-c", _COUNT, str(counter)],
                                        sandbox=_box(writable=(str(tmp_path),)), timeout=60, stderr="separate"))
    assert boxed.exit_code == 7 and "bwrap" not in boxed.errors, boxed.errors
    assert counter.read_text() == "ran\n" and len(calls) == 2


@needs_bwrap
def test_a_sandbox_that_never_stands_is_bubblewraps_failure_after_a_few_starts_and_nothing_ran(monkeypatch, tmp_path):
    calls = _gone_sockets(monkeypatch, tmp_path, times=1000)
    counter = tmp_path / "count.txt"
    boxed = process.run(process.Request([sys.executable, "-I", "-c", _COUNT, str(counter)],
                                        sandbox=_box(writable=(str(tmp_path),)), timeout=60, stderr="separate"))
    assert boxed.exit_code == 1 and "Can't mkdir parents" in boxed.errors and not counter.exists()
    assert len(calls) == process.SANDBOX_STARTS


_ARGV_WORD = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=12)


@needs_bwrap
@settings(max_examples=20, deadline=None)
@given(words=st.lists(st.one_of(_ARGV_WORD, st.sampled_from(["-c", "$@", '"$0"', "--", "5>&-", "'", "\\", " "])),
                      max_size=5))
def test_a_command_started_by_the_sandboxs_ready_shell_gets_its_argv_and_no_descriptor_of_it(words, tmp_path_factory):
    """Where the sandbox covers a socket it starts the command by a shell that says it stands (sandbox.wrap): the
    command gets its argv word for word and no descriptor but its three (the ready pipe closed before it runs)."""
    folder = tmp_path_factory.mktemp("ready")
    server, path = _listening(folder)
    try:
        spec = _box(readable=(str(folder),))
        assert path in sandbox.host_sockets(inside=[str(folder)]) and spec.wrap(["x"], None, 99)[1]
        code = "import json, os, sys\nprint(json.dumps([sys.argv[1:], sorted(os.listdir('/proc/self/fd'))]))"
        boxed = process.run(process.Request([sys.executable, "-I", "-c", code, *words], sandbox=spec, timeout=60,
                                            stderr="separate"))
        assert boxed.exit_code == 0, boxed.errors
        argv, fds = json.loads(boxed.output)
        assert argv == words and fds == ["0", "1", "2", "3"]  # 3: the listing's own
    finally:
        server.close()
