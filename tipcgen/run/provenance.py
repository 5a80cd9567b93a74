"""Where a run's figures came from: descriptor, code, packages, device, data and seeds.

Collected once before a chain's first step and written into every summary.json (``provenance``), so a
figure can be traced back to the tree, the data and the stack that produced it. Never imports paddle,
in tipcgen's process or the chain's: versions come from the chain's own interpreter (one probe process,
which also answers tipcgen run's paddle check), read from the packages' metadata, and CUDA from
paddle's version file read as text. The probes (that process, one git, nvidia-smi where there is one)
start together and run beside tipcgen's own work; each is bounded (timeouts, a hashing budget) and
says what it could not find instead of failing the run.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tipcgen.core import git, inputs, isolated, process
from tipcgen.core.errors import TipcgenError
from tipcgen.run.seeds import seeds
from tipcgen.format import paths

if TYPE_CHECKING:
    from tipcgen.core.sandbox import Spec

HASH_LIMIT = 64 * 1024 * 1024  # files up to this size are hashed (sha256); larger ones get size + mtime
HASH_BUDGET = 256 * 1024 * 1024  # at most this many bytes hashed per run, in all
MAX_DATA_FILES = 64
_PROBE_TIMEOUT = 30

# Runs in the chain's interpreter, the one process that looks at it before a run (tipcgen run's paddle
# check and provenance): whether it finds paddle (find_spec: no import, paddle's import costs seconds),
# the versions from the packages' dist-info folders on sys.path (what importlib.metadata reads, without
# its 50 ms import; importlib.metadata only where paddle is found without a dist-info), and CUDA from
# paddle's version file read as text.
_VERSIONS_PROBE = r"""
import importlib.util, json, os, re, sys
out = {"python": sys.version.split()[0], "executable": sys.executable}
spec = importlib.util.find_spec("paddle")
out["paddle_found"] = spec is not None
folders = {}
for entry in sys.path:
    try:
        names = os.listdir(entry or ".")
    except OSError:
        continue
    for name in names:
        for suffix in (".dist-info", ".egg-info"):
            if name.endswith(suffix):
                dist = re.sub(r"[-_.]+", "-", name[:-len(suffix)].split("-", 1)[0]).lower()
                folders.setdefault(dist, os.path.join(entry or ".", name))

def version(dist):
    for meta in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(folders[dist], meta), encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
                    if not line.strip():
                        return None
        except OSError:
            continue
    return None

for key, dists in (("paddle", ("paddlepaddle-gpu", "paddlepaddle")), ("paddlenlp", ("paddlenlp",))):
    out[key] = None
    for dist in dists:
        found = version(dist) if dist in folders else None
        if found is None and key == "paddle" and spec is not None and not any(d in folders for d in dists):
            import importlib.metadata as md
            try:
                found = md.version(dist)
            except md.PackageNotFoundError:
                pass
        if found:
            out[key] = found; out[key + "_dist"] = dist; break
if spec and spec.submodule_search_locations:
    path = os.path.join(list(spec.submodule_search_locations)[0], "version", "__init__.py")
    try:
        text = open(path, encoding="utf-8").read()
        for name in ("cuda_version", "cudnn_version", "commit"):
            m = re.search(r"^%s\s*=\s*['\"]([^'\"]*)['\"]" % name, text, re.M)
            out["paddle_" + name] = m.group(1) if m else None
    except OSError:
        pass
print(json.dumps(out))
"""


class Probes:
    """The look at the chain's interpreter (one process: paddle found, versions, CUDA build), the
    repository (one ``git status``) and the GPUs (``nvidia-smi``, where there is one), all started at
    once and read when needed, so they overlap each other and tipcgen's own work. Each is bounded by
    _PROBE_TIMEOUT from the start; ``close`` stops any still running. ``sandbox``: run --sandbox's, in which the
    interpreter probe runs too (the interpreter a config names is the repository's choice); git runs through
    core/git.py."""

    def __init__(self, root: Path | None, python: str | None, env: dict[str, str] | None = None,
                 want: tuple[str, ...] = ("versions", "git", "gpus"), sandbox: Spec | None = None) -> None:
        self.python, self.env, self.started = python, env, time.monotonic()
        self._procs: dict[str, process.Running] = {}
        self._done: dict[str, tuple[int, str] | None] = {}
        self._data: dict[str, bytes] = {}
        self.git_missing = git.found() is None
        self.smi = shutil.which("nvidia-smi", path=(env or os.environ).get("PATH"))
        if "versions" in want and python:
            self._start("versions", isolated.command(python, _VERSIONS_PROBE), env=env, sandbox=sandbox)
        if "git" in want and root is not None and not self.git_missing:
            # One process: the commit (# branch.oid) and the changed tracked files (v2 entries, NUL-ended), which
            # is also the run's first tracked-files snapshot (tracked.from_status): one git status, not two.
            try:
                self._procs["git"] = git.start(["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=no"],
                                               root, timeout=_PROBE_TIMEOUT, output_cap=1 << 22)
            except OSError:
                pass
        if "gpus" in want and self.smi:
            self._start("gpus", [self.smi, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"], env=env)

    def _start(self, key: str, cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None,
               sandbox: Spec | None = None) -> None:
        try:
            self._procs[key] = process.start(process.Request(cmd, cwd=cwd, env=env, stderr="discard", sandbox=sandbox,
                                                             timeout=_PROBE_TIMEOUT, output_cap=1 << 22))
        except OSError:
            pass

    def output(self, key: str) -> tuple[int, str] | None:
        """(exit code, stdout) of one probe, waiting for it; None when it did not start or ran out of time."""
        if key not in self._done:
            proc, result = self._procs.get(key), None
            if proc is not None:
                outcome = proc.finish()
                result = None if outcome.timed_out else (outcome.exit_code, outcome.output)
                if result is not None and result[0] == 0 and not outcome.truncated:
                    self._data[key] = outcome.data
            self._done[key] = result
        return self._done[key]

    def close(self) -> None:
        for key, proc in self._procs.items():
            if key not in self._done:
                proc.kill()
            proc.finish()

    def versions(self) -> dict[str, Any]:
        """Python, paddle, paddlenlp and paddle's CUDA/cuDNN build, as the chain's interpreter sees them;
        ``paddle_found``: whether that interpreter finds a paddle package at all."""
        if not self.python:
            return {"note": "the chain's interpreter was not found"}
        result = self.output("versions")
        if result is None or result[0] != 0:
            return {"note": f"{self.python} could not report its versions"}
        try:
            record = json.loads(result[1].strip().splitlines()[-1])
        except (ValueError, IndexError):
            return {"note": f"{self.python} printed no version record"}
        return record if isinstance(record, dict) else {"note": f"{self.python} printed no version record"}

    def git(self, root: Path) -> dict[str, Any]:
        """The commit of the user's repository and whether tracked files differ from it."""
        if self.git_missing:
            return {"commit": None, "dirty": None, "note": "git is not installed"}
        result = self.output("git")
        lines = result[1].split("\0") if result is not None and result[0] == 0 else []
        commit = next((line.split()[2] for line in lines if line.startswith("# branch.oid ")), "(initial)")
        if commit == "(initial)":
            return {"commit": None, "dirty": None, "note": f"{root} is not in a git repository (or has no commit)"}
        changed, source = [], False
        for line in lines:
            if source:  # a rename's or copy's source path, after its entry
                source = False
            elif line and not line.startswith("#"):
                changed.append(line)
                source = line.startswith("2 ")
        return {"commit": commit, "dirty": bool(changed), "changed_files": len(changed),
                "note": "dirty: tracked files differ from the commit" if changed else ""}

    def git_status(self) -> bytes | None:
        """The git probe's whole answer (``git status --porcelain=v2 -z``), None where git gave none."""
        self.output("git")
        return self._data.get("git")

    def device(self) -> dict[str, Any]:
        """The GPUs nvidia-smi lists (name, driver), or that there is none; the CPU count either way."""
        env = self.env or os.environ
        info: dict[str, Any] = {"cpu_count": os.cpu_count(), "cuda_visible_devices": env.get("CUDA_VISIBLE_DEVICES")}
        if self.smi is None:
            info["gpus"] = []
            info["note"] = "no nvidia-smi: CPU only"
            return info
        result = self.output("gpus")
        info["gpus"] = [line.strip() for line in result[1].splitlines() if line.strip()] if result and result[0] == 0 else []
        return info


def git_info(root: Path) -> dict[str, Any]:
    """The commit of the user's repository and whether tracked files differ from it."""
    probes = Probes(root, None, want=("git",))
    try:
        return probes.git(root)
    finally:
        probes.close()


def versions(python: str | None, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Python, paddle, paddlenlp and paddle's CUDA/cuDNN build, as the chain's interpreter sees them."""
    probes = Probes(None, python, env, want=("versions",))
    try:
        return probes.versions()
    finally:
        probes.close()


def device_info(env: dict[str, str] | None = None) -> dict[str, Any]:
    """The GPUs nvidia-smi lists (name, driver), or that there is none; the CPU count either way."""
    probes = Probes(None, None, env, want=("gpus",))
    try:
        return probes.device()
    finally:
        probes.close()


def file_checksum(path: Path, budget: list[int]) -> dict[str, Any]:
    """sha256 of a file up to HASH_LIMIT while the budget lasts; else its size and mtime (and says which)."""
    try:
        stat = path.stat()
    except OSError as exc:
        return {"path": str(path), "method": "missing", "note": exc.strerror or str(exc)}
    if path.is_dir():  # a data folder (an ImageFolder tree): its files, counted, not hashed
        return {"path": str(path), **folder_size(path)}
    entry = {"path": str(path), "size": stat.st_size}
    if stat.st_size <= HASH_LIMIT and stat.st_size <= budget[0]:
        digest = hashlib.sha256()
        try:  # a regular file (a FIFO is never waited on, a device never read: core/inputs.py), at most its size
            with inputs.open_binary(path, "data file") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
                    if handle.tell() > HASH_LIMIT:
                        break
        except TipcgenError as exc:
            return {"path": str(path), "method": "missing", "note": exc.message}
        budget[0] -= stat.st_size
        entry.update(method="sha256", sha256=digest.hexdigest())
    else:
        entry.update(method="size+mtime", mtime=int(stat.st_mtime))
    return entry


def folder_size(path: Path, limit: int = 100_000) -> dict[str, Any]:
    """The number of files in a folder and their total size (links not followed; at most limit files)."""
    count = size = 0
    for dirpath, _, names in os.walk(path):
        for name in names:
            try:
                size += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                continue
            count += 1
            if count >= limit:
                return {"method": "folder", "files": count, "size": size, "note": f"counted the first {limit} files"}
    return {"method": "folder", "files": count, "size": size}


def data_files(root: Path, desc: Any, data_dir: str | None) -> list[Path]:
    """The descriptor's lite files, the whole data files under TIPC_DATA_DIR; else that folder's files."""
    found: list[Path] = []
    spec = getattr(desc, "data", None)
    if spec is not None:
        for item in spec.files:
            if item.lite:
                found.append(root / item.lite)
            if item.whole and data_dir:
                found.append(Path(data_dir) / item.whole)
    elif data_dir and Path(data_dir).is_dir():
        found = sorted(p for p in Path(data_dir).iterdir() if p.is_file())
    return list(dict.fromkeys(found))[:MAX_DATA_FILES]


def load_descriptor(root: Path, model: str | None = None) -> tuple[Any, dict[str, Any]]:
    """The descriptor `tipcgen init` rendered this tree's ``model`` from (via the answers file; the
    first model without one, or when none matches), and its hashes. ``tipcgen run`` calls it once
    (pipeline.run) and hands the descriptor down to the config's checks and the run."""
    from tipcgen.descriptor import answers as answer_file

    if not (root / paths.ANSWERS).is_file():
        return None, {"note": f"no {paths.ANSWERS}: test_tipc/ was not rendered by tipcgen init here"}
    try:
        found = answer_file.rendered_descriptor(root, model, or_first=True)
    except TipcgenError as exc:
        return None, {"note": f"the descriptor could not be read: {exc.message}"}
    if found is None:
        return None, {"note": f"{paths.ANSWERS} records no model"}
    desc, reference, rendered = found
    current = answer_file.sha256_of(Path(desc.source))
    return desc, {"source": reference, "sha256": current, "rendered_sha256": rendered,
                  "changed_since_render": current != rendered}


def _shown(path: Path, root: Path) -> str:
    """A path relative to the repository when it is inside it (so summaries from two clones compare)."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def collect(root: Path, config_path: Path, probes: Probes, env: dict[str, str], data_dir: str | None = None,
            desc: Any = None, descriptor_info: dict[str, Any] | None = None) -> dict[str, Any]:
    """The provenance record of one run (see the module docstring); `root` is the user's repository.
    The data is hashed here while the probes (started earlier) run; then their answers are read."""
    budget = [HASH_BUDGET]
    config_text = inputs.read_bytes(config_path, "config").decode("utf-8", errors="replace")
    data = [dict(file_checksum(path, budget), path=_shown(path, root)) for path in data_files(root, desc, data_dir)]
    return {
        "descriptor": descriptor_info or {"note": "no descriptor"},
        "config_sha256": hashlib.sha256(config_text.encode("utf-8")).hexdigest(),
        "git": probes.git(root),
        "versions": probes.versions(),
        "device": probes.device(),
        "data": data,
        "data_hashing": {"sha256_up_to_bytes": HASH_LIMIT, "budget_bytes": HASH_BUDGET,
                         "larger_files": "size+mtime"},
        "seeds": seeds(config_text, env, root),
    }


def rows(record: dict[str, Any]) -> list[tuple[str, str]]:
    """The record as (label, text) rows for the report's Provenance table."""
    if not record:
        return []
    git, ver, desc, dev = (record.get(k) or {} for k in ("git", "versions", "descriptor", "device"))
    out = [("descriptor", f"{desc.get('source', '-')} sha256 {str(desc.get('sha256', ''))[:12]}"
            + (" (changed since render)" if desc.get("changed_since_render") else "") if desc.get("sha256")
            else desc.get("note", "-")),
           ("git commit", (git.get("commit") or "")[:12] + (" (dirty)" if git.get("dirty") else "")
            if git.get("commit") else git.get("note", "-")),
           ("Python (chain)", str(ver.get("python") or ver.get("note", "-"))),
           ("paddle", str(ver.get("paddle") or "not installed")
            + (f", CUDA {ver['paddle_cuda_version']}" if ver.get("paddle_cuda_version") not in (None, "", "False") else "")),
           ("paddlenlp", str(ver.get("paddlenlp") or "not installed")),
           ("GPUs", ", ".join(dev.get("gpus") or []) or dev.get("note", "none"))]
    for entry in record.get("data") or []:
        value = (f"sha256 {entry['sha256'][:12]}" if entry.get("method") == "sha256"
                 else f"folder of {entry.get('files')} files, {entry.get('size')} bytes" if entry.get("method") == "folder"
                 else f"{entry.get('method')} {entry.get('size', '')}")
        out.append((f"data {Path(entry['path']).name}", value))
    seeds_found = record.get("seeds") or {}
    out.append(("seeds", ", ".join(f"{k}={v}" for k, v in seeds_found.items())
                or "none found (the config passes none, the train script sets none, its log prints none): "
                   "a second run may differ"))
    return out
