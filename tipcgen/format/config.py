"""The TIPC config text model: a lossless list of lines, queried by key, slot or section.

``TipcConfig.parse(text).render() == text`` for every real config: nothing is normalised
(trailing spaces, header ``=`` counts, blank lines, a missing final newline all survive).
Queries follow the bash runners (SPEC §1.1): blank lines do not count, a key ends at the first
``:``, lists split on ``|``, per-mode values are ``mode=value`` pairs. Standard library only.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from tipcgen.format.chains import DY2STATIC, PADDLE2ONNX, PTQ
from tipcgen.format import families, layout, layout_check

_HEADER = re.compile(r"^=+([^=]+)=+$")
_MODE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Kinds of config that the file's first header names (the paddle2onnx, ptq and dy2static chains' among them); `train_params` needs a closer look (see `_detect_kind`).
_KIND_BY_FIRST_HEADER = {
    "serving_params": "serving",
    "serving_infer_python_params": "serving",
    "serving_infer_cpp_params": "serving",
    "cpp_infer_params": "cpp",
    "paddle2onnx_params": PADDLE2ONNX,
    "lite_params": "lite",
    "ptq_params": PTQ,
    "kl_quant_params": "kl_quant",
    "base_train": DY2STATIC,
    "amp_train": DY2STATIC,
    "infer_params": "infer_python",
}
KINDS = (
    "train_infer_python", "tutorial_32", "infer_python", PADDLE2ONNX, "serving", "cpp", "lite",
    PTQ, "kl_quant", DY2STATIC, "empty", "unknown",
)


@dataclass(frozen=True)
class Line:
    """One physical line, exactly as written (no ``\\n``; trailing spaces and ``\\r`` kept)."""

    text: str

    @property
    def kind(self) -> str:
        """``blank``, ``header`` (``===name===``), ``sep`` (``##``), ``kv`` (has a ``:``) or ``text``."""
        stripped = _bare(self.text)
        if not stripped:
            return "blank"
        if stripped[0] == "=" and _HEADER.match(stripped):
            return "header"
        if not stripped.strip("#"):
            return "sep"
        return "kv" if ":" in self.text else "text"

    @property
    def key(self) -> str:
        """Text before the first ``:`` (what ``func_parser_key`` reads); the stripped line if none."""
        key, colon, _ = self.text.partition(":")
        return key if colon else self.text.strip()

    @property
    def value(self) -> str | None:
        """Everything after the first ``:`` (PaddleDetection's reading); ``None`` without a colon."""
        _, colon, value = self.text.partition(":")
        return value if colon else None

    @property
    def bash_value(self) -> str:
        """What OCR/Clas/NLP ``func_parser_value`` reads: the text between the 1st and 2nd ``:``."""
        parts = self.text.split(":", 2)
        return parts[1] if len(parts) > 1 else ""

    @property
    def header_name(self) -> str | None:
        """The name inside a header line (``base_train`` for ``=== base_train ===``), else ``None``."""
        match = _HEADER.match(_bare(self.text))
        return match.group(1).strip() if match else None


def _bare(text: str) -> str:
    """The text without surrounding whitespace or a byte-order mark (lint reports both)."""
    return text.strip().lstrip("\ufeff").strip()


@dataclass(frozen=True)
class Section:
    """A header and the physical lines up to the next header; the leading section has no name."""

    name: str | None
    header_line_index: int | None
    lines: tuple[Line, ...]

    def get(self, key: str) -> str | None:
        """The value of the first line in this section with this key."""
        return next((line.value for line in self.lines if line.value is not None and line.key == key), None)


@dataclass(frozen=True)
class TipcConfig:
    """A config file as its physical lines; ``render()`` gives the exact text back."""

    lines: tuple[Line, ...]
    final_newline: bool = True

    @classmethod
    def parse(cls, text: str) -> TipcConfig:
        """Split on ``\\n`` only, so ``\\r`` and every other byte stay where they were."""
        if not text:
            return cls((), False)
        final_newline = text.endswith("\n")
        body = text[:-1] if final_newline else text
        return cls(tuple(Line(part) for part in body.split("\n")), final_newline)

    @classmethod
    def read(cls, path: str | Path) -> TipcConfig:
        """Parse a file without newline translation (``Path.read_text`` would eat ``\\r``)."""
        return cls.parse(Path(path).read_bytes().decode("utf-8", errors="surrogateescape"))

    @classmethod
    def from_lines(cls, texts: Iterable[str], final_newline: bool = True) -> TipcConfig:
        """Build a config from line texts (no ``\\n`` inside a text)."""
        lines = tuple(Line(text) for text in texts)
        if any("\n" in line.text for line in lines):
            raise ValueError("a config line must not contain a newline")
        return cls(lines, final_newline and bool(lines))

    def render(self) -> str:
        text = "\n".join(line.text for line in self.lines)
        return text + "\n" if self.final_newline else text

    def logical_lines(self) -> list[Line]:
        """The lines the bash runner indexes: ``IFS=$'\\n'`` drops only truly empty lines."""
        return [line for line in self.lines if line.text]

    def physical_index(self, logical_index: int) -> int | None:
        """The 0-based physical line of a logical index (add 1 for the editor line)."""
        numbers = self._physical_numbers
        return numbers[logical_index] if 0 <= logical_index < len(numbers) else None

    @cached_property
    def _physical_numbers(self) -> list[int]:
        """The physical index of every logical line, computed once (callers ask for every line)."""
        return [number for number, line in enumerate(self.lines) if line.text]

    @property
    def kind(self) -> str:
        """One of ``KINDS``, from the first header (or first key) and, for ``train_params``, the layout."""
        return _detect_kind(self.logical_lines())

    def sections(self) -> list[Section]:
        """Sections in file order; lines before the first header form a nameless section."""
        sections: list[Section] = []
        name: str | None = None
        start: int | None = None
        body: list[Line] = []
        for number, line in enumerate(self.lines):
            header = line.header_name
            if header is None:
                body.append(line)
                continue
            if start is not None or body:
                sections.append(Section(name, start, tuple(body)))
            name, start, body = header, number, []
        if start is not None or body:
            sections.append(Section(name, start, tuple(body)))
        return sections

    def section(self, name: str) -> Section | None:
        return next((section for section in self.sections() if section.name == name), None)

    def get(self, key: str) -> str | None:
        """The value of the first ``key:value`` line with exactly this key."""
        return next((line.value for line in self.lines if line.value is not None and line.key == key), None)

    def values(self, key: str) -> list[str]:
        """Every value for this key, in file order."""
        return [line.value for line in self.lines if line.value is not None and line.key == key]

    def slot(self, name: str) -> Line | None:
        """The logical line at a slot of the 51-line layout (positional: meaningful for
        ``train_infer_python`` files); ``None`` beyond the end."""
        index = layout.SLOT_BY_NAME[name].index
        logical = self.logical_lines()
        return logical[index] if index < len(logical) else None

    # By key, the upstream text every layout writes (not by slot name: that is layout.py's own).
    @property
    def model_name(self) -> str | None:
        return self.get("model_name")

    @property
    def python(self) -> str | None:
        return self.get("python")


def _detect_kind(logical: Sequence[Line]) -> str:
    if not logical:
        return "empty"
    first = logical[0].header_name
    if first is None:
        return "lite" if logical[0].key == "runtime_device" else "unknown"
    if first == "train_params":
        return _train_params_kind(logical)
    if first in _KIND_BY_FIRST_HEADER:
        return _KIND_BY_FIRST_HEADER[first]
    # OCR system configs name the header after the model, then follow the inference-only layout.
    if len(logical) > 3 and logical[1].key == "model_name" and logical[3].key == "infer_model":
        return "infer_python"
    return "unknown"


def _train_params_kind(logical: Sequence[Line]) -> str:
    """Tell the 51-line layout from the 32-line tutorial and OCR's kl_quant layout."""
    def key_at(index: int) -> str | None:
        return logical[index].key if index < len(logical) else None

    if key_at(7) == "infer_quant" and key_at(8) == "inference":
        return "kl_quant"
    # The tutorial's eval header sits at idx 15 (idx 22 in the 51-line layout); allow a shift.
    eval_header = next(index for index, key in layout.TUTORIAL_32_ANCHORS.items() if key == "eval_params")
    nearby = logical[eval_header - 3: eval_header + 4]
    if any(line.header_name == "eval_params" for line in nearby):
        return "tutorial_32"
    return "train_infer_python"


def model_name_in(text: str) -> str | None:
    """The value of a config text's first ``model_name:`` line (None without one): what a runner names the run by."""
    return next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model_name:")), None)


def split_list(value: str | None) -> list[str]:
    """A ``|`` list as bash's ``IFS="|"`` splits it (an empty value has no items, and a
    trailing empty item is dropped)."""
    if not value:
        return []
    items = value.split("|")
    return items[:-1] if items[-1] == "" else items


def parse_per_mode(value: str | None) -> dict[str, str]:
    """``lite_train_lite_infer=1|whole_train_whole_infer=300`` as a dict; items that are not
    ``mode=value`` are skipped, and the first of a repeated mode wins, as in the runner."""
    pairs: dict[str, str] = {}
    for item in split_list(value):
        mode, equals, mode_value = item.partition("=")
        if equals and _MODE_NAME.match(mode):
            pairs.setdefault(mode, mode_value)
    return pairs


def is_null(value: str | None) -> bool:
    """True for values the runner omits: ``null``, empty, whitespace (or no value at all)."""
    return value is None or value.strip() in ("", "null")


def family_of(config: TipcConfig, runner: families.RunnerReads | None = None,
              runner_name: str = "") -> families.Pick | None:
    """The layout family of a basic-chain config (``None``: not a basic-chain config, or in no
    family); from the runner's ``lines[N]`` reads where given, else from the file's headers."""
    if config.kind not in layout.LAYOUT_OF_KIND:
        return None
    return families.pick(config.logical_lines(), runner, runner_name)


def slot_pairs(config: TipcConfig, layout_name: str | None = None) -> dict[str, tuple[str, str | None]]:
    """The kv slots of a conforming file as ``{slot_name: (key, value)}`` (what
    ``repository.layout_text`` writes back; a line without ``:`` gives ``(text, None)``). The layout is
    the family's (``layout_name``, else the one its headers say)."""
    logical, table = _conforming_logical(config, layout_name)
    return {
        slot.name: (logical[slot.index].key, logical[slot.index].value)
        for slot in table
        if slot.kind == "kv"
    }


def _conforming_logical(config: TipcConfig, layout_name: str | None = None
                        ) -> tuple[list[Line], tuple[layout.Slot, ...]]:
    """The logical lines of a conforming file of a layout family, and its slot table."""
    logical = config.logical_lines()
    if layout_name is None:
        picked = family_of(config)
        layout_name = picked.family.name if picked else layout.LAYOUT_OF_KIND.get(config.kind)
    table = layout.LAYOUTS[layout_name] if layout_name else ()
    if not table or len(logical) < len(table):
        raise ValueError(f"not a conforming train_infer_python config (kind {config.kind}, {len(logical)} lines)")
    misplaced = layout_check.first_misplaced(logical, table)
    if misplaced is not None:
        anchor = misplaced[0]
        raise ValueError(f"idx {anchor.index} should be {layout_check.describe(anchor)} but is "
                         f"{logical[anchor.index].text!r}; run tipcgen lint")
    return logical, table
