"""`tipcgen align convert` and `tipcgen align trace`: the reproduction toolkit's commands.

Thin: parse, call tipcgen.convert / tipcgen.trace, print, exit 0 (pass) or 1 (fail); user mistakes
raise TipcgenError (exit 2). Added to the `align` sub-app by `register` (one line in cli.py).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import List, Optional

import typer

from tipcgen.cli.echo import echo
from tipcgen.core import needs
from tipcgen.core.text import terminal
from tipcgen.format.words import PADDLE_PIN

DEFAULT_MAX_BYTES = 1 << 30  # tipcgen.repro.pickles.DEFAULT_MAX_BYTES (numpy is imported only when a command runs)
MAX_BYTES_HELP = ("Refuse a weights or inputs file, its members or storages together, or the arrays built from it, "
                  "larger than this many bytes (default 1 GiB; checked before anything is allocated).")


def convert(
    source: Path = typer.Argument(..., help="The PyTorch weights: a state dict saved by torch.save (.pt/.pth/.bin) "
                                  "or a .safetensors file. Read without running any pickled code."),
    output: Path = typer.Option(..., "--output", "-o", help="The Paddle .pdparams to write (only when the conversion passes)."),
    rules: str = typer.Option(..., "--rules", "-r", help="A built-in rule set (bert, bn-cnn) or a YAML rule file."),
    check: Optional[str] = typer.Option(None, "--check", help="The target model: its .pdparams, or MODULE:FACTORY "
                                        "returning the paddle.nn.Layer; every key is checked against it."),
    allow: List[str] = typer.Option([], "--allow", metavar="NAME", help="A key (glob) allowed to be unmatched, "
                                    "missing or mis-shaped; repeatable."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output file."),
    map_out: Optional[Path] = typer.Option(None, "--map", help="Also write the name map (PyTorch -> Paddle) as JSON."),
    format: str = typer.Option("text", "--format", help="text for people, json for machines."),
    max_bytes: int = typer.Option(DEFAULT_MAX_BYTES, "--max-bytes", min=1, help=MAX_BYTES_HELP),
) -> None:
    """Convert a PyTorch state dict to a Paddle .pdparams by a rule set, and list every key that does not line up.

    Rules rename keys, drop keys, transpose Linear weights and cast dtypes. With --check, a key the target
    lacks (unmatched), a target key nothing fills (missing) or a shape that differs fails the conversion
    (exit 1, nothing written) unless --allow names it.

    Example: tipcgen align convert torch_model.bin --rules bert --check paddle_init.pdparams -o model_state.pdparams
    """
    from tipcgen.core.writes import write_file
    from tipcgen.repro.checkpoint_io import write_paddle_state
    from tipcgen.repro.convert import ConvertError, convert_file, load_rules, report_lines

    if format not in ("text", "json"):
        raise ConvertError(f"--format {format}: unknown", "use text or json")
    if os.path.lexists(output) and not force:
        raise ConvertError(f"{output} exists", "pass --force to replace it, or choose another --output")
    result = convert_file(source, load_rules(rules), check, allow, max_bytes)
    if result.passed:  # reading and checking need no paddle; writing the .pdparams does
        needs.paddle_for("tipcgen align convert (it writes the .pdparams with paddle.save)", PADDLE_PIN)
        write_paddle_state(result.state, output)
        if map_out is not None:
            write_file(map_out, json.dumps(result.name_map(), indent=2) + "\n")
    if format == "json":
        echo(json.dumps(result.to_dict(), indent=2))
    else:
        echo("\n".join(report_lines(result)))
        if result.passed:
            echo(f"wrote {terminal(output)}")
    raise typer.Exit(0 if result.passed else 1)


def trace(
    paddle: str = typer.Option(..., "--paddle", help="MODULE:FACTORY returning the Paddle model, weights loaded "
                               "(MODULE is imported from the current folder)."),
    inputs: Path = typer.Option(..., "--inputs", help="A .npz of the inputs: arr_0, arr_1, ... are passed by "
                                "position, other names as keyword arguments."),
    torch: Optional[str] = typer.Option(None, "--torch", help="MODULE:FACTORY returning the PyTorch model; "
                                        "without it, the Paddle model alone is scanned for NaN/Inf."),
    rules: Optional[str] = typer.Option(None, "--rules", "-r", help="The conversion's rule set (bert, bn-cnn, or a "
                                        "YAML file): maps PyTorch layer names to Paddle ones."),
    threshold: float = typer.Option(1e-5, "--threshold", min=0.0, help="Largest max abs difference that passes."),
    format: str = typer.Option("text", "--format", help="text for people, json for machines."),
    max_bytes: int = typer.Option(DEFAULT_MAX_BYTES, "--max-bytes", min=1, help=MAX_BYTES_HELP),
) -> None:
    """Run both models over the same inputs with forward hooks; one row per layer; name the first that diverges.

    Rows are in the order the layers finished, so the first bad row is the first layer to go wrong.
    Exit code 0 when every matched layer is within the threshold (and has no NaN/Inf), 1 otherwise.

    Example: tipcgen align trace --paddle mymodels:paddle_model --torch mymodels:torch_model --inputs x.npz --rules bert
    """
    from tipcgen.repro import trace as tracer
    from tipcgen.repro.convert import ConvertError, import_factory, load_rules
    from tipcgen.repro.reprod_files import load_arrays

    if format not in ("text", "json"):
        raise ConvertError(f"--format {format}: unknown", "use text or json")
    if not inputs.is_file() or inputs.suffix != ".npz":
        raise ConvertError(f"--inputs {inputs}: not a .npz file", "save the inputs with numpy.savez(path, ids=..., ...)")
    arrays = load_arrays(inputs, max_bytes)  # the checks of every reprod_log file: sizes first, never a pickle
    feed = list(arrays.values()) if all(n.startswith("arr_") for n in arrays) else arrays
    rule_set = load_rules(rules) if rules else None
    model = import_factory(paddle)
    result = (tracer.compare(model, import_factory(torch), feed, rule_set, threshold) if torch
              else tracer.scan(model, feed))
    echo(json.dumps(result.to_dict(), indent=2) if format == "json" else "\n".join(tracer.table_lines(result)))
    raise typer.Exit(0 if result.passed else 1)


def register(app: typer.Typer) -> None:
    """Add the toolkit's commands to the `align` sub-app."""
    app.command()(convert)
    app.command()(trace)
