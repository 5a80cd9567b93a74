"""The suite's options checked (modes, chains, limits) and its output folder: tipcgen suite owns only
what it created there.

A folder is the suite's when it is new or empty, or holds only what a suite writes (suite.json,
junit.xml, runs/, work/ and the marker file) with the marker or a suite.json among them; anything else
(a repository, a user's own runs/ or work/) is refused before anything is written or removed. A chain's
repository may not be the folder or lie inside it (its working copy would be copied into itself).
"""
from __future__ import annotations

import math
import os
import threading
from pathlib import Path

from tipcgen.core import writes
from tipcgen.core.errors import TipcgenError
from tipcgen.core.text import terminal
from tipcgen.core.writes import write_file
from tipcgen.format.paths import JUNIT_XML, SUITE_JSON, SUITE_MARKER, SUITE_RUNS, SUITE_WORK, run_rel
from tipcgen.suite.suite import Chain, chain_of_name

OWNED = frozenset({SUITE_JSON, JUNIT_XML, SUITE_RUNS, SUITE_WORK, SUITE_MARKER})
MAX_TIMEOUT = min(10 ** 7, threading.TIMEOUT_MAX)  # seconds (about 115 days): a timer cannot wait longer
_HINT = "choose a new or empty folder for --output (tipcgen suite replaces what it wrote there, and only that)"


def check_limits(timeout: float, jobs: int) -> None:
    """--timeout finite and positive (at most MAX_TIMEOUT), --jobs positive: else exit 2 with the reason."""
    if not math.isfinite(timeout) or timeout <= 0 or timeout > MAX_TIMEOUT:
        raise TipcgenError(f"--timeout {timeout}: expected a finite number of seconds above 0, at most {MAX_TIMEOUT:g}",
                           "give each chain a time limit such as --timeout 3600")
    if jobs < 1:
        raise TipcgenError(f"--jobs {jobs}: expected 1 or more", "run chains side by side with e.g. --jobs 2")


def check_modes(modes: list[str]) -> list[str]:
    from tipcgen.run.pipeline import check_mode

    return [check_mode(mode) for mode in modes]


def check_chains(chains: list[str]) -> list[str]:
    known = sorted(set(chain_of_name().values()))
    for chain in chains:
        if chain not in known:
            raise TipcgenError(f"unknown chain '{terminal(chain)}'", "use one of: " + ", ".join(known))
    return chains


def checked_links(out: Path, root: Path, chains: list[Chain]) -> Path:
    """The output folder (absolute, not resolved) after refusing a link on the way to it from --root (or, for
    a folder outside --root, from the current folder, when it lies there), and a link on the way to each
    chain's run folder in its repository (a working copy keeps links as links: the chain would write
    through it). Reads only; before anything is written or run."""
    top = Path(os.path.abspath(root))
    out = Path(os.path.abspath(out))
    writes.check_no_links(top if out == top or top in out.parents else writes.owned_root(out), out,
                          "the suite's output folder")
    for chain in chains:
        writes.check_no_links(chain.root, Path(chain.root) / run_rel(chain.model, chain.mode, chain.chain),
                              f"the run folder of {chain.key}", inside=True)
    return out


def check_output(out: Path, roots: list[Path]) -> None:
    """Refuse an output folder the suite did not create, or one that holds a chain's repository. Reads only."""
    shown = terminal(out)
    for root in roots:
        root = root.resolve()
        if out == root or root.is_relative_to(out):
            raise TipcgenError(f"--output {shown} holds the repository {terminal(root)} that a chain runs (its working "
                               "copy would be copied into itself)", _HINT)
    if out.is_symlink() or out.exists() and not out.is_dir():
        raise TipcgenError(f"--output {shown} is not a folder", _HINT)
    names = {entry.name for entry in out.iterdir()} if out.is_dir() else set()
    if not names:
        return
    other = sorted(names - OWNED)
    if other or not names & {SUITE_MARKER, SUITE_JSON}:
        found = ", ".join(terminal(name) for name in other[:5]) or ", ".join(sorted(names))
        raise TipcgenError(f"--output {shown} holds files that tipcgen suite did not write ({found}); nothing "
                           "was written or removed", _HINT)


def claim_output(out: Path) -> None:
    """Create the folder (with its marker) and remove the last suite's runs/ and work/ (a link: the link)."""
    writes.make_dirs(out, out)
    for name in (SUITE_RUNS, SUITE_WORK):
        path = out / name
        if path.is_symlink() or path.is_file():
            writes.remove_file(out, path)
        elif path.is_dir():
            writes.remove_tree(out, path)
    write_file(out / SUITE_MARKER, "tipcgen suite wrote this folder: it replaces suite.json, junit.xml, runs/ and "
               "work/ here on its next run, and refuses a folder without this file.\n", within=out)
