"""``tipcgen import`` of every other config: kept line by line (the descriptor's ``kept:``), and of a folder.

A config tipcgen renders from fields (the basic chain in a layout family, a PTQ config) is imported
into fields (``importer``, ``import_compression``). Every other kind (C++ inference, serving,
paddle2onnx, Lite, KL quantization, dy2static, pipeline, a ``train_params`` layout of no family that
no shift explains) is kept line by line in ``kept:`` (``descriptor/kept.py``): ``tipcgen init`` writes
it back byte for byte where it was. A basic config that lint calls shifted is refused, never kept:
its runner would misread it. ``import_folder`` imports a repository's whole ``configs/`` folder into
one descriptor per model (by the configs' ``model_name``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tipcgen.configs import family_pick, import_compression, importer, lint, lint_runners, reading
from tipcgen.core import inputs
from tipcgen.core.errors import ConfigImportError
from tipcgen.descriptor import writer
from tipcgen.descriptor.kept import FILE_RE, keepable
from tipcgen.format import chains, families, layout, paths
from tipcgen.format.config import TipcConfig, family_of, model_name_in

FIELDS, PTQ, KEPT = "fields", "ptq", "kept"


def route(text: str, runner: family_pick.Runner | None = None, specs: reading.Specs = (), source: str = "config") -> str:
    """How a config is imported: ``fields`` (a basic config in a layout family, or one a shift moved:
    the basic importer names the shift), ``ptq`` (a PTQ layout of format/compression.py) or ``kept``:
    every other kind, and a basic-kind config that lint reads as another runner's, or as trained only
    in a ${MODE} branch of its runner (one reading: lint's, configs/reading.py)."""
    config = TipcConfig.parse(text)
    found = lint.lint_text(text, source, runner=runner, specs=specs) if specs else []
    shift = next((f for f in found if f.rule == "slot-shift" and f.severity == "error"), None)
    if shift is not None:  # what lint calls shifted (read with its repository's runners) is never imported
        raise ConfigImportError(source, shift.line, shift.message,
                                f"run `tipcgen lint {source}`, fix the line and import again")
    if config.kind not in layout.LAYOUT_OF_KIND and any(f.rule == "other-runner" for f in found):
        return KEPT  # another kind in a layout of its own runner (configs/lint_runners.other_kind)
    if config.kind in layout.LAYOUT_OF_KIND and specs:
        if any(f.rule in ("other-runner", "unused-shift", lint_runners.RUNNER_LAYOUT) or (f.rule == "null-value" and f.severity == "warning")
               for f in found):
            return KEPT
    if config.kind in layout.LAYOUT_OF_KIND:
        if family_of(config, *(runner or (None, ""))) is not None:
            return FIELDS
        _, missed = families.nearest(config.logical_lines(), config.kind)
        return FIELDS if families.is_shift(missed) else KEPT
    return PTQ if import_compression.is_ptq(text) else KEPT


def kept_file(path: Path, text: str) -> str:
    """Where a kept config goes below test_tipc/configs/: where it sits below a configs/ folder, else
    ``<model_name>/<file name>``."""
    parts = path.parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == Path(paths.CONFIGS).name and i > 0 and parts[i - 1] == paths.TEST_TIPC:
            rel = "/".join(parts[i + 1:])
            if FILE_RE.match(rel):
                return rel
    model = model_name_in(text) or path.parent.name or "model"
    model = model if FILE_RE.match(model) and "/" not in model else "model"
    name = path.name if FILE_RE.match(path.name) else "config.txt"
    return f"{model}/{name}"


def kept_item(text: str, source: str, file: str) -> list[str]:
    """The YAML lines of one ``kept:`` item (``  - file: ...``) for a config text."""
    config = TipcConfig.parse(text)
    for number, line in enumerate(config.lines, start=1):
        bad = next((ch for ch in line.text if not keepable(ch)), None)
        if bad is not None:
            raise ConfigImportError(source, number, f"contains the control character {bad!r}: the line cannot be kept "
                                    "as text", "a config line is single-line printable text; remove it (CRLF: save with LF)")
    out = [f"  - file: {writer.token(file, writer.TEXT_TYPES, False)}",
           f"    kind: {config.kind}"]
    out.append("    lines:" + ("" if config.lines else " []"))
    out += [f"      - {_quoted(line.text)}" for line in config.lines]
    if config.lines and not config.final_newline:
        out.append("    final_newline: false")
    return out


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def import_kept(text: str, source: str, file: str) -> str:
    """The ``kept:`` section (YAML, with a comment saying where it goes) for one config."""
    kind = TipcConfig.parse(text).kind
    return "\n".join([
        f"# The kept section imported from {source} by `tipcgen import`: add it to the model's tipc.yaml",
        f"# (a {kind} config: tipcgen keeps it line by line; `tipcgen init` writes test_tipc/configs/{file}",
        "# back byte for byte; `tipcgen import test_tipc/configs/ -o DIR` imports a whole folder).",
        "kept:", *kept_item(text, source, file)]) + "\n"


@dataclass
class _Model:
    name: str
    basic: tuple[Path, str] | None = None
    ptq: tuple[Path, str] | None = None
    kept: list[tuple[Path, str]] | None = None
    dy2static: tuple[Path, str] | None = None


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.txt") if p.is_file() and not p.is_symlink())


def import_folder(folder: Path, root: Path | None = None,
                  refused: list[ConfigImportError] | None = None) -> dict[str, str]:
    """``{<model_name>/tipc.yaml: descriptor}`` for every model of a configs/ folder: the basic config
    at ``<model_name>/train_infer_python.txt`` (else the first of the model in a family) in fields, its
    PTQ config in ``ptq:``, every other config in ``kept:``. A model without a basic config in a family
    gets the descriptor's required fields as placeholders (its comment says so). A config that cannot be
    imported (lint calls it shifted, a control character) is left out, never kept as if it ran: its refusal
    goes to ``refused`` where given (the folder's other configs are imported), else it is raised."""
    cache: dict = {}
    models: dict[str, _Model] = {}
    for path in _files(folder):
        text = inputs.read_text(path, "config")
        runner = family_pick.read_runner(path, root, cache)
        name = model_name_in(text) or path.parent.name
        name = name if FILE_RE.match(name) and "/" not in name else path.parent.name or "model"
        try:
            how = route(text, runner, family_pick.runner_specs(path, root, cache), str(path))
            if how == FIELDS:  # a shifted one is refused here, never kept as if it ran
                importer.import_descriptor(text, str(path), runner)
            elif how == PTQ:
                import_compression.import_ptq(text, str(path))
            else:
                kept_item(text, str(path), kept_file(path, text))
        except ConfigImportError as exc:
            if refused is None:
                raise
            refused.append(exc)
            continue
        model = models.setdefault(name, _Model(name, kept=[]))
        canonical = path.name == Path(paths.CONFIG_NAMES[chains.BASIC]).name
        if how == FIELDS and (model.basic is None or canonical):
            if model.basic is not None:
                model.kept.append(model.basic)
            model.basic = (path, text)
        elif how == PTQ and model.ptq is None and _canonical(path, chains.PTQ, name):
            model.ptq = (path, text)
        else:
            model.kept.append((path, text))
    out = {}
    for name, model in sorted(models.items()):
        out[f"{name}/tipc.yaml"] = _descriptor(model, root, cache)
    return out


def _canonical(path: Path, kind: str, model: str) -> bool:
    """The file sits where init writes that kind of config for the model: configs/<model>/<kind's name>."""
    return path.name == Path(paths.CONFIG_NAMES[kind]).name and path.parent.name == model


def import_standalone(path: Path, text: str, how: str, root: Path | None = None) -> str:
    """A descriptor that ``tipcgen init`` renders on its own for one config that is no basic config in fields (a
    PTQ config, a PaddleClas dy2static config, any kept kind): the model's required fields as placeholders and
    the config in its section (``ptq:``, ``dy2static:``, where it sits where init writes that kind; else ``kept:``,
    written back byte for byte where it was)."""
    from tipcgen.configs import import_dy2static

    name = model_name_in(text) or path.parent.name
    name = name if FILE_RE.match(name) and "/" not in name else path.parent.name or "model"
    name = name if FILE_RE.match(name) and "/" not in name else "model"
    model = _Model(name, kept=[])
    if how == PTQ:  # a PTQ layout tipcgen knows: a shifted one is refused (with its line), even where it would be kept
        import_compression.import_ptq(text, str(path))
    if import_dy2static.runs_here(text):
        import_dy2static.import_dy2static(text, str(path))
    if how == PTQ and _canonical(path, chains.PTQ, name):
        model.ptq = (path, text)
    elif import_dy2static.runs_here(text) and _canonical(path, chains.DY2STATIC, name):
        model.dy2static = (path, text)
    else:
        model.kept.append((path, text))
    return _descriptor(model, root, {})


def _descriptor(model: _Model, root: Path | None, cache: dict) -> str:
    if model.basic is not None:
        path, text = model.basic
        document = importer.import_descriptor(text, str(path), family_pick.read_runner(path, root, cache))[0]
        at = paths.config_rel(model.name)
        if not path.as_posix().endswith(at):  # kept where it was too: init gives the folder back as it was
            document += (f"# init writes the basic config above at {at} (tipcgen's runner reads it there); kept:\n"
                         f"# holds it as written at its own path, {kept_file(path, text)}\n")
            model.kept.insert(0, (path, text))
    else:
        document = "\n".join([
            f"# tipcgen descriptor of {model.name}, imported by `tipcgen import`: what was imported holds no",
            "# basic-chain config in a layout family, so the fields below are placeholders (init also renders a",
            "# train_infer_python.txt from them); kept: holds the model's configs as written.",
            "schema_version: 1", f"model_name: {writer.token(model.name, writer.TEXT_TYPES, False)}",
            "gpu_list: '-1'", "train:", "  norm: train.py", "inference:", "  script: null"]) + "\n"
    if model.ptq is not None:
        path, text = model.ptq
        section = import_compression.import_ptq(text, str(path))
        document += "\n" + "".join(line + "\n" for line in section.splitlines() if not line.startswith("#"))
    if model.dy2static is not None:
        from tipcgen.configs import import_dy2static

        path, text = model.dy2static
        section = import_dy2static.import_dy2static(text, str(path))
        document += "\n" + "".join(line + "\n" for line in section.splitlines() if not line.startswith("#"))
    if model.kept:
        document += "\nkept:  # configs kept line by line, written back byte for byte (docs/LAYOUTS.md)\n"
        for path, text in model.kept:
            document += "\n".join(kept_item(text, str(path), kept_file(path, text))) + "\n"
    return document
