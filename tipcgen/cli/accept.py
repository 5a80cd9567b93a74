"""`tipcgen accept`: the acceptance checklist (核验点) of a submission, on the repository and its last run.

Thin: parse, call tipcgen.accept, print, exit 0 (every item passed) or 1; user mistakes raise
TipcgenError, which tipcgen's main prints (exit 2). Registered in cli.py with one line.
"""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from tipcgen.cli.echo import echo
from tipcgen.configs.locate import ROOT_HELP, find_root
from tipcgen.core.text import json_text


class Format(str, Enum):
    text = "text"
    json = "json"


def accept(
    root: Optional[Path] = typer.Option(None, "--root", help=ROOT_HELP),
    run: Optional[Path] = typer.Option(None, "--run", help="The run folder, test_tipc/output/<model>/<mode> (default: the newest under --root)."),
    format: Format = typer.Option(Format.text, "--format", help="text for people, json for machines."),
    write_docs: bool = typer.Option(False, "--write-docs", help="First rewrite the support table of test_tipc/docs/test_train_inference_python.md from the run (the old file is kept under .tipcgen/backup/)."),
) -> None:
    """Check the items a reviewer accepts a submission by (核验点), on the repository and its last run.

    The items of PaddlePaddle/models tutorials/tipc/train_infer_python: lite_data archive,
    train/eval/predict.py, the training log's fields, predict.py's documented demo, export_model.py
    and infer.py with their commands, AutoLog in every inference case, the test_tipc tree, the docs'
    support table, and a passing run.

    Exit code 1 if any item failed (its fix is printed under it), 0 otherwise.

    Example: tipcgen accept --write-docs
    """
    from tipcgen.outputs import accept as checklist
    from tipcgen.render.templating import environment

    root = find_root(root)
    if run is not None and not run.is_dir():
        from tipcgen.core.errors import TipcgenError

        raise TipcgenError(f"--run {run} is not a folder", "pass a run folder such as test_tipc/output/<model>/<mode>")
    if write_docs:
        path = checklist.write_docs(root, run)
        echo(f"      wrote  {path}", err=format is Format.json)
    result = checklist.check(root, run)
    if format is Format.json:
        echo(json_text(result.to_dict()))
    else:
        echo(environment().get_template("report/accept.txt.j2").render(a=result), nl=False)
    raise typer.Exit(0 if result.ok else 1)
