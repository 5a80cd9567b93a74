"""The sandbox a process may run in: bubblewrap (``bwrap``, Debian's ``bubblewrap`` package).

Inside, the whole filesystem is read-only (``--ro-bind / /``) but the folders a ``Spec`` names
writable, ``/tmp`` is a private empty tmpfs, ``/dev`` and ``/proc`` are the sandbox's own, every
namespace is unshared (no network; a pid namespace, so nothing started inside outlives it), the
process is in a new session (no terminal to write to) and dies with tipcgen (``--die-with-parent``).

``available()`` says whether a working bwrap is here: it runs ``bwrap ... true`` once per process
(in a container bwrap may be installed and still fail: then it is not available, with the reason).
``TIPCGEN_SANDBOX=off`` makes it unavailable (the tests of the no-sandbox path; docs/SECURITY.md).
"""
from __future__ import annotations

import os
import shutil
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from tipcgen.core import process

INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap; dnf install bubblewrap)"
OFF_VAR = "TIPCGEN_SANDBOX"


@dataclass(frozen=True)
class Spec:
    """What the sandboxed process may write (folders, each bound read-write at its own path) and what it
    must still see when it lies under /tmp (which the sandbox replaces by an empty one)."""

    writable: tuple[str, ...] = ()
    readable: tuple[str, ...] = ()

    def wrap(self, argv: Sequence[str], cwd: str | Path | None = None) -> list[str]:
        return wrap(argv, self, cwd)


def _base(bwrap: str) -> list[str]:
    return [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--unshare-all", "--die-with-parent", "--new-session"]


def wrap(argv: Sequence[str], spec: Spec, cwd: str | Path | None = None) -> list[str]:
    """The bwrap command line that runs argv inside the sandbox (cwd: the folder it starts in)."""
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
    if cwd is not None:
        out += ["--chdir", os.path.realpath(cwd)]
    return out + ["--", *[str(a) for a in argv]]


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
