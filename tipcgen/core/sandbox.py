"""The sandbox a process may run in: bubblewrap (``bwrap``, Debian's ``bubblewrap`` package).

Inside, the whole filesystem is read-only (``--ro-bind / /``) but the folders a ``Spec`` names
writable, ``/tmp`` is a private empty tmpfs, ``/dev`` and ``/proc`` are the sandbox's own, every
namespace is unshared (no network; a pid namespace, so nothing started inside outlives it), the
process is in a new session (no terminal to write to) and dies with tipcgen (``--die-with-parent``).
No host unix socket is reachable (issue #59 item 3): ``/run`` (``/var/run``) and the user's runtime folder
(``XDG_RUNTIME_DIR``) are empty tmpfs too, ``/tmp`` is private, abstract sockets stay in the host's network
namespace, and every other socket bound to a path that the host's network namespace lists (``/proc/net/unix``:
``~/.gnupg``'s agent, an IDE's, a database's under a home folder) is covered by ``/dev/null`` (``host_sockets``). The environment is an allow-list (``environment``): the variables a chain, a probe and tipcgen's
runner read (``KEPT``, ``KEPT_PREFIXES``), never the caller's tokens (``GITHUB_TOKEN``, ``AWS_*``,
``SSH_AUTH_SOCK``, ...).

``available()`` says whether a working bwrap is here: it runs ``bwrap ... true`` once per process
(in a container bwrap may be installed and still fail: then it is not available, with the reason).
``TIPCGEN_SANDBOX=off`` makes it unavailable (the tests of the no-sandbox path; docs/SECURITY.md).
"""
from __future__ import annotations

import os
import shutil
import stat
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

from tipcgen.core import process

INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap; dnf install bubblewrap)"
OFF_VAR = "TIPCGEN_SANDBOX"
ENV_VAR = "TIPCGEN_SANDBOX_ENV"  # the user's own additions to the allow-list: NAME,NAME (docs/SECURITY.md)
# The environment a sandboxed process gets: these names, and every name with one of these prefixes.
KEPT = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "COLUMNS", "LINES",
        "NO_COLOR", "FORCE_COLOR", "TMPDIR", "LD_LIBRARY_PATH", "VIRTUAL_ENV", "CONDA_PREFIX",
        "CONDA_DEFAULT_ENV", "OPENBLAS_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "SOURCE_DATE_EPOCH")
KEPT_PREFIXES = ("LC_", "PYTHON", "FLAGS_", "GLOG_", "CUDA_", "CUDNN_", "NVIDIA_", "NCCL_", "OMP_", "MKL_",
                 "KMP_", "TIPC_", "TIPCGEN_", "PADDLE_", "PPNLP_")


@dataclass(frozen=True)
class Spec:
    """What the sandboxed process may write (folders, each bound read-write at its own path) and what it
    must still see when it lies under /tmp (which the sandbox replaces by an empty one)."""

    writable: tuple[str, ...] = ()
    readable: tuple[str, ...] = ()
    env_keep: tuple[str, ...] = ()  # more names kept (core/git.py's GIT_CONFIG_*), exact or ending in "*"
    # Folders that are an empty private tmpfs inside (each where it exists): a library's scratch under the read-only
    # home, which it must write and never reads back across runs (paddle.jit.to_static's ~/.cache/paddle/to_static_tmp)
    scratch: tuple[str, ...] = ()

    def wrap(self, argv: Sequence[str], cwd: str | Path | None = None, ready_fd: int | None = None) -> tuple[list[str], bool]:
        return wrap(argv, self, cwd, ready_fd)

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """The variables of env the sandboxed process gets: KEPT, KEPT_PREFIXES, env_keep's and the names the
        user lists in TIPCGEN_SANDBOX_ENV (comma-separated)."""
        exact = {name for name in self.env_keep if not name.endswith("*")}
        exact |= {name.strip() for name in env.get(ENV_VAR, "").split(",") if name.strip()}
        prefixes = KEPT_PREFIXES + tuple(name[:-1] for name in self.env_keep if name.endswith("*"))
        return {key: value for key, value in env.items() if key in KEPT or key in exact or key.startswith(prefixes)}


def hidden() -> list[str]:
    """The folders that hold the host's unix sockets (``/run``, ``/var/run``, the user's runtime folder), each
    replaced by an empty tmpfs in the sandbox; only real folders (a link, ``/var/run`` -> ``/run``, goes with
    its target)."""
    out: list[str] = []
    for path in ("/run", "/var/run", os.environ.get("XDG_RUNTIME_DIR", "")):
        if path and os.path.isabs(path) and os.path.isdir(path) and not os.path.islink(path):
            real = os.path.realpath(path)
            if real not in out and real != "/" and not any(real.startswith(p + "/") for p in out):
                out.append(real)
    return out


MAX_SOCKETS = 512  # host sockets covered in one sandbox, at most (a bwrap argument each; the listing's first)
_UNIX_LISTING = "/proc/net/unix"


def host_sockets(listing: str | None = None, inside: Sequence[str] = ()) -> list[str]:
    """The host's unix sockets bound to a path the sandbox would show: each path in ``listing`` (the text of
    /proc/net/unix: the sockets of tipcgen's network namespace; read when not given) that is absolute, is a socket
    now (not followed through a link) and lies outside what the sandbox hides (``/tmp``, ``hidden()``) unless under
    a folder it binds again (``inside``). A socket's connect needs no more than to see its path (a read-only
    mount does not stop it), so the sandbox covers each with ``/dev/null``."""
    if listing is None:
        try:
            with open(_UNIX_LISTING, "rb") as f:
                listing = f.read(8 << 20).decode("utf-8", errors="replace")
        except OSError:
            return []
    covered = tuple(c.rstrip("/") + "/" for c in ("/tmp", *hidden()))
    bound = tuple(os.path.realpath(b).rstrip("/") + "/" for b in inside)
    out: list[str] = []
    for line in listing.splitlines()[1:]:
        fields = line.split(None, 7)  # Num RefCount Protocol Flags Type St Inode Path (a path may hold spaces)
        if len(fields) < 8 or not fields[7].startswith("/"):  # unbound, or abstract (@name: the host's netns)
            continue
        path = os.path.normpath(fields[7])
        if path.startswith(covered) and not path.startswith(bound):
            continue
        try:
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                continue
        except OSError:
            continue
        if path not in out:
            out.append(path)
        if len(out) >= MAX_SOCKETS:
            break
    return out


def _base(bwrap: str) -> list[str]:
    out = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in hidden():
        out += ["--tmpfs", path]
    return out + ["--unshare-all", "--die-with-parent", "--new-session"]


def wrap(argv: Sequence[str], spec: Spec, cwd: str | Path | None = None,
         ready_fd: int | None = None) -> tuple[list[str], bool]:
    """The bwrap command line that runs argv inside the sandbox (cwd: the folder it starts in), and whether it says
    on ``ready_fd`` that the sandbox stands: where it covers host sockets, a socket gone between the listing and
    bubblewrap's mounts (a program's, as it ends) stops bubblewrap before argv runs. Then argv is started by a
    shell in the sandbox that first writes a byte to ``ready_fd`` and closes it: a start without that byte ran
    nothing, and may be tried again (core/process.py). Without a socket to cover, argv starts as it is."""
    bwrap = shutil.which("bwrap") or "bwrap"
    out = _base(bwrap)
    for path in spec.readable:
        real = os.path.realpath(path)
        if os.path.exists(real):
            out += ["--ro-bind", real, real]
    for path in spec.writable:
        real = os.path.realpath(path)
        if os.path.isdir(real):
            out += ["--bind", real, real]
    for path in spec.scratch:
        real = os.path.realpath(path)
        if os.path.isdir(real):
            out += ["--tmpfs", real]
    # After the binds: a socket in a folder bound again (the repository, a venv under /tmp) is covered too.
    sockets = host_sockets(inside=[*spec.readable, *spec.writable])
    for path in sockets:
        out += ["--ro-bind", "/dev/null", path]
    if cwd is not None:
        out += ["--chdir", os.path.realpath(cwd)]
    says = bool(sockets) and ready_fd is not None
    # bash, not sh: dash takes one digit for a descriptor; argv gets none of it
    ready = ["bash", "-c", f'printf . >&{ready_fd} && exec "$0" "$@" {ready_fd}>&-'] if says else []
    return out + ["--", *ready, *[str(a) for a in argv]], says


def available() -> tuple[bool, str]:
    """(whether processes can be sandboxed here, why not). TIPCGEN_SANDBOX=off says no."""
    if os.environ.get(OFF_VAR, "").strip().lower() in ("off", "0", "no", "false"):
        return False, f"{OFF_VAR}=off is set"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False, "bwrap (bubblewrap) is not installed"
    with _PROBE_LOCK:  # the flag check asks from 4 threads at once: one probe, not one per thread (issue #39)
        return _probe(bwrap)


_PROBE_LOCK = threading.Lock()


@lru_cache(maxsize=4)
def _probe(bwrap: str) -> tuple[bool, str]:
    """Whether this bwrap works here: one run of ``true`` in the sandbox, once per process and bwrap."""
    true = shutil.which("true") or "/bin/true"
    outcome = process.run(process.Request([*_base(bwrap), "--", true], stderr="separate", timeout=30,
                                          output_cap=1 << 14))
    if outcome.exit_code is None:
        return False, f"bwrap cannot run here ({outcome.error})"
    if outcome.exit_code != 0 or outcome.timed_out:
        why = outcome.errors.strip().splitlines()
        return False, f"bwrap is installed but fails here ({why[-1][:200] if why else f'exit {outcome.exit_code}'})"
    return True, ""
