"""The answers file (``.tipcgen-answers.yml``): what ``init`` rendered from, so ``update`` can do it again.

Like copier's ``.copier-answers.yml``: the tipcgen version, the descriptor (a built-in sample's name,
or a path relative to the output root) and its sha256, the devices option, and the rendered files;
with several models in one repository, the same three for each other model (``others``).
What was rendered last time is kept under ``.tipcgen/base/`` as the merge base of ``tipcgen update``.
Both are committed with the project; neither holds a timestamp, so a repeated init changes nothing.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from tipcgen.core import inputs
from tipcgen.core.errors import InputError, TipcgenError
from tipcgen.core.text import quoted
from tipcgen.descriptor import Descriptor, samples_dir
from tipcgen.format import paths

DEVICES = ("all", "cpu")
MAX_MODELS = 256  # other models of one repository an answers file may list
MAX_FILES = 20_000  # rendered files it may list
MAX_REFERENCE = 1024  # characters of one descriptor reference
DESCRIPTOR_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*", re.ASCII)  # a built-in sample's name


@dataclass(frozen=True)
class Answers:
    tipcgen_version: str
    descriptor: str  # a built-in sample's name, or a path relative to the output root
    descriptor_sha256: str
    devices: str
    files: tuple[str, ...]
    others: tuple[tuple[str, str, str], ...] = ()  # the repository's other models: (descriptor, sha256, devices)

    @property
    def models(self) -> tuple[tuple[str, str, str], ...]:
        """Every model rendered into the repository: (descriptor, sha256, devices), the first one first."""
        return ((self.descriptor, self.descriptor_sha256, self.devices), *self.others)


def base_path(rel: str) -> str:
    """Where the last rendered copy of a generated file is kept (the merge base)."""
    return f"{paths.BASE}/{rel}"


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def descriptor_reference(desc: Descriptor, out_dir: Path) -> str:
    """A built-in sample's name, or the descriptor's path relative to the output root."""
    source = Path(desc.source)
    if not source.is_file():
        raise TipcgenError(f"{desc.source} is not a descriptor file", "init renders from a sample name or a .yaml file")
    if source.resolve().parent.parent == samples_dir().resolve():
        return source.resolve().parent.name
    return Path(os.path.relpath(source.resolve(), out_dir.resolve())).as_posix()


def target_of(reference: str, out_dir: Path, sha256: str | None = None) -> str:
    """A recorded descriptor reference as ``descriptor.load`` takes it: a built-in sample's name, or a
    file inside the repository (no link on the way leads out of it: ``inputs.within``). A file outside
    (init rendered from a descriptor kept elsewhere, ``../x.yaml``) is loaded only while it is the file
    init rendered from, its recorded ``sha256``: an answers file committed by someone else cannot make
    tipcgen read a file of this machine it does not already know byte for byte."""
    if _is_sample_name(reference):
        return reference
    path = out_dir / reference
    if not Path(os.path.normpath(path)).is_relative_to(os.path.normpath(out_dir)):
        if sha256 is None or hashlib.sha256(inputs.read_bytes(path, "descriptor")).hexdigest() != sha256:
            raise TipcgenError(f"{out_dir / paths.ANSWERS}: the descriptor {quoted(reference)} is outside the "
                               "repository and is not the file init rendered from (its sha256 differs), so it is "
                               "not loaded",
                               "name it on the command line (tipcgen init PATH), or keep descriptors inside the "
                               "repository")
        return str(path)
    return str(inputs.within(path, out_dir))


def _is_sample_name(reference: str) -> bool:
    return "/" not in reference and "\\" not in reference and not reference.endswith((".yaml", ".yml"))


def _reference_problem(reference: object) -> str:
    """Why an answers-file descriptor reference is not loaded ('' when it is fine): a sample's name, or a
    relative path inside the repository, of bounded length."""
    if not isinstance(reference, str) or not reference:
        return "is not a descriptor path or a sample name"
    if len(reference) > MAX_REFERENCE:
        return f"is {len(reference)} characters long (at most {MAX_REFERENCE})"
    if _is_sample_name(reference):
        return "" if DESCRIPTOR_NAME_RE.fullmatch(reference) else f"{quoted(reference)} is not a sample name"
    if Path(reference).is_absolute() or "\0" in reference:
        return f"{quoted(reference)} is an absolute path (init records a path relative to the repository)"
    return ""


def parse(text: str, source: str) -> Answers:
    """The answers file's text → Answers; a damaged file is an error that names the field."""
    import yaml

    try:
        data = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError) as exc:  # ValueError: an int of 4300+ digits
        raise TipcgenError(f"{source}: is not valid YAML ({(str(exc).splitlines() or [type(exc).__name__])[0]})",
                           "restore it from version control, or run tipcgen init again") from None
    if not isinstance(data, dict):
        raise TipcgenError(f"{source}: expected a mapping", "restore it from version control, or run tipcgen init again")
    for key in ("tipcgen_version", "descriptor", "descriptor_sha256", "devices", "files"):
        if key not in data:
            raise TipcgenError(f"{source}: {key} is missing", "restore it from version control, or run tipcgen init again")
    files = data["files"]
    if not isinstance(files, list) or not all(isinstance(f, str) and _inside(f) for f in files):
        raise TipcgenError(f"{source}: files must be a list of relative paths inside the output folder")
    if data["devices"] not in DEVICES:
        raise TipcgenError(f"{source}: devices is {quoted(data['devices'])}", "expected all or cpu")
    others = data.get("others") or []
    if not isinstance(others, list) or not all(
            isinstance(o, dict) and isinstance(o.get("descriptor"), str) and o.get("devices") in DEVICES for o in others):
        raise TipcgenError(f"{source}: others must be a list of {{descriptor, descriptor_sha256, devices}}",
                           "restore it from version control, or run tipcgen init again")
    if len(others) > MAX_MODELS or len(files) > MAX_FILES:
        raise TipcgenError(f"{source}: lists {len(others)} other model(s) and {len(files)} file(s); at most "
                           f"{MAX_MODELS} and {MAX_FILES}", "restore it from version control, or run tipcgen init again")
    for where, reference in (("descriptor", data["descriptor"]),
                             *((f"others[{i}].descriptor", o["descriptor"]) for i, o in enumerate(others))):
        problem = _reference_problem(reference)
        if problem:
            raise TipcgenError(f"{source}: {where} {problem}, so it is not loaded",
                               "a descriptor init rendered from is a sample name or a file inside the repository; "
                               "restore the answers file from version control, or run tipcgen init again")
    return Answers(str(data["tipcgen_version"]), str(data["descriptor"]), str(data["descriptor_sha256"]),
                   str(data["devices"]), tuple(files),
                   tuple((o["descriptor"], str(o.get("descriptor_sha256", "")), o["devices"]) for o in others))


def rendered_descriptor(out_dir: Path, model: str | None = None,
                        or_first: bool = False) -> tuple[Descriptor, str, str] | None:
    """The descriptor init rendered ``model`` from, its reference and the sha256 it had then (the first
    model's when ``model`` is None, or when none matches and ``or_first``); None without an answers file
    or without that model. Each descriptor is loaded once; one that cannot be read raises its error."""
    if not (out_dir / paths.ANSWERS).is_file():
        return None
    from tipcgen import descriptor

    first = None
    for reference, sha256, _ in read(out_dir).models:
        desc = descriptor.load(target_of(reference, out_dir, sha256))
        if model is None or desc.model_name == model:
            return desc, reference, sha256
        first = first or (desc, reference, sha256)
    return first if or_first else None


def read(out_dir: Path) -> Answers:
    path = out_dir / paths.ANSWERS
    if not path.is_file():
        raise TipcgenError(f"{path} is missing: {out_dir} was not rendered by tipcgen init (0.1.0 or later)",
                           "render it once with tipcgen init <sample | descriptor.yaml> --force; later edits then "
                           "survive tipcgen update")
    try:
        text = inputs.read_text(path, "answers file", limit=4 << 20)
    except InputError as exc:
        raise InputError(exc.message, "restore it from version control, or render again with tipcgen init --force") from None
    return parse(text, str(path))


def _inside(rel: str) -> bool:
    parts = Path(rel).parts
    return bool(parts) and not Path(rel).is_absolute() and ".." not in parts
