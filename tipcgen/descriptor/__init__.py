"""The model descriptor (``tipc.yaml``): loading it (what a loaded one holds is ``spec.py``).

A descriptor says everything a TIPC chain needs. Its slot fields map one to one onto the
lines of ``train_infer_python.txt`` (see ``layout.py``); the rest describes data and limits.
Reading is ``yaml_lines.py`` (values with their lines), the fields are ``model.py``, checking
is ``structure.py`` (the model's JSON Schema) then ``validate.py``, the built-in samples ``samples.py``. Every error names the file, the line,
the field, what was found and what is expected.
"""
from __future__ import annotations

from pathlib import Path

from tipcgen.core import inputs
from tipcgen.core.errors import DescriptorError, InputError
from tipcgen.descriptor import yaml_lines
from tipcgen.descriptor.samples import resolve, sample_names, samples_dir
from tipcgen.descriptor.spec import ChecksSpec, DataFile, DataSpec, Descriptor, Paddle2OnnxSpec, SlotValue, Tolerance
from tipcgen.descriptor.validate import Validator

__all__ = ["ChecksSpec", "DataFile", "DataSpec", "Descriptor", "Paddle2OnnxSpec", "SlotValue", "Tolerance", "load",
           "load_text", "resolve", "sample_names", "samples_dir"]


def load(target: str | Path) -> Descriptor:
    """A sample name or a descriptor path → the validated Descriptor."""
    path = resolve(str(target))
    try:
        text = inputs.read_text(path, "descriptor")
    except InputError as exc:
        raise DescriptorError(str(path), "", exc.message.removeprefix(f"{path}: "), hint=exc.hint) from None
    return load_text(text, source=str(path), base_dir=path.parent)


def load_text(text: str, source: str = "<descriptor>", base_dir: Path | None = None) -> Descriptor:
    data, lines = yaml_lines.read(text, source)
    return Validator(source, lines).descriptor(data, base_dir or Path("."))
