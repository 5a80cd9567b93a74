"""The tipcgen command line: parse arguments, call one library function, print, map errors to exit codes.

Heavy modules (jinja2, yaml) are imported inside the commands so that ``tipcgen --help`` stays fast;
nothing here ever imports paddle.
"""
from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from .cli_align import align_app
from .errors import TipcgenError

app = typer.Typer(
    add_completion=True,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Render, run and check PaddlePaddle TIPC test chains.\n\n"
         "Example:\n\n    tipcgen init bert-sst2\n\n    tipcgen run --mode lite_train_lite_infer",
)


app.add_typer(align_app, name="align")


class Devices(str, Enum):
    all = "all"
    cpu = "cpu"


class Format(str, Enum):
    text = "text"
    json = "json"


def _color() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


@app.command()
def init(
    target: str = typer.Argument(..., help="A built-in sample name (bert-sst2) or a path to a descriptor .yaml."),
    output: Path = typer.Option(Path("."), "--output", "-o", help="The repository root to write test_tipc/ into."),
    force: bool = typer.Option(False, "--force", help="Replace files that differ (old ones are kept under .tipcgen/backup/)."),
    devices: Devices = typer.Option(Devices.all, "--devices", help="all: GPU and CPU entries; cpu: only CPU entries."),
) -> None:
    """Render test_tipc/ (config, runner, prepare.sh, docs) from a descriptor.

    Example: tipcgen init bert-sst2 --output my_repo --devices cpu
    """
    from . import descriptor, render

    desc = descriptor.load(target)
    if devices is Devices.cpu:
        desc = desc.for_cpu_only()
    written = render.init(desc, output, force=force)
    for item in written:
        typer.echo(f"{item.action:>11}  {output / item.path}")
    created = sum(1 for w in written if w.action != "unchanged")
    typer.echo(f"{desc.model_name}: {created} file(s) written, {len(written) - created} unchanged. Next:\n"
               f"  tipcgen run --mode lite_train_lite_infer" + (f"  (from {output})" if str(output) != "." else ""))


@app.command()
def run(
    mode: str = typer.Option("lite_train_lite_infer", "--mode", "-m", help="lite_train_lite_infer, lite_train_whole_infer, whole_infer or whole_train_whole_infer."),
    config: Optional[str] = typer.Option(None, "--config", "-c", help="The config to run (default: the only test_tipc/configs/*/train_infer_python.txt)."),
    data_dir: Optional[str] = typer.Option(None, "--data-dir", help="Folder of the whole data set for whole-data modes (sets TIPC_DATA_DIR)."),
    step_timeout: Optional[int] = typer.Option(None, "--step-timeout", min=1, help="Seconds before a step is killed and reported as a timeout (default: the descriptor's run.step_timeout)."),
    model_dir: Optional[str] = typer.Option(None, "--model-dir", help="whole_infer: a train output folder to export and infer (sets TIPC_MODEL_DIR; default: the latest train run)."),
    root: Path = typer.Option(Path("."), "--root", help="The repository root (where test_tipc/ is)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Show only step results, not every output line."),
    chain: str = typer.Option("basic", "--chain", help="basic (train, eval, export, inference) or paddle2onnx."),
) -> None:
    """Prepare the data, run the chain's generated scripts, and summarise the results.

    Writes summary.json and junit.xml next to results_python.log; exit code 0 only if every step passed.

    Example: tipcgen run --mode whole_train_whole_infer --data-dir ../shared/data/sst2
    """
    from . import results
    from . import run as runner

    def show(line: str) -> None:
        if line.startswith(("tipc error: ", "  hint: ")):
            return  # a script that refuses to start: run_chain raises it as one error message
        if not quiet or line.startswith(("[tipc] PASS", "[tipc] FAIL", "[tipc] SKIP")):
            typer.echo(line)

    summary = runner.run_chain(mode, root, config=config, data_dir=data_dir, step_timeout=step_timeout,
                                model_dir=model_dir, chain=chain, on_line=show)
    typer.echo(results.terminal_text(summary, color=_color()))
    run_dir = runner.run_dir_of(root, summary.model, summary.mode, chain)
    typer.echo(f"summary: {run_dir / results.SUMMARY_JSON}\njunit:   {run_dir / results.JUNIT_XML}")
    raise typer.Exit(summary.exit_code)


@app.command()
def lint(
    configs: List[Path] = typer.Argument(..., help="Config files or folders (searched for *.txt)."),
    repo_root: Optional[Path] = typer.Option(None, "--repo-root", help="Check that the scripts the config names exist here."),
    format: Format = typer.Option(Format.text, "--format", help="text for people, json for machines."),
) -> None:
    """Find what upstream TIPC runners get silently wrong: shifted lines, ':' in values, list lengths, ...

    Exit code 1 if any finding is an error, 0 otherwise.

    Example: tipcgen lint test_tipc/configs --repo-root .
    """
    from . import lint as linter

    for path in configs:
        if not path.exists():
            raise TipcgenError(f"{path}: no such file or folder", "pass config files or folders that hold them")
    findings = linter.lint_paths([str(p) for p in configs], repo_root=str(repo_root) if repo_root else None)
    if format is Format.json:
        typer.echo(linter.findings_to_json(findings))
    else:
        for finding in findings:
            typer.echo(linter.format_finding(finding))
        errors = sum(1 for f in findings if f.severity == "error")
        typer.echo(f"{errors} error(s), {len(findings) - errors} warning(s)", err=True)
    raise typer.Exit(1 if linter.has_errors(findings) else 0)


@app.command("import")
def import_(
    config: Path = typer.Argument(..., help="An existing train_infer_python.txt."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the descriptor here (default: print it)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output file."),
) -> None:
    """Turn an existing train_infer_python config into a tipcgen descriptor.

    `tipcgen init` of the result renders the same config again.

    Example: tipcgen import test_tipc/configs/my_model/train_infer_python.txt -o tipc.yaml
    """
    from . import importer, render

    text = importer.import_file(config)
    if output is None:
        typer.echo(text, nl=False)
        return
    render.write_tree({output.name: text}, output.parent, force=force)
    typer.echo(f"wrote {output}; render it with: tipcgen init {output}")


@app.command()
def golden(
    target: str = typer.Argument(..., help="The descriptor (sample name or path) whose golden results to write."),
    mode: str = typer.Option("lite_train_lite_infer", "--mode", "-m", help="The mode whose last passing run gives the results."),
    root: Path = typer.Option(Path("."), "--root", help="The repository root (where test_tipc/ is)."),
) -> None:
    """Write golden inference results from the last passing run, on purpose.

    They go to the descriptor's checks.golden folder and to test_tipc/results/; every later run
    compares its inference results with them (atol/rtol from the descriptor).

    Example: tipcgen golden sample_models/bert-sst2/tipc.yaml --mode lite_train_lite_infer
    """
    from . import descriptor
    from . import golden as goldens
    from .run import check_mode

    check_mode(mode)
    written = goldens.regenerate(descriptor.load(target), root, mode)
    for item in written:
        typer.echo(f"{item.action:>11}  {item.path}")
    typer.echo("Commit them: later runs of this mode check their inference results against them.")


@app.command()
def doctor(
    config: Optional[str] = typer.Option(None, "--config", "-c", help="The config to check (default: the only test_tipc/configs/*/train_infer_python.txt)."),
    data_dir: Optional[str] = typer.Option(None, "--data-dir", help="Folder of the whole data set to check (default: $TIPC_DATA_DIR)."),
    root: Path = typer.Option(Path("."), "--root", help="The repository root (where test_tipc/ is)."),
) -> None:
    """Check this machine before a run: Python, paddle and its export format, GPU, ONNX tools, scripts, data.

    Exit code 1 if any check failed (its fix is printed under it), 0 otherwise.

    Example: tipcgen doctor --data-dir ../shared/data/sst2
    """
    from . import doctor as checkup

    checks = checkup.diagnose(root, config, data_dir)
    typer.echo(checkup.format_checks(checks))
    raise typer.Exit(checkup.exit_code(checks))


def main() -> None:
    try:
        app()
    except TipcgenError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
