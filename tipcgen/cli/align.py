"""`tipcgen align ...`: compare reprod_log checkpoint files and report the six acceptance checkpoints.

Thin: parse, call tipcgen.align / tipcgen.align_report, print, exit 0 (pass) or 1 (fail); user mistakes
raise TipcgenError, which tipcgen's main prints (exit 2). Registered in cli.py as the `align` sub-app.
"""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from tipcgen.cli.echo import echo
from tipcgen.core.needs import numpy_for

MAX_BYTES_HELP = ("Refuse a file, an array or an .npz member larger than this many bytes "
                  "(default 1 GiB; checked before anything is allocated).")


align_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Check a paper reproduction: compare reprod_log files, report the six acceptance checkpoints.\n\n"
         "Example:\n\n    tipcgen align compare forward_torch.npy forward_paddle.npy\n\n"
         "    tipcgen align report output/align --descriptor tipc.yaml",
)


class Method(str, Enum):
    mean = "mean"
    max = "max"
    min = "min"
    all = "all"


class Format(str, Enum):
    text = "text"
    json = "json"


@align_app.command()
def compare(
    reference: Path = typer.Argument(..., help="The reference framework's file (e.g. forward_torch.npy)."),
    paddle: Path = typer.Argument(..., help="Paddle's file (e.g. forward_paddle.npy)."),
    method: Method = typer.Option(Method.mean, "--method", help="Which statistic of |reference - paddle| is checked."),
    threshold: float = typer.Option(1e-6, "--threshold", help="Largest difference that passes (a finite number >= 0)."),
    log: Optional[Path] = typer.Option(None, "--log", help="Also write the diff log here (e.g. forward_diff.log)."),
    allow_identical: bool = typer.Option(False, "--allow-identical",
                                         help="Warn instead of failing when the two files are byte-identical."),
    format: Format = typer.Option(Format.text, "--format", help="text: reprod_log's log; json for machines."),
    max_bytes: int = typer.Option(1 << 30, "--max-bytes", min=1, help=MAX_BYTES_HELP),
) -> None:
    """Compare two reprod_log files key by key, as ReprodDiffHelper does, and fail on what it lets pass.

    Fails on NaN/Inf, on shapes or dtypes that differ (no broadcasting, no transposing), on missing keys
    (named), and on two byte-identical files. Exit code 0 when every key passes, 1 otherwise, 2 for a
    file it refuses to read (over --max-bytes, or a pickle naming anything but numpy arrays: it never runs code).

    Example: tipcgen align compare forward_torch.npy forward_paddle.npy --log forward_diff.log
    """
    numpy_for("tipcgen align")
    from tipcgen.repro.align import check_threshold, compare_files, log_lines, write_log

    result = compare_files(reference, paddle, method.value, check_threshold(threshold),
                           allow_identical=allow_identical, max_bytes=max_bytes)
    if log is not None:
        write_log(result, log)
    if format is Format.json:
        import json

        echo(json.dumps(result.to_dict(), indent=2))
    else:
        echo("\n".join(log_lines(result)))
        for reason in result.failures:
            echo(f"fail: {reason}", err=True)
    raise typer.Exit(0 if result.passed else 1)


@align_app.command()
def report(
    folder: Path = typer.Argument(..., help="The reproduction folder (searched for *_paddle.npy, *_diff.log, ...)."),
    threshold: List[str] = typer.Option([], "--threshold", "--thresholds", "-t", metavar="CHECKPOINT=VALUE",
                                        help="e.g. forward=1e-5 (repeatable; beats the descriptor)."),
    descriptor: Optional[Path] = typer.Option(None, "--descriptor", help="A tipcgen descriptor with an optional "
                                              "align: {thresholds: {...}} mapping."),
    root: Path = typer.Option(Path("."), "--root", help="The repository root whose test_tipc/output has the TIPC run."),
    model: Optional[str] = typer.Option(None, "--model", help="The model whose TIPC summary to read "
                                        "(default: the descriptor's model_name, else the newest run)."),
    format: Format = typer.Option(Format.text, "--format", help="text for people, json for machines."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Also write the JSON report to this file."),
    max_bytes: int = typer.Option(1 << 30, "--max-bytes", min=1, help=MAX_BYTES_HELP),
) -> None:
    """Re-check the six acceptance checkpoints of a reproduction and print one table.

    forward, metric, loss, backward (threshold 1e-6, mean abs diff) and train (0.0015, the guide's 0.15%
    on SST-2 accuracy) are re-compared from their file pairs; tipc comes from the last `tipcgen run`.
    Exit code 0 only when all six pass.

    Example: tipcgen align report output/align --descriptor tipc.yaml
    """
    numpy_for("tipcgen align")
    from tipcgen.repro import align_report as ar

    from_descriptor, descriptor_model = ar.read_descriptor(descriptor) if descriptor else ({}, None)
    model = model or descriptor_model
    thresholds = ar.resolve_thresholds(from_descriptor, ar.parse_threshold_options(threshold))
    result = ar.build_report(folder, thresholds, root, model, max_bytes)
    text = ar.report_json(result)
    if json_out is not None:
        from tipcgen.core.writes import write_file

        write_file(json_out, text + "\n")
    echo(text if format is Format.json else ar.report_text(result))
    raise typer.Exit(0 if result.passed else 1)

