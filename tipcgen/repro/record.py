"""What a training wrote, recorded when the claim is made (issue #59): the proofs read content, never a time.

``tipcgen run`` hands the generated runner the read end of a pipe; the runner prints ``[tipc] WAIT ...`` and
waits for tipcgen's answer before a train, eval or export step starts and after a training ends (words.WAIT,
run/pipeline.py), so that a ``Recorder`` takes each record while no step runs:

- before a train step starts: every weight file already in the repository (``WEIGHT_SUFFIXES``, tracked or not,
  links to files followed, outside the run's own folder and ``.git``; under test_tipc/output, where earlier runs
  left their checkpoints, only those git tracks; at most ``MAX_FILES`` files of at most
  ``HASH_BUDGET`` bytes in all, the rest counted and said in the proof's note): its bytes' sha256 always, its
  parameters' digests where ``state_of`` reads it (each at most the checkpoint limit, all of them at most
  ``PARAM_BUDGET`` bytes); and, the same way, every weight file of the pretrained caches outside the repository
  the step sees (repro/weight_cache.py: ``~/.paddlenlp``, ``~/.cache/paddle``, ...; bounded apart, each file's
  record kept across runs in tipcgen's cache), named ``~/...``;
- after the train step ends: every weight file in its output folder and below, the same way: its record;
- before an eval or export step starts, and when one that ran beside the next steps ends (an export beside the
  eval): whether every recorded checkpoint still holds what was recorded (its inode, size and change time, which no
  process can set back, else its sha256 again), noting each that changed.

A checkpoint counts as trained only when some parameter of it (a float tensor of two elements or more) is in
none of the weight files there before the step, and its bytes are none of theirs: a copy, a link or a re-save of
committed or cached weights is not trained, whatever its name, inode or time; a fine-tune of them is (the
parameters it changed are counted; frozen ones may keep their values). Nor is one that still holds the model's
initial values (``initial_values``: every bias and normalisation tensor of its own still exactly 0 or 1).
repro/export_check compares the export with the recorded content, never with the files as they are later.
"""
from __future__ import annotations

import hashlib
import os
import stat
import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import numpy as np

from tipcgen.core import git
from tipcgen.core.errors import CheckpointError, TipcgenError
from tipcgen.format.paths import OUTPUT, WEIGHT_SUFFIXES, is_weight_file
from tipcgen.repro import weight_cache
from tipcgen.repro.checkpoint_io import read_paddle_checkpoint

MAX_FILES = 1000  # weight files recorded before a training, at most (the rest are counted and said)
PARAM_BUDGET = 4 << 30  # bytes of weight files whose parameters are read before one training, at most
HASH_BUDGET = 32 << 30  # bytes of weight files hashed before one training, at most (the rest are counted and said)
# The pretrained caches outside the repository (repro/weight_cache.py), bounded apart: their files, the bytes hashed
# and the bytes whose parameters are read (each file once: later runs reuse its record while its stat is the same)
CACHE_MAX_FILES = 2000
CACHE_HASH_BUDGET = 64 << 30
CACHE_PARAM_BUDGET = 16 << 30
_SKIP_DIRS = (".git", "__pycache__")
_CHUNK = 1 << 20


def digest(array: np.ndarray) -> str:
    """A parameter's value as one string: its float32 bytes' sha256 and its shape (names are left out: Paddle 3's
    export renames every parameter)."""
    values = np.ascontiguousarray(array, dtype=np.float32)  # no copy of a contiguous float32 array
    return hashlib.sha256(values.data.cast("B")).hexdigest() + str(array.shape)  # .data: the array's memoryview


def compared(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The parameters a proof compares: float tensors of two elements or more (a one-element one, a quantizer's
    scale or a counter, says nothing of which weights were used)."""
    return {n: a for n, a in state.items() if np.issubdtype(a.dtype, np.floating) and a.size > 1}


def _read(path: Path, max_bytes: int) -> tuple[dict[str, str], tuple[str, ...]]:
    """A weight file's compared parameters as (their digests, the names of those whose every element is exactly
    0.0, or exactly 1.0: a constant initialiser's values, initial_values)."""
    state = compared(state_of(path, max_bytes))
    return {n: digest(a) for n, a in state.items()}, tuple(n for n, a in state.items() if _filled(a))


def _filled(array: np.ndarray) -> bool:
    """Every element exactly 0.0 (either sign), or every one exactly 1.0."""
    first = array.flat[0]
    return bool((first == 0 or first == 1) and np.all(array == first))


def state_of(path: Path, max_bytes: int) -> dict[str, np.ndarray]:
    """The one way this module reads a weight file's parameters: an export's ``.pdiparams`` by its tensors
    (repro/pdiparams), any other by checkpoint_io.read_paddle_checkpoint (no code runs): every state dict in it,
    a parameter of the one under key ``k`` named ``k/name`` (the file's own top-level dict: ``name``); a file
    with none (optimizer state only) has no parameter. CheckpointError when it cannot."""
    if path.name.endswith(".pdiparams"):
        from tipcgen.repro.pdiparams import read_tensors

        size = path.stat().st_size
        if size > max_bytes:
            raise CheckpointError(f"{path}: {size} bytes, over the limit of {max_bytes}", "")
        try:
            return {f"t_{i}": t for i, t in enumerate(read_tensors(path.read_bytes()))}
        except (ValueError, OSError, struct.error) as exc:
            raise CheckpointError(f"{path}: {exc}", "") from None
    states = read_paddle_checkpoint(path, max_bytes).states
    return {(f"{key}/{name}" if key else name): array for key, state in states.items() for name, array in state.items()}


@dataclass(frozen=True)
class Weights:
    """One weight file's content as recorded: its path (relative to the repository), its bytes' sha256 and
    size, its parameters' digests (name -> digest; None where not read, ``why`` says why), where a link led,
    and the inode, size and change time it had when hashed (``key``: unchanged means the same bytes)."""

    path: str
    sha256: str
    size: int
    params: dict[str, str] | None
    why: str = ""
    link: str = ""
    key: tuple = ()
    constant: tuple[str, ...] = ()  # the parameters (of ``params``) whose every element is exactly 0.0, or 1.0


def _key(info: os.stat_result) -> tuple:
    return info.st_dev, info.st_ino, info.st_size, info.st_ctime_ns


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


@dataclass
class Training:
    """One train step's record: the weight files there before it (``before``; ``unrecorded``: how many the
    bounds left out), what it wrote (``written``, None until it ended) and each recorded checkpoint found
    changed before a later eval or export step, or while steps ran side by side (``changed``: (path, what it now
    holds, when: ``before export x started``))."""

    name: str
    before: list[Weights] = field(default_factory=list)
    unrecorded: int = 0
    model_dir: str | None = None
    written: list[Weights] | None = None
    changed: list[tuple[str, str, str]] = field(default_factory=list)
    unrecorded_cached: int = 0  # files of the pretrained caches outside the repository the bounds left out

    def before_digests(self, outside: str | None = None) -> set[str]:
        """Every parameter digest of the weights there before (those under ``outside``, a kept runner's output
        folder, left out)."""
        return {d for w in self._before(outside) if w.params for d in w.params.values()}

    def before_shas(self, outside: str | None = None) -> dict[str, str]:
        return {w.sha256: w.path for w in self._before(outside)}

    def _before(self, outside: str | None) -> list[Weights]:
        if not outside:
            return self.before
        return [w for w in self.before if not Path(w.path).is_relative_to(Path(outside))]


class Recorder:
    """The records of one run, taken at the runner's handshakes (run/pipeline.py calls ``started`` and ``ended``):
    ``trainings`` by train step name. ``handshake`` is False for a runner that does not wait (a kept one):
    its trainings are then read after the run (export_check._training_of)."""

    def __init__(self, root: Path, run_dir: Path, max_bytes: int, handshake: bool = True,
                 env: Mapping[str, str] | None = None) -> None:
        self.root, self.run_dir, self.max_bytes, self.handshake = root.resolve(), run_dir, max_bytes, handshake
        self.env = dict(os.environ if env is None else env)
        self.home = self.env.get("HOME", "")
        self.caches: list[tuple[str, str]] = []  # the step's pretrained caches outside the repository, as last found
        self.trainings: dict[str, Training] = {}
        self._cache: dict[tuple, Weights] = {}  # a file's record by its inode, size and change time
        self._folders: dict[str, tuple[tuple, list[str], list[str]]] = {}  # a folder's listing by the same
        self._lock = threading.Lock()  # prime runs in a thread beside prepare.sh
        self._last: tuple[str, str] | None = None  # the last step started (kind, name)
        self._beside: tuple[str, list[str]] | None = None  # a step started beside the next ones, and those next
        self._tracked: set[str] | None = None  # the files git tracks under test_tipc/output

    # ---------------------------------------------------------------- the handshakes
    def prime(self) -> None:
        """Read the repository's weight files once beside prepare.sh (run/pipeline.py): the first training's handshake
        then reads again only what changed since (a folder's listing or a file's record is reused while its inode
        and change time, which no process can set back, are the same)."""
        with self._lock:
            self.weights_before()
            self.weights_cached()

    def started(self, kind: str, name: str) -> None:
        """A step is about to start. The runner names each training once, so a second start of one that ended
        (a handshake line a later step wrote into the runner's output) changes no record."""
        from tipcgen.format.words import EVAL, EXPORT, TRAIN

        with self._lock:
            if kind == TRAIN:
                if self.trainings.get(name, Training(name)).written is not None:
                    return
                before, left = self.weights_before()
                cached, cache_left = self.weights_cached()
                self.trainings[name] = Training(name, before + cached, left, unrecorded_cached=cache_left)
            elif kind in (EVAL, EXPORT):
                self.verify(f"before {kind} {name} started")
                if self._beside is not None and self._beside[0] != f"{kind} {name}":
                    self._beside[1].append(f"{kind} {name}")
            self._last = (kind, name)

    def beside(self, kind: str, name: str) -> None:
        """A step about to start beside the next ones (the runner's handshake for it, then ``started``): the steps
        started until it ends ran beside it."""
        with self._lock:
            self._beside = (f"{kind} {name}", [])

    def ended(self, kind: str, name: str, model_dir: str | None) -> None:
        """A training ended: its checkpoints' record. Taken only while that training is the last step started
        (the runner's order); again, the later record wins (one a step wrote a line for while it ran). An eval or
        export that ran beside the next steps ended: the records verified again (a checkpoint changed while they
        ran side by side)."""
        from tipcgen.format.words import EVAL, EXPORT, TRAIN

        if kind in (EVAL, EXPORT):
            with self._lock:
                step, others = self._beside if self._beside is not None else (f"{kind} {name}", [])
                self._beside = None
                self.verify(f"while {' and '.join([step, *others])} ran side by side" if others else
                            f"while {step} ran")
            return
        with self._lock:
            if self.handshake and self._last != (TRAIN, name):
                return
            training = self.trainings.setdefault(name, Training(name))
            training.model_dir = self.folder(model_dir) if model_dir else None
            training.written = self.weights_in(self.root / model_dir) if model_dir else []

    def folder(self, model_dir: str) -> str:
        """A training's output folder as the records name files: relative to the repository, links resolved."""
        return os.path.relpath(os.path.realpath(self.root / model_dir), self.root)

    # ---------------------------------------------------------------- reading
    def _listing(self, folder: str) -> tuple[list[str], list[str]]:
        """(sub-folders, weight files) of a folder, links not followed; reused while the folder's inode and change
        time are those it was listed with (an entry added, removed or renamed changes them)."""
        try:
            info = os.lstat(folder)
        except OSError:
            return [], []
        key = (info.st_dev, info.st_ino, info.st_ctime_ns)
        cached = self._folders.get(folder)
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        dirs, files = [], []
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        dirs.append(entry.name)
                    elif entry.name.endswith(WEIGHT_SUFFIXES):
                        files.append(entry.name)
        except OSError:
            return [], []
        dirs.sort()
        files.sort()
        self._folders[folder] = (key, dirs, files)
        return dirs, files

    def _tracked_outputs(self) -> set[str]:
        """The files git tracks under test_tipc/output (asked once a run; none without git)."""
        if self._tracked is None:
            outcome = git.run(["ls-files", "-z", "--", OUTPUT], self.root, timeout=60, output_cap=16 << 20)
            names = outcome.output.split("\0") if outcome.ok and not outcome.truncated else []
            self._tracked = {os.path.normpath(n) for n in names if n}
        return self._tracked

    def weights_before(self) -> tuple[list[Weights], int]:
        """Every weight file in the repository now, outside the run folder (at most MAX_FILES; how many more).
        Under test_tipc/output only those git tracks: the rest are earlier runs' outputs (a seeded training of
        another mode may write the very same checkpoint), never a repository's weights."""
        found: list[Path] = []
        skip = str(self.run_dir.resolve())
        outputs = str(self.root / OUTPUT)
        todo = [str(self.root)]
        while todo:
            folder = todo.pop()
            dirs, files = self._listing(folder)
            if files and (folder == outputs or folder.startswith(outputs + os.sep)):  # git asked only where it matters
                tracked = self._tracked_outputs()
                files = [f for f in files if os.path.relpath(os.path.join(folder, f), self.root) in tracked]
            found.extend(Path(folder, f) for f in files)
            todo.extend(sub for sub in (os.path.join(folder, d) for d in reversed(dirs) if d not in _SKIP_DIRS)
                        if sub != skip)
        return self._recorded([(p, "") for p in found], MAX_FILES, HASH_BUDGET, PARAM_BUDGET)

    def weights_cached(self) -> tuple[list[Weights], int]:
        """Every weight file in the step's pretrained caches outside the repository (``self.caches``, from
        repro/weight_cache.py: ``~/.paddlenlp``, ``~/.cache/paddle``, ...), named as ``~/...`` (at most
        CACHE_MAX_FILES; how many more). Each file's record is kept across runs while its stat is the same."""
        found: list[tuple[Path, str]] = []
        root = str(self.root)  # found again each time: prepare.sh may have downloaded into a cache it created
        self.caches = [(r, n) for r, n in weight_cache.folders(self.env)
                       if not (r == root or r.startswith(root + os.sep))]  # inside: the repository's own
        for real, name in self.caches:
            todo = [real]
            while todo:
                folder = todo.pop()
                dirs, files = self._listing(folder)
                found.extend((Path(folder, f), name + os.path.join(folder, f)[len(real):]) for f in files)
                todo.extend(sub for sub in (os.path.join(folder, d) for d in reversed(dirs))
                            if sub != root)  # a repository inside a cache: its files are the repository's
        return self._recorded(found, CACHE_MAX_FILES, CACHE_HASH_BUDGET, CACHE_PARAM_BUDGET, kept=True)

    def _recorded(self, found: list[tuple[Path, str]], most: int, hash_budget: int, param_budget: int,
                  kept: bool = False) -> tuple[list[Weights], int]:
        """The records of the files found, within the bounds (how many they left out)."""
        budget, hashed, left = param_budget, 0, max(0, len(found) - most)
        out = []
        for path, shown in found[:most]:
            try:
                size = path.stat().st_size
            except OSError:
                continue
            if hashed + size > hash_budget:
                left += 1
                continue
            weights = self.weights(path, budget, shown, kept)
            if weights is not None:
                out.append(weights)
                hashed += weights.size
                budget -= weights.size if weights.params is not None else 0
        return out, left

    def weights_in(self, folder: Path) -> list[Weights]:
        """Every weight file in a training's output folder and below (links to files read where they lead): a
        weight suffix, or a pickle whatever its name (paddle.save writes any name it is given: the file
        train_model_name names, ``model_latest``, ``net.ckpt``)."""
        if not folder.is_dir() or folder.is_symlink():
            return []
        out: list[Weights] = []
        for sub, dirs, files in os.walk(folder, followlinks=False):
            dirs.sort()
            for name in sorted(files):
                if is_weight_file(Path(sub) / name) and len(out) < MAX_FILES:
                    weights = self.weights(Path(sub) / name, PARAM_BUDGET)
                    if weights is not None:
                        out.append(weights)
        return out

    def weights(self, path: Path, budget: int, shown: str = "", kept: bool = False) -> Weights | None:
        """One file's record (a link: where it leads, the file read there); None when it is no regular file.
        shown: how records name a file outside the repository (``~/.paddlenlp/...``); kept: its record is kept
        across runs in tipcgen's cache folder (repro/weight_cache.py)."""
        try:
            info = path.stat()  # follows a link
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode):
            return None
        rel = shown or os.path.relpath(path, self.root)
        link = ""
        if path.is_symlink():
            real = os.path.realpath(path)
            link = weight_cache.shown(real, self.home) if shown else os.path.relpath(real, self.root)
        cached = self._cache.get(_key(info))
        if cached is not None:
            return Weights(rel, cached.sha256, cached.size, cached.params, cached.why, link, cached.key, cached.constant)
        if info.st_size > HASH_BUDGET:  # never read (a link to a device-sized file): its size is all that is said
            return Weights(rel, "", info.st_size, None, f"{info.st_size} bytes, over {HASH_BUDGET} to hash", link,
                           _key(info))
        entry = weight_cache.read(info) if kept else None
        if entry is not None:
            weights = Weights(rel, entry[0], info.st_size, entry[1], entry[3], link, _key(info), entry[2])
            self._cache[_key(info)] = weights
            return weights
        try:
            sha = _sha256(path)
        except OSError as exc:
            return Weights(rel, "", info.st_size, None, f"unreadable: {exc.strerror or exc}", link, _key(info))
        params: dict[str, str] | None = None
        constant: tuple[str, ...] = ()
        why, over = "", info.st_size > min(self.max_bytes, budget)
        if over:
            why = f"{info.st_size} bytes, over the bytes left to read ({min(self.max_bytes, budget)})"
        else:
            try:
                params, constant = _read(path, self.max_bytes)
            except (CheckpointError, TipcgenError, OSError, ValueError, MemoryError) as exc:
                why = (getattr(exc, "message", None) or str(exc))[:200]
        weights = Weights(rel, sha, info.st_size, params, why, link, _key(info), constant)
        self._cache[_key(info)] = weights
        if kept and not over:
            after = path.stat()  # kept only where the file did not change while it was read
            if _key(after) == _key(info) and after.st_mtime_ns == info.st_mtime_ns:
                weight_cache.write(info, sha, params, constant, why)
        return weights

    def verify(self, when: str) -> None:
        """Before an eval or export step (``when``: ``before export x started``), or as one run beside others ends:
        each recorded checkpoint that no longer holds what was recorded."""
        for training in self.trainings.values():
            for weights in training.written or []:
                now = self.now(weights)
                if now != weights.sha256 and not any(c[0] == weights.path for c in training.changed):
                    training.changed.append((weights.path, now, when))

    def now(self, weights: Weights) -> str:
        """The sha256 a recorded file holds now ('' where it is gone or unreadable); its recorded sha256 without
        reading it while its inode, size and change time are the recorded ones."""
        path = self.root / weights.path
        try:
            info = path.stat()
        except OSError:
            return ""
        if weights.key and _key(info) == weights.key:
            return weights.sha256
        try:
            return _sha256(path)
        except OSError:
            return ""


# Running statistics (BatchNorm's ``_mean``/``_variance``, torch's ``running_mean``/``running_var``): a forward pass
# in train mode changes them without any optimizer step, and a frozen BatchNorm keeps them: no witness either way.
RUNNING_STATS = ("_mean", "_variance", "running_mean", "running_var", "moving_mean", "moving_variance")


def _vector(value: str) -> bool:
    """A parameter digest's shape (``digest``: sha256 and shape) has one axis of two or more: a bias, a
    normalisation's scale or shift ([C], [1, C]): what constant initialisers create."""
    dims = [int(d) for d in value[64:].strip("()").split(",") if d.strip()]
    return sum(d > 1 for d in dims) == 1


def initial_values(params: dict[str, str], constant: tuple[str, ...] | set[str],
                   before: set[str]) -> tuple[list[str], list[str]]:
    """(the witnesses, those still at their initial values) of a checkpoint (parameter name -> digest; the names
    whose every element is exactly 0.0 or 1.0) against the digests of the weights there before its training.

    Paddle creates every bias with the constant 0 and every normalisation's scale and shift with 1 and 0
    (Linear, Conv, BatchNorm, LayerNorm, GroupNorm), and an optimizer step that reaches one moves it off that
    constant (a decay alone moves a 1). The witnesses are the checkpoint's vector-shaped parameters (one axis of
    two or more) that are not running statistics (``RUNNING_STATS``) and not the value of a weight file there
    before (a frozen pretrained layer's, or a pretrained constant: they say nothing of this training). When
    every witness is still exactly 0 or 1 (at least one: the classifier bias of a pretrained backbone saved
    untrained is one), no optimizer step reached any of them: the checkpoint holds the model's initial values.
    A witness off 0 and 1 is a bias or scale the training moved (or one a model initialises otherwise: then
    the rule says nothing); no witness at all: the rule cannot tell."""
    witnesses = [n for n, d in params.items() if d not in before and _vector(d) and not n.endswith(RUNNING_STATS)]
    still = set(constant)
    return witnesses, [n for n in witnesses if n in still]


def trained_text(weights: Weights, training: Training, outside: str | None = None) -> tuple[int, int, str]:
    """(parameters the training changed, parameters compared, '' or why the checkpoint is not trained): its
    bytes and parameters against every weight file there before the train step, by content (a file whose
    parameters were not read: by its bytes alone, (0, 0, '')); then its bias and normalisation tensors against
    the model's initial values (``initial_values``)."""
    shas = training.before_shas(outside)
    if weights.link and training.model_dir and not Path(weights.link).is_relative_to(Path(training.model_dir)):
        return 0, len(weights.params or {}), (f"{weights.path} is a link to {weights.link}, outside the training's "
                                              "output folder")
    if weights.sha256 and weights.sha256 in shas:
        how = f"a link to {weights.link}, " if weights.link else ""
        return 0, len(weights.params or {}), (f"{weights.path} ({how}its bytes) is {shas[weights.sha256]}, a weight "
                                               "file there before the train step")
    if weights.params is None:  # not read (over a limit, a format the reader does not know): the export check
        return 0, 0, ""  # reads it as it is now, and fails naming why where it cannot
    before = training.before_digests(outside)
    changed = [n for n, d in weights.params.items() if d not in before]
    if changed:
        witnesses, still = initial_values(weights.params, weights.constant, before)
        if witnesses and len(still) == len(witnesses):
            kept = len(weights.params) - len(changed)
            rest = f"; the other {kept} are those of {_holder(weights, training, outside)}" if kept else ""
            return 0, len(weights.params), (
                f"{weights.path} holds the model's initial values, not trained ones: all {len(witnesses)} of its bias "
                f"and normalisation tensors are still exactly 0 or 1 ({still[0]}{' among them' if len(still) > 1 else ''}"
                f"){rest}, so no optimizer step changed them (check that the training steps its optimizer, with a "
                "learning rate above 0, before it saves: a warmup from 0 needs two steps, and an AMP loss scaler "
                "skips each step whose gradients overflow)")
        return len(changed), len(weights.params), ""
    if not weights.params:
        return 0, 0, f"{weights.path} holds no parameter of two elements or more"
    return 0, len(weights.params), (f"{weights.path} holds no parameter of its own: all {len(weights.params)} are "
                                    f"those of {_holder(weights, training, outside)}")


def _holder(weights: Weights, training: Training, outside: str | None) -> str:
    """The weight file there before the training that holds most of a checkpoint's parameters, as a message
    names it."""
    own = set((weights.params or {}).values())
    holder = max((w for w in training._before(outside) if w.params),
                 key=lambda w: len(set((w.params or {}).values()) & own), default=None)
    return f"{holder.path}, there before the train step" if holder is not None else "weight files there before the train step"
