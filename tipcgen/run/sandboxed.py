"""``tipcgen run --sandbox``: the whole chain (prepare.sh and the runner) in core/sandbox.py's sandbox, with
only the repository and the run folder writable and no network.

``spec`` builds the sandbox of a run (refusing ``--sandbox`` where no bwrap works, exit 2, naming how to
install it); ``explain_network`` adds to a failed step that tried the network (its log says ``Network is
unreachable``, ``Temporary failure in name resolution``, ``ConnectionError``, ...) why: a reproduction's
lite chain must be self-contained.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from tipcgen.core import inputs, sandbox, writes
from tipcgen.core.errors import RunError, TipcgenError
from tipcgen.format.words import FAILED
from tipcgen.results.summary import Summary

NETWORK_NOTE = ("it tried the network, which run --sandbox has none of: a lite chain must be self-contained "
                "(its data and weights in the repository or prepared before the run, never downloaded by a step)")
_NETWORK = re.compile(r"Network is unreachable|Temporary failure in name resolution|Name or service not known|"
                      r"ConnectionError|Could not resolve host|unable to resolve host address|"
                      r"No address associated with hostname|Failed to establish a new connection|"
                      r"getaddrinfo failed|URLError")
_LOG_BYTES = 16 << 20


def spec(root: Path, run_dir: Path, env: dict[str, str], python: str | None = None) -> sandbox.Spec:
    """The run's sandbox: the repository and the run folder writable; what the chain must still see under
    /tmp (the interpreter's prefix, the data folder, PYTHONPATH) bound back read-only. A RunError (exit 2)
    where no sandbox can be had."""
    found, why = sandbox.available()
    if not found:
        raise RunError(f"--sandbox: no sandbox can be had here ({why})",
                       f"{sandbox.INSTALL_HINT}, or run without --sandbox")
    writable = [str(root)]
    if not run_dir.resolve().is_relative_to(root.resolve()):
        writes.make_dirs(writes.owned_root(run_dir), run_dir, "the run folder")  # bwrap binds what exists
        writable.append(str(run_dir))
    # The interpreter's prefix both as named (a venv: bin/python is a link, its site-packages beside it) and as
    # resolved (the base install the link leads to): a venv under /tmp hid its packages when only the second was.
    prefixes = [str(Path(python).absolute().parent.parent), str(Path(python).resolve().parent.parent)] if python else []
    seen = [*(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p), env.get("TIPC_DATA_DIR", ""),
            env.get("TIPC_MODEL_DIR", ""), *prefixes, env.get("VIRTUAL_ENV", "")]
    return sandbox.Spec(writable=tuple(writable),
                        readable=tuple(p for p in seen if p and os.path.realpath(p).startswith("/tmp")),
                        scratch=scratch(env))


# paddle.jit.to_static writes the code it converts under ~/.cache/paddle/to_static_tmp/<pid> (utils.get_temp_dir),
# which the read-only home would refuse: every export through to_static failed in the sandbox.
TO_STATIC_TMP = (".cache", "paddle", "to_static_tmp")


def scratch(env: dict[str, str]) -> tuple[str, ...]:
    """The scratch folders a chain's libraries write under the step's home (HOME, as the sandbox keeps it), each
    made on the host where it is missing (bwrap mounts on what exists), to be an empty tmpfs in the sandbox."""
    home = env.get("HOME") or os.path.expanduser("~")
    if not home or not os.path.isabs(home):
        return ()
    path = os.path.join(home, *TO_STATIC_TMP)
    try:
        writes.make_dirs(home, path, "paddle's to_static scratch")  # a link on the way is refused, never followed
    except (TipcgenError, OSError):
        return ()
    return (path,)


def _tried_network(root: Path, log: str, tail: list[str]) -> bool:
    if any(_NETWORK.search(line) for line in tail):
        return True
    if not log:
        return False
    try:
        text = inputs.tail(root / log, "step log", _LOG_BYTES, folder=root).decode("utf-8", errors="replace")
    except TipcgenError:
        return False
    return bool(_NETWORK.search(text))


def explain_network(summary: Summary, root: Path) -> None:
    """Each failed step whose log shows a network error says why it failed in the sandbox."""
    for step in summary.steps:
        if step.status == FAILED and NETWORK_NOTE not in (step.note or "") and \
                _tried_network(root, step.log or "", list(step.tail or [])):
            step.note = f"{step.note}; {NETWORK_NOTE}" if step.note else NETWORK_NOTE


def doctor_row() -> tuple[str, str, str]:
    """doctor's sandbox row: (status, detail, fix)."""
    from tipcgen.configs.script_help import TRUST_OPTION

    found, why = sandbox.available()
    if found:
        return "ok", "bubblewrap works: the scripts' --help runs sandboxed; run --sandbox is available", ""
    return ("warn", f"no sandbox ({why}): lint, import and doctor do not run the scripts' --help (unless "
                    f"{TRUST_OPTION}); run --sandbox is refused", sandbox.INSTALL_HINT)
