"""What a loaded descriptor holds: frozen dataclasses, built by validate.py, read by everything else.

A leaf (it imports only the chain description, to read a slot by its descriptor field), so the
validator that builds these and the loader that calls the validator never import each other.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tipcgen.core.errors import DescriptorError
from tipcgen.format import chain
from tipcgen.format.words import DEFAULT_STEP_TIMEOUT


@dataclass(frozen=True)
class SlotValue:
    """The key and value text of one config line."""

    key: str
    value: str | None  # None: a line without ':' (such as `##`), as some upstream configs have

    @property
    def line(self) -> str:
        return self.key if self.value is None else f"{self.key}:{self.value}"


@dataclass(frozen=True)
class DataFile:
    """One file of the chain's data folder: lite copy shipped with the project, whole copy read in place."""

    name: str
    role: str
    lite: str | None
    whole: str | None
    md5: str | None
    rows: int | None


@dataclass(frozen=True)
class DataSpec:
    dir: str
    whole_env: str
    files: tuple[DataFile, ...]
    setup: tuple[tuple[str, ...], ...]
    trained_model: str | None = None  # whole_infer: the folder prepare.sh links to a trained model
    whole_from_lite: bool = False  # whole_train_whole_infer trains on the lite data on purpose


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


@dataclass(frozen=True)
class ChecksSpec:
    """Result checks: the dygraph reference the export step writes, and committed golden results."""

    reference: str | None
    reference_tolerance: Tolerance
    golden: str | None  # a folder next to the descriptor; init copies it to test_tipc/results/
    golden_tolerance: Tolerance
    onnx_tolerance: Tolerance
    # The chain's own check (check_inference.py): None builds inputs from the model's input spec,
    # "null" turns it off, else a .npz of named input arrays in the repository.
    fixed_inputs: str | None = None
    outputs: tuple[str, ...] = ()  # the exported model's outputs, named by position (else fetch_name_N)
    own_weights: tuple[str, ...] = ()  # eval/export/infer steps that load their own weights on purpose


@dataclass(frozen=True)
class Paddle2OnnxSpec:
    """The paddle2onnx chain: convert the exported model, run it with onnxruntime, compare."""

    model_dir: str
    save_file: str
    opset_version: int
    inference: str
    onnx_flag: str


@dataclass(frozen=True)
class Descriptor:
    """A validated descriptor: slot name → (key, value) text, plus data and run settings.

    Read a slot by its descriptor field (``slot_of("inference.cpu_threads")``), never by its slot
    name: the name is the description's (layout.py), and renaming it is one edit there.
    """

    source: str
    base_dir: Path
    model_name: str
    slots: dict[str, SlotValue]
    sections: tuple[tuple[str | None, tuple[str, ...]], ...] = ()
    data: DataSpec | None = None
    step_timeout: int = DEFAULT_STEP_TIMEOUT
    description: str = ""
    checks: ChecksSpec | None = None
    paddle2onnx: Paddle2OnnxSpec | None = None
    align_thresholds: dict[str, float] = field(default_factory=dict)  # tipcgen align report
    target: Any = None  # tipcgen.target.Target: the paper's figures, checked on whole_train_whole_infer
    benchmark: Any = None  # tipcgen.benchmark.BenchmarkSpec: the benchmark_train chain's cases
    env: tuple[tuple[str, str], ...] = ()  # exported for the export and inference steps (env:)
    extra: dict[str, Any] = field(default_factory=dict)
    section_headers: tuple[str | None, ...] = ()  # a section's header as written, where not 27/27
    layout: str = "standard"  # the layout family (format/families.py): standard, tutorial, paddleseg, ...
    text: Any = None  # format.text_style.TextStyle: the config's lines as written (text:), or None
    ptq: Any = None  # descriptor.ptq.PtqSpec: train_ptq_infer_python.txt and its check (ptq:)
    kept: tuple = ()  # descriptor.kept.KeptConfig: configs kept line by line (kept:)
    dy2static: Any = None  # descriptor.dy2static.Dy2staticSpec: train_dy2static_python.txt and its loss check
    fleet: Any = None  # descriptor.fleet.FleetSpec: the multi-machine config (its gpu_list) and its loss check

    def slot_of(self, fld: str) -> SlotValue:
        """The key and value of a descriptor field's line (code names slots by field: see chain.py)."""
        return self.slots[chain.name_of(fld)]

    def list_value(self, fld: str) -> list[str]:
        """The ``|`` items of a descriptor field's value."""
        return (self.slot_of(fld).value or "").split("|")

    def for_cpu_only(self) -> "Descriptor":
        """The same chain with only the CPU entries of gpu_list and inference use_gpu."""
        gpus = self.list_value("gpu_list")
        if "-1" not in gpus:
            raise DescriptorError(self.source, "gpu_list", f"has no CPU entry (-1): {'|'.join(gpus)}",
                                  hint="add \"-1\" to gpu_list to render a config for --devices cpu")
        slots = dict(self.slots)

        def keep(fld: str, value: str) -> None:
            slots[chain.name_of(fld)] = replace(self.slot_of(fld), value=value)

        device = self.list_value("train.device")
        keep("gpu_list", "-1")
        if len(device) == len(gpus):
            keep("train.device", "|".join(d for d, g in zip(device, gpus) if g == "-1"))
        use_gpu = [v for v in self.list_value("inference.use_gpu") if v.lower() in ("false", "cpu")]
        if not use_gpu:
            raise DescriptorError(self.source, "inference.use_gpu", "has no CPU value (False or cpu)",
                                  hint="add False (or cpu) to inference.use_gpu")
        keep("inference.use_gpu", "|".join(use_gpu))
        return replace(self, slots=slots)
