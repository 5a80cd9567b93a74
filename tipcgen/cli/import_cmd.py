"""`tipcgen import`: existing TIPC configs (a file, or a whole configs/ folder) into descriptors.

Thin: the importers are tipcgen.configs.importer (fields), import_compression (ptq:) and import_kept
(kept:, and a folder); registered in cli/app.py with one line.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from tipcgen.cli.echo import echo
from tipcgen.core.errors import TipcgenError
from tipcgen.format import chains


def import_(
    config: Path = typer.Argument(..., help="An existing config (train_infer_python.txt: fields; train_ptq_infer_python.txt: its ptq section; any other kind: its kept section), or a configs/ folder: one descriptor per model (with -o DIR)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the descriptor here (default: print it); for a folder, the folder to write <model_name>/tipc.yaml into."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output file."),
    root: Optional[Path] = typer.Option(None, "--root", help="The repository root: its test_tipc/test_train_inference_python.sh picks the layout family, and each script the config names is probed (--help) for the keys the runner passes it (default: the test_tipc/ the config sits in)."),
    trust_repo: bool = typer.Option(False, "--trust-repo", help="Run the repository's scripts' --help even where no sandbox (bubblewrap) can be had: their code runs with your rights (docs/SECURITY.md)."),
) -> None:
    """Turn existing TIPC configs into tipcgen descriptors.

    `tipcgen init` of the result renders the same configs again, byte for byte. A basic-chain config
    becomes fields in the layout family (docs/LAYOUTS.md) its repository's own runner reads; a PTQ config
    its ptq: section; a PaddleClas dy2static config its dy2static: section; every other kind (C++, serving, paddle2onnx, Lite, KL quantization, dy2static, ...) is
    kept line by line (kept:). A folder imports into one descriptor per model. Each key the runner would
    pass that its script does not accept is printed as an error (exit code 1; the descriptor is still written).

    Example: tipcgen import test_tipc/configs/ -o imported/
    """
    from tipcgen.configs import family_pick, import_dy2static, import_kept, importer, legacy_format
    from tipcgen.core import inputs, writes
    from tipcgen.core.errors import RenderConflictError

    def write(files: dict[str, str], folder: Path) -> None:
        try:
            writes.write_tree(files, folder, force=force)
        except RenderConflictError:
            differ = [rel for rel in sorted(files) if (folder / rel).is_file()]
            raise TipcgenError(f"{folder / differ[0] if differ else folder} exists and differs from the imported "
                               "descriptor; nothing was written",
                               "rerun with --force to replace it (the old one is kept under .tipcgen/backup/), "
                               "or write elsewhere with -o") from None

    if config.is_dir():
        if output is None:
            raise TipcgenError(f"{config} is a folder: its models import into one descriptor each",
                               f"name the folder to write them into: tipcgen import {config} -o DIR")
        refused: list = []
        documents = import_kept.import_folder(config, root, refused)
        if not documents and refused:
            raise refused[0]
        write(documents, output)
        for rel in sorted(documents):
            echo(f"wrote {output / rel}")
        echo(f"{len(documents)} descriptor(s); render one with: tipcgen init {output}/<model_name>/tipc.yaml")
        for exc in refused:  # left out, never kept as if its runner read it right
            echo(f"error: {exc.message}" + (f" ({exc.hint})" if exc.hint else "") + "; not imported", err=True)
        if refused:
            echo(f"{len(refused)} config(s) not imported: fix them and import the folder again", err=True)
            raise typer.Exit(1)
        return
    source = inputs.read_text(config, "config")
    how = import_kept.route(source, family_pick.read_runner(config, root), family_pick.runner_specs(config, root), str(config))
    problems: list[str] = []
    note = None
    if how == import_kept.FIELDS and not import_dy2static.runs_here(source):
        document = importer.import_file(config, root)
        text, note = legacy_format.imported_env(document, Path("."))
        problems = importer.flag_problems(config, root, trust_repo)
        added = None
    else:  # a PTQ, dy2static or kept config: a descriptor of its own (placeholder fields), init renders it as it is
        text = import_kept.import_standalone(config, source, how, root)
        added = next((section for section in (chains.PTQ, chains.DY2STATIC) if f"\n{section}:" in text), "kept")
    if output is None:
        echo(text, nl=False)
        if note:  # the YAML goes to stdout: the note beside it, never into it
            echo(f"note: {note}", err=True)
    elif added is not None:
        write({output.name: text}, output.parent)
        echo(f"wrote {output} (the config in its {added} section, the model's other fields placeholders); render it "
             f"with: tipcgen init {output}, or add its {added} section to the model's tipc.yaml")
    else:
        write({output.name: text}, output.parent)
        family = next((line[2:] for line in text.splitlines() if line.startswith("# layout family ")), "")
        echo(f"wrote {output} ({family}); render it with: tipcgen init {output}" + (f"\n  note: {note}" if note else ""))
    for problem in problems:
        echo(problem, err=True)
    if any(problem.startswith("error") for problem in problems):
        raise typer.Exit(1)
