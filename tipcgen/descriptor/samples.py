"""The built-in sample descriptors, and a name or path given on the command line → a descriptor file."""
from __future__ import annotations

import difflib
import os
from pathlib import Path

from tipcgen.core.errors import DescriptorError


def samples_dir() -> Path:
    """Where the built-in samples live: inside the wheel, or at the top of a source checkout."""
    package = Path(__file__).resolve().parents[1]  # tipcgen/: the wheel keeps sample_models/ inside it
    for candidate in (package / "sample_models", package.parent / "sample_models"):
        if candidate.is_dir():
            return candidate
    return package / "sample_models"


def sample_names() -> list[str]:
    root = samples_dir()
    return sorted(p.parent.name for p in root.glob("*/tipc.yaml")) if root.is_dir() else []


def resolve(target: str) -> Path:
    """A sample name or a path to a descriptor file → the descriptor path."""
    path = Path(target)
    named_file = path.suffix in (".yaml", ".yml") or "/" in target
    if os.path.lexists(target) and (named_file or not path.is_dir()):
        return path  # reading it says what is wrong, if anything (a folder, a FIFO, a link loop, no permission)
    if named_file:
        raise DescriptorError(target, "", "no such descriptor file",
                              hint="check the path, or name a built-in sample: " + ", ".join(sample_names()))
    sample = samples_dir() / target / "tipc.yaml"
    if sample.is_file():
        return sample
    close = difflib.get_close_matches(target, sample_names(), n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    raise DescriptorError(target, "", "is neither a descriptor file nor a built-in sample",
                          hint=hint + "built-in samples: " + (", ".join(sample_names()) or "none") +
                          "; or pass path/to/tipc.yaml")

