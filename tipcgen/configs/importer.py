"""``tipcgen import``: an existing ``train_infer_python`` config → a descriptor (``tipc.yaml``).

The descriptor renders back to the same config: the same logical lines, keys and values in the
same order. A few things the runners read the same way are normalised, and the descriptor's
header comment lists them: whitespace around keys, values and section lines, header ``=``
padding of the layout's own headers (made 27/27; a trailing section's header comes back as written), blank lines and a byte-order mark. A file that cannot be
represented (another kind of config, a shifted or short layout, a value the descriptor refuses)
raises ``ConfigImportError`` naming the file, the line and the reason.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tipcgen import descriptor
from tipcgen.configs import family_pick
from tipcgen.core import inputs
from tipcgen.core.errors import ConfigImportError, DescriptorError
from tipcgen.core.text import article
from tipcgen.descriptor import writer
from tipcgen.descriptor.schema import SCHEMA_VERSION
from tipcgen.format import config as cfg
from tipcgen.format import families, layout, layout_check, paths, runner_spec, text_style


@dataclass
class _Trailing:
    """A trailing section: its name, the editor line of its header, and its (line, text) pairs."""

    name: str | None  # None: lines before any header
    line: int
    lines: list[tuple[int, str]]
    header: str | None = None  # the header as written, where its padding is not the canonical 27/27


def import_file(path: str | Path, repo_root: str | Path | None = None) -> str:
    """The descriptor YAML for a config file (read without newline translation); the layout family
    is the one the repository's own runner reads (``--root``, or the test_tipc/ the file sits in)."""
    runner = family_pick.read_runner(Path(path), Path(repo_root) if repo_root is not None else None)
    return import_descriptor(inputs.read_text(path, "config"), str(path), runner)[0]


def flag_problems(path: str | Path, root: str | Path | None = None, unsandboxed: bool = False) -> list[str]:
    """``error: ...`` / ``note: ...`` lines for the keys the runner would pass that the scripts do not
    accept (configs/flag_check.py); root: the repository (default: the folder above test_tipc/)."""
    import os

    from tipcgen.configs import flag_check

    path = Path(path)
    if root is None:
        parts = path.resolve().parts
        root = Path(*parts[:parts.index(paths.TEST_TIPC)]) if paths.TEST_TIPC in parts else Path(".")
    text = inputs.read_text(path, "config")
    config = cfg.TipcConfig.parse(text)
    if config.kind not in layout.LAYOUT_OF_KIND:
        return []
    runner = family_pick.read_runner(path, Path(root) if root is not None else None)
    pick = cfg.family_of(config, *(runner or (None, "")))
    basic = next((s for s in family_pick.runner_specs(path, Path(root)) if s.name == Path(paths.BASIC_RUNNER).name), None)
    reads = runner_spec.passing(basic, text) if basic is not None else None
    return [f"{p.severity}: {path}:{p.line}: {p.message}" + (f" ({p.fix})" if p.fix else "")
            for p in flag_check.check_config(Path(root), text, dict(os.environ), unsandboxed,
                                             pick.family.name if pick else None, reads)]


def import_config(text: str, source: str) -> str:
    """The descriptor YAML for a ``train_infer_python`` config text; ``source`` names the config
    in messages and in the header comment. The result passes ``descriptor.load_text``."""
    return import_descriptor(text, source)[0]


def import_descriptor(text: str, source: str, runner: family_pick.Runner | None = None
                      ) -> tuple[str, descriptor.Descriptor]:
    """The descriptor YAML and the ``Descriptor`` it loads as (to render it without loading twice);
    ``runner`` (a runner's reads and name) picks the layout family, else the file's headers do."""
    config = cfg.TipcConfig.parse(text)
    _check_kind(config, source)
    _check_shift(text, source, runner)
    pick = _pick(config, source, runner)
    table = pick.family.table
    _check_layout(config, source, table)
    _check_printable(config, source)
    style = text_style.style_of(config, len(table))
    if style.line_count is not None:  # a train-only or train+eval file: the later lines read as null
        config = text_style.padded(config, table)
    notes: list[str] = []
    pairs = _normalised_pairs(config, notes, pick.family.name)
    sections = _normalised_sections(config, source, notes, table)
    _note_headers_and_blanks(config, notes, table)
    document, origin = _document(source, pairs, sections, notes, config, pick, style)
    return document, _load(document, source, origin)


# ---------------------------------------------------------------- what can be imported

def _check_kind(config: cfg.TipcConfig, source: str) -> None:
    kind = config.kind
    if kind == "empty":
        raise ConfigImportError(source, None, "is empty: there is nothing to import")
    if kind not in layout.LAYOUT_OF_KIND:
        raise ConfigImportError(
            source, None, f"is {article(kind)} {kind} config: its lines are no basic-chain fields (a train_infer_python "
            "config in a layout family of docs/LAYOUTS.md)",
            "`tipcgen import` of the file keeps it line by line (kept:, or ptq: for a PTQ config); "
            "`tipcgen import test_tipc/configs/ -o DIR` imports a whole folder")


def _check_shift(text: str, source: str, runner: family_pick.Runner | None) -> None:
    """One reading, one verdict: a config lint calls shifted is refused with lint's message (never imported
    with every later field read from its neighbour)."""
    from tipcgen.configs import lint

    shift = next((f for f in lint.lint_text(text, source, runner=runner) if f.rule == "slot-shift"), None)
    if shift is not None:
        raise ConfigImportError(source, shift.line, shift.message,
                                f"run `tipcgen lint {source}`, fix the missing or extra line and import again")


def _pick(config: cfg.TipcConfig, source: str, runner: family_pick.Runner | None) -> families.Pick:
    """The layout family; in none, the nearest family when a shift explains the difference (then
    ``_check_layout`` names the shift), else a refusal that names what differs."""
    pick = cfg.family_of(config, *(runner or (None, "")))
    if pick is not None:
        return pick
    family, missed = families.nearest(config.logical_lines(), config.kind)
    if families.is_shift(missed):
        return families.Pick(family, "the nearest family")
    raise ConfigImportError(source, None, families.no_family_message(config.logical_lines(), config.kind),
                            "tipcgen renders the layout families of docs/LAYOUTS.md; run `tipcgen lint` on it, "
                            "or keep the repository's own runner with this config")


def _check_layout(config: cfg.TipcConfig, source: str, table: tuple[layout.Slot, ...]) -> None:
    """Every header and ``##`` of the layout sits at its index (else the slots are shifted), and
    no line of the layout is missing at the end."""
    logical = config.logical_lines()
    misplaced = layout_check.first_misplaced(logical, table)
    if misplaced is not None:
        anchor, offset = misplaced
        if offset is None:
            where = "; the lines are shifted (a slot shift)"
        else:
            lines = f"{abs(offset)} line{'s' if abs(offset) > 1 else ''}"
            where = (f"; it sits at idx {anchor.index + offset}, a slot shift "
                     f"({lines} {'missing' if offset < 0 else 'extra'} above it)")
        raise ConfigImportError(
            source, _editor_line(config, anchor.index),
            f"idx {anchor.index} should be {_describe(anchor)} but is {logical[anchor.index].text.strip()!r}"
            f"{where}: every later slot would be read from its neighbour",
            f"run `tipcgen lint {source}` to find the missing or extra line, fix it and import again")
    if len(logical) < len(table) and len(logical) not in text_style.section_ends(table):
        raise ConfigImportError(
            source, None,
            f"has {len(logical)} of the {len(table)} lines of the layout and stops inside a section: a line "
            f"is missing, or the file was cut short (a train-only or train+eval config stops after "
            f"{' or '.join(map(str, text_style.section_ends(table)))} lines)",
            f"run `tipcgen lint {source}` to see where it ends")


def _describe(anchor: layout_check.Anchor) -> str:
    return f"the {anchor.names[0]} header" if anchor.kind == "header" else "a '##' separator"


def _check_printable(config: cfg.TipcConfig, source: str) -> None:
    """Control characters cannot be written to YAML as text. Surrounding whitespace is normalised;
    a byte-order mark is let through (the first header, which carries it, is rewritten; anywhere
    else the descriptor refuses it)."""
    for number, line in enumerate(config.lines, start=1):
        bad = next((ch for ch in line.text.strip().lstrip("\ufeff") if not ch.isprintable()), None)
        if bad is not None:
            raise ConfigImportError(source, number, f"contains the control character {bad!r}",
                                    "a config line is single-line printable text; remove it")


def _editor_line(config: cfg.TipcConfig, index: int) -> int:
    physical = config.physical_index(index)
    return physical + 1 if physical is not None else len(config.lines)


# ---------------------------------------------------------------- normalisation

def _normalised_pairs(config: cfg.TipcConfig, notes: list[str], layout_name: str
                      ) -> dict[str, tuple[str, str | None]]:
    """The kv slots as ``{name: (key, value)}``, stripped; ``None`` for a line without ``:`` (``##``)."""
    pairs: dict[str, tuple[str, str | None]] = {}
    stripped: list[int] = []
    index = {slot.name: slot.index for slot in layout.LAYOUTS[layout_name]}
    for name, (key, value) in cfg.slot_pairs(config, layout_name).items():
        line = _editor_line(config, index[name])
        if (key, value) != (key.strip(), value.strip() if value is not None else None):
            stripped.append(line)
        pairs[name] = (key.strip(), value.strip() if value is not None else None)
    if stripped:
        notes.append(f"whitespace around a key or value removed: {_lines(stripped)}")
    return pairs


def _normalised_sections(config: cfg.TipcConfig, source: str, notes: list[str], table: tuple[layout.Slot, ...]
                         ) -> list[_Trailing]:
    """The trailing sections with stripped lines; lines after idx 50 that stand before any header
    (upstream ``null:null`` fillers) form a first section without a name."""
    logical = config.logical_lines()
    sections: list[_Trailing] = []
    stripped: list[int] = []
    for index in range(len(table), len(logical)):
        line, number = logical[index], _editor_line(config, index)
        if line.header_name is not None:
            header = line.text.strip()
            sections.append(_Trailing(line.header_name, number, [],
                                      None if header == layout.header_line(line.header_name) else header))
            continue
        if not sections:
            sections.append(_Trailing(None, number, []))
        if line.text != line.text.strip():
            stripped.append(number)
        sections[-1].lines.append((number, line.text.strip()))
    if stripped:
        notes.append(f"whitespace around a section line removed: {_lines(stripped)}")
    return sections


def _note_headers_and_blanks(config: cfg.TipcConfig, notes: list[str], table: tuple[layout.Slot, ...]) -> None:
    # Trailing section headers come back as written (sections[].header); the layout's own are rewritten.
    last = config.physical_index(len(table) - 1) or 0
    headers = [n for n, line in enumerate(config.lines, start=1)
               if n <= last and line.header_name is not None and line.text != layout.header_line(line.header_name)]
    if headers:
        notes.append(f"header rewritten with the canonical 27/27 '=' padding: {_lines(headers)}")
    seps = [n for n, line in enumerate(config.lines, start=1)
            if n <= last and line.kind == "sep" and line.text.strip() != "##"]
    if seps:
        notes.append(f"separator rewritten as '##' (the runners skip it): {_lines(seps)}")
    blanks = [n for n, line in enumerate(config.lines, start=1) if not line.text]
    if blanks:
        notes.append(f"blank line dropped (the runners skip it): {_lines(blanks)}")


def _lines(numbers: list[int]) -> str:
    return ("line " if len(numbers) == 1 else "lines ") + ", ".join(map(str, numbers))


# ---------------------------------------------------------------- YAML

def _document(source: str, pairs: dict[str, tuple[str, str]], sections: list[_Trailing],
              notes: list[str], config: cfg.TipcConfig, pick: families.Pick, style: text_style.TextStyle
              ) -> tuple[str, dict[str, int]]:
    """The descriptor text, and the config line of every descriptor path (for error messages)."""
    out = [
        f"# tipcgen descriptor imported from {source} by `tipcgen import`.",
        "# Render test_tipc/ from it (the config, runner, prepare.sh, docs): tipcgen init <this file>",
        "# Each field under train/eval/export/whole_infer/inference is one line of the config; a field",
        "# left out renders its default null line (docs/DESCRIPTOR.md). Add a data: section so that",
        "# prepare.sh provides the data the config names.",
    ]
    if notes:
        out.append("# Normalised in the fields below (the runners read these the same way; text: at the end")
        out.append("# keeps the lines as written, so init gives the file back byte for byte):")
        out += [f"#   {note}" for note in notes]
    out.append(f"schema_version: {SCHEMA_VERSION}")
    out.append(f"# {pick.describe()}")
    if pick.family.name != "standard":
        out += writer.commented(f"layout: {pick.family.name}", pick.family.short)
    lines, written = writer.slot_lines(pick.family.table, pairs)
    out += lines
    origin = {slot.field: _editor_line(config, slot.index) for slot in written}
    out += _sections_yaml(sections, origin)
    out += _text_yaml(style)
    return "\n".join(out) + "\n", origin


def _text_yaml(style: text_style.TextStyle) -> list[str]:
    """The ``text:`` group: the lines as written where they differ from tipcgen's spelling."""
    if not style:
        return []
    out = ["", *writer.commented("text:", "the lines as written (docs/DESCRIPTOR.md, text)")]
    if not style.final_newline:
        out.append("  final_newline: false")
    if style.blank_lines:
        out.append(f"  blank_lines: [{', '.join(map(str, style.blank_lines))}]")
    if style.line_count is not None:
        out.append(f"  line_count: {style.line_count}")
    if style.lines:
        out.append("  lines:")
        out += [f"    {index}: {_quoted(written)}" for index, written in style.lines]
    return out


def _quoted(text: str) -> str:
    """A YAML scalar that loads back as exactly this string (surrounding spaces included)."""
    return "'" + text.replace("'", "''") + "'"


def _sections_yaml(sections: list[_Trailing], origin: dict[str, int]) -> list[str]:
    if not sections:
        return []
    out = ["", *writer.commented("sections:", "trailing sections, found by name")]
    for i, section in enumerate(sections):
        name = "null" if section.name is None else writer.token(section.name, writer.TEXT_TYPES, False)
        out.append(f"  - name: {name}")
        if section.header is not None:
            out.append(f"    header: {writer.token(section.header, writer.TEXT_TYPES, False)}")
        out.append("    lines:" + ("" if section.lines else " []"))
        out += [f"      - {writer.token(text, writer.TEXT_TYPES, False)}" for _, text in section.lines]
        origin[f"sections[{i}]"] = section.line
        origin.update({f"sections[{i}].lines[{j}]": number for j, (number, _) in enumerate(section.lines)})
    return out


def _load(document: str, source: str, origin: dict[str, int]) -> descriptor.Descriptor:
    """Load the descriptor; a refusal is reported at the config line it came from."""
    try:
        return descriptor.load_text(document, source=source)
    except DescriptorError as exc:
        path = exc.field
        while path and path not in origin:
            path = path[: max(path.rfind("."), path.rfind("["), 0)]
        where = f"{exc.source}:{exc.line}" if exc.line else exc.source
        reason = exc.message.removeprefix(f"{where}: {exc.field}: " if exc.field else f"{where}: ")
        raise ConfigImportError(source, origin.get(path), f"{exc.field}: {reason}" if exc.field else reason,
                                exc.hint or "fix this line of the config, then import again") from None
