"""`tipcgen new`: write a descriptor for an existing repository by probing its scripts' --help.

Thin: the probing and the descriptor text are tipcgen.new's; registered in cli.py with one line.
"""
from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from tipcgen.cli.echo import echo
from tipcgen.core.text import shown
from tipcgen.core.errors import TipcgenError


class Devices(str, Enum):
    all = "all"
    cpu = "cpu"


def _pairs(items: List[str], option: str) -> dict:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise TipcgenError(f"{option} {item!r}: expected FIELD=VALUE", f"e.g. {option} train.epochs=--num_epochs")
        out[name.strip()] = value.strip()
    return out


def _env(items: List[str]) -> dict:
    import re

    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise TipcgenError(f"--env {item[:80]!r}: expected NAME=VALUE with a variable name",
                               "e.g. --env FLAGS_enable_pir_api=0")
        out[name] = value
    return out


def new(
    train: Optional[str] = typer.Option(None, "--train", help="The train script and any fixed arguments, relative to --root (e.g. \"tools/train.py -c configs/m.yml\")."),
    eval_: Optional[str] = typer.Option(None, "--eval", help="The eval script (null: no eval step)."),
    export: Optional[str] = typer.Option(None, "--export", help="The export script (writes the inference model)."),
    infer: Optional[str] = typer.Option(None, "--infer", help="The inference script (Paddle Inference)."),
    model_name: Optional[str] = typer.Option(None, "--model-name", help="The model's name: names test_tipc/configs/<model>/ and the log folder."),
    checkpoint: Optional[str] = typer.Option(None, "--checkpoint", help="What train saves in its output dir for eval and export to load (a file or folder name; '.' for the dir itself); without it, read from the scripts' source where it says."),
    train_data: Optional[str] = typer.Option(None, "--train-data", help="Lite train data shipped with the repository; prepare.sh copies it to ./train_data/<model>/."),
    eval_data: Optional[str] = typer.Option(None, "--eval-data", help="Lite eval data (as --train-data)."),
    infer_data: Optional[str] = typer.Option(None, "--infer-data", help="Lite inference data (as --train-data)."),
    setup: List[str] = typer.Option([], "--setup", metavar="\"SCRIPT.py ARGS\"", help="A data preparation script prepare.sh runs after copying the data ({data_dir} becomes ./train_data/<model>); repeatable."),
    flag: List[str] = typer.Option([], "--flag", metavar="FIELD=FLAG", help="Fill a descriptor field with this flag (null: leave it empty), e.g. train.epochs=--num_epochs; repeatable; beats probing."),
    value: List[str] = typer.Option([], "--value", metavar="FIELD=VALUE", help="A field's value as YAML, e.g. inference.cpu_threads='[1, 6]'; repeatable."),
    env: List[str] = typer.Option([], "--env", metavar="NAME=VALUE", help="An environment variable for the export and inference steps (the descriptor's env:), e.g. FLAGS_enable_pir_api=0; repeatable. Nothing is added unless asked."),
    python: str = typer.Option("python", "--python", help="The interpreter the chain runs (and the scripts' --help is probed with)."),
    devices: Devices = typer.Option(Devices.all, "--devices", help="all: GPU and CPU entries; cpu: only CPU entries."),
    root: Path = typer.Option(Path("."), "--root", help="The repository root (script and data paths are relative to it)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Where to write the descriptor (default: ROOT/tipc.yaml)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing descriptor file (the old one is kept under .tipcgen/backup/)."),
    probe_timeout: float = typer.Option(60, "--probe-timeout", min=1, help="Seconds each `python SCRIPT --help` may take."),
) -> None:
    """Write a descriptor for an existing Paddle repository: probe each script's --help and map its flags to TIPC slots.

    Missing scripts and names are asked for on a terminal; elsewhere (CI) the error names the option to pass.
    The descriptor loads and renders before it is written; then run tipcgen init on it.
    This runs the repository's scripts (their --help) with your rights: in a sandbox where bubblewrap works,
    unsandboxed where it does not (docs/SECURITY.md).

    Example: tipcgen new --model-name my_model --train tools/train.py --eval tools/eval.py --export tools/export_model.py --infer tools/infer.py --checkpoint best_model --train-data data/lite_train.txt
    """
    from tipcgen.core import writes
    from tipcgen.new import new as newdesc
    from tipcgen.new.fields import check_fields

    scripts = {role: path for role, path in (("train", train), ("eval", eval_), ("export", export), ("infer", infer))
               if path is not None}
    data = {role: path for role, path in (("train", train_data), ("eval", eval_data), ("infer", infer_data)) if path}
    options = newdesc.Options(model_name=model_name, scripts=scripts, data=data, setup=list(setup), checkpoint=checkpoint,
                              python=python, devices=devices.value, flags=check_fields(_pairs(flag, "--flag"), "--flag"),
                              values=check_fields(_pairs(value, "--value"), "--value"), probe_timeout=probe_timeout,
                              env=_env(env))

    def ask(option: str, question: str, default: str) -> str:
        try:
            return typer.prompt(shown(f"{question} ({option})"), default=default or None, show_default=bool(default))
        except typer.Abort:  # Ctrl-C (or the end of input) at the prompt: interrupted, 130, as run says it
            echo("\ninterrupted: nothing was written", err=True)
            raise typer.Exit(130) from None

    proposal = newdesc.propose(options, root, ask if sys.stdin.isatty() else None)
    for field, source, origin in proposal.mapping:
        echo(f"{origin:>8}  {field:<24} {source}")
    for note in proposal.notes:
        echo(f"    note  {note}")
    target = output or root / "tipc.yaml"
    writes.write_tree({target.name: proposal.text}, target.parent, force=force)
    echo(f"wrote {target} ({proposal.model_name}). Read it, then:\n  tipcgen init {target}"
               + (f" --root {root}" if str(root) != "." else "") + "\n  tipcgen run --mode lite_train_lite_infer")
