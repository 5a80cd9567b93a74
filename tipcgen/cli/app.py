"""The tipcgen command line: parse arguments, call one library function, print, map errors to exit codes.

Heavy modules (jinja2, yaml) are imported inside the commands so that ``tipcgen --help`` stays fast;
nothing here ever imports paddle.
"""
from __future__ import annotations

import functools
import os
import shlex
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, cast, overload

import typer
from typer.core import TyperGroup

from tipcgen.cli.accept import accept as accept_command
from tipcgen.cli.import_cmd import import_ as import_command
from tipcgen.cli.align import align_app
from tipcgen.cli.echo import echo
from tipcgen.cli.progress import Color
from tipcgen.configs.locate import ROOT_HELP, find_root
from tipcgen.cli.new import Devices, new
from tipcgen.cli.repro import register as register_repro
from tipcgen.cli.schema import schema
from tipcgen.cli.suite import completing, suite
from tipcgen.core.errors import TipcgenError, os_error
from tipcgen.core.text import json_text, paint, terminal
from tipcgen.format import chains, paths
from tipcgen.format.words import FAILED, INTERRUPTED, LITE_TRAIN_LITE_INFER, MODES, PASSED, SKIPPED

if TYPE_CHECKING:  # typer 0.29 vendors click (typer._click); tipcgen depends on typer alone, never on click itself
    from typer._click import Context as ClickContext
    from typer._click.formatting import HelpFormatter

    from tipcgen.descriptor import Descriptor

# The built-in samples, named here so that --help does not load the descriptor package (a quarter of a second);
# tests/test_cli.py checks the list against descriptor.samples.sample_names().
SAMPLES = "bert-sst2, question-matching"
# The commands in the order a user meets them: start a descriptor, render, run, then look at the run.
ORDER = ("new", "init", "run", "doctor", "report", "accept", "suite", "update", "golden", "lint", "import", "align",
         "schema")


class _Commands(TyperGroup):
    """`tipcgen --help`'s command list: in ORDER, each with its whole first sentence (click cuts it with '...'
    to fit 80 columns)."""

    def list_commands(self, ctx: ClickContext) -> list[str]:
        names = super().list_commands(ctx)
        return sorted(names, key=lambda name: ORDER.index(name) if name in ORDER else len(ORDER))

    def format_commands(self, ctx: ClickContext, formatter: HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=1000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


app = typer.Typer(
    cls=_Commands,
    # a wide terminal gets each command's sentence on one line; -h as well as --help, on every command
    context_settings={"max_content_width": 120, "help_option_names": ["-h", "--help"]},
    add_completion=True,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Render, run and check PaddlePaddle TIPC test chains.\n\n"
         "Example:\n\n    tipcgen init bert-sst2\n\n    tipcgen run --mode lite_train_lite_infer",
)


def _print_version(value: bool) -> None:
    if value:
        from tipcgen import __version__

        echo(f"tipcgen {__version__}")
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                          help="Print tipcgen's version and exit.")) -> None:
    """Options before the command (the group's help text is the Typer's above)."""


register_repro(align_app)
app.add_typer(align_app, name="align")
app.command(name="accept")(accept_command)
app.command()(suite)
app.command()(schema)
app.command()(new)


class Format(str, Enum):
    text = "text"
    json = "json"


class ReportFormat(str, Enum):
    all = "all"
    md = "md"
    html = "html"


class ConflictMode(str, Enum):
    keep = "keep"
    markers = "markers"


COMPLETE_MODES = completing(MODES)


def complete_chains(incomplete: str) -> list[str]:
    """`--chain`'s completion: the chain registry's names, read when asked."""
    return [name for name in chains.names() if name.startswith(incomplete)]
COMPLETE_SAMPLES = completing(SAMPLES.split(", "))


@overload
def _repository_root(root: Path, alias: Path | None, alias_name: str) -> Path: ...
@overload
def _repository_root(root: Path | None, alias: Path | None, alias_name: str) -> Path | None: ...
def _repository_root(root: Path | None, alias: Path | None, alias_name: str) -> Path | None:
    """--root, or its old name (kept hidden so that existing scripts work); both, if they differ, is a mistake."""
    if alias is None:
        return root
    if root not in (None, Path("."), alias):
        raise TipcgenError(f"--root {root} and {alias_name} {alias} name different folders",
                           f"pass --root only ({alias_name} is its old name)")
    return alias


def _color(choice: str = "auto") -> bool:
    """Whether a command colours its output (core/console.py: --color, FORCE_COLOR, NO_COLOR, a terminal)."""
    from tipcgen.core.console import wants_color

    return wants_color(choice)


_PAINT = {"conflict": "red", "merged": "cyan", "updated": "green", "created": "green", "removed": "yellow",
          "kept": "dim"}


def _action(word: str, color: bool) -> str:
    """A right-aligned action word (`    updated`), coloured only for a terminal; the word says it all without."""
    text = f"{word:>11}"
    return paint(text, _PAINT[word]) if color and word in _PAINT else text


@app.command()
def init(
    targets: List[str] = typer.Argument(..., metavar="SAMPLE_OR_DESCRIPTOR", autocompletion=COMPLETE_SAMPLES, help=f"Built-in sample names ({SAMPLES}) or paths "
                                        "to descriptor .yaml files: each model is added beside those rendered there before."),
    root: Path = typer.Option(Path("."), "--root", help="The repository root to write test_tipc/ into."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", hidden=True, help="The old name of --root."),
    force: bool = typer.Option(False, "--force", help="Replace files that differ (old ones are kept under .tipcgen/backup/)."),
    devices: Devices = typer.Option(Devices.all, "--devices", help="all: GPU and CPU entries; cpu: only CPU entries."),
    submission: bool = typer.Option(False, "--submission", help="Keep the repository's runner, common_func.sh and prepare.sh; write only the config and docs (tipcgen run then drives that runner)."),
) -> None:
    """Render test_tipc/ (configs, runner, prepare.sh, docs) from descriptors.

    A repository holds many models: one runner, common_func.sh and prepare.sh serve all of them, so a
    model rendered here before is kept (and re-rendering one leaves the others' files as they were).

    Example: tipcgen init bert-sst2 question-matching --root my_repo --devices cpu
    """
    from tipcgen import descriptor
    from tipcgen.render import repository

    output = _repository_root(root, output, "--output")
    descs = [descriptor.load(target) for target in targets]
    written = repository.init(descs, output, force=force, devices=devices.value, on_note=lambda line: echo(line, err=True),
                              submission=submission)
    for item in written:
        echo(f"{item.action:>11}  {output / item.path}")
    created = sum(1 for w in written if w.action != "unchanged")
    echo(f"{', '.join(d.model_name for d in descs)}: {created} file(s) written, {len(written) - created} unchanged. Next:")
    for line in _next_runs(output, [d.model_name for d in descs]):
        echo(f"  {line}")


def _next_runs(root: Path, models: list[str]) -> list[str]:
    """The `tipcgen run` command that works after init: with several configs in the repository, one per model
    rendered now, naming its --config (run refuses to guess); --root where the repository is not here."""
    where = f" --root {shlex.quote(str(root))}" if str(root) != "." else ""
    several = len(list((root / paths.CONFIGS).glob(f"*/{paths.config_rel('*').rsplit('/', 1)[-1]}"))) > 1
    if not several:
        return [f"tipcgen run --mode {LITE_TRAIN_LITE_INFER}{where}"]
    return [f"tipcgen run --config {shlex.quote(paths.config_rel(model))} --mode {LITE_TRAIN_LITE_INFER}{where}"
            for model in models]


@app.command()
def update(
    root: Optional[Path] = typer.Option(None, "--root", help="The repository root tipcgen init rendered into, which holds .tipcgen-answers.yml (default: found from the current folder up, as for run)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", hidden=True, help="The old name of --root."),
    diff: bool = typer.Option(False, "--diff", help="Print what would change as unified diffs, and write nothing."),
    conflict: ConflictMode = typer.Option(ConflictMode.keep, "--conflict", help="keep: leave a conflicting file untouched; markers: write it with conflict markers to resolve by hand."),
) -> None:
    """Re-render after a descriptor edit or a tipcgen upgrade, keeping your own edits to generated files.

    Untouched files take the new render; edited ones are merged three ways (git merge-file) with what
    init rendered last time (.tipcgen/base/). Conflicts are listed, never resolved silently: exit code 1.

    Example: tipcgen update --diff
    """
    from tipcgen.render import update as updater

    output = find_root(_repository_root(root, output, "--output"))
    plan = updater.plan(output)
    color = _color()
    if plan.descriptor_changed:
        echo(f"descriptor {plan.new.descriptor} changed since the last render")
    if plan.old.tipcgen_version != plan.new.tipcgen_version:
        echo(f"tipcgen {plan.old.tipcgen_version} rendered it last time; this is tipcgen {plan.new.tipcgen_version}")
    if diff:
        echo(updater.diff_text(plan), nl=False)
    else:
        updater.apply(plan, markers=conflict is ConflictMode.markers)
    for item in plan.files:
        if item.action != updater.UNCHANGED:
            echo(f"{_action(item.action, color)}  {output / item.path}" + (f"  ({item.reason})" if item.reason else ""))
    unchanged = sum(1 for f in plan.files if f.action == updater.UNCHANGED)
    changes = [f for f in plan.changes if f.action != updater.CONFLICT]
    verb = "would change" if diff else "changed"
    echo(f"{len(changes)} file(s) {verb}, {len(plan.conflicts)} conflict(s), "
               f"{sum(1 for f in plan.files if f.action == updater.KEPT)} kept as you edited them, {unchanged} unchanged"
               + ("; nothing was written (--diff)" if diff else ""))
    if plan.conflicts:
        if conflict is ConflictMode.markers and not diff:
            hint = "resolve the <<<<<<< / >>>>>>> blocks in the files above, then run tipcgen update again"
        else:
            hint = ("the conflicting files were left as they are; see the change with tipcgen update --diff, or write "
                    "it into them with --conflict markers and resolve by hand")
        echo(f"conflicts: {hint}", err=True)
    raise typer.Exit(1 if plan.conflicts else 0)


class ChainProofs:
    """The proofs of a run, which live above run/ (tests/test_layering.py): the config's refusals
    (configs/preflight.refuse), the records taken at the runner's handshakes (repro/record.Recorder) and the
    export against the recorded trained checkpoint (repro/export_check.check_exports)."""

    def refuse(self, root: Path, config_path: Path, env: dict[str, str], desc: Descriptor | None) -> list[str]:
        from tipcgen.configs import preflight

        return preflight.refuse(root, config_path, env, desc)

    def recorder(self, root: Path, run_dir: Path, max_bytes: Optional[int], handshake: bool,
                 env: Optional[dict] = None):
        from tipcgen.repro import export_check, record

        return record.Recorder(root, run_dir, max_bytes or export_check.default_max_bytes(), handshake, env)

    def check_exports(self, root: Path, steps: list, config_text: str, python: Optional[str], env: dict,
                      records, max_bytes: Optional[int]) -> tuple[list, list[str]]:
        from tipcgen.repro import export_check

        return export_check.check_exports(root, steps, config_text, python, env, records=records, max_bytes=max_bytes)

    def load(self) -> None:
        from tipcgen.repro import export_check  # noqa: F401 (numpy, the .pdiparams reader)


@app.command()
def run(
    mode: str = typer.Option(LITE_TRAIN_LITE_INFER, "--mode", "-m", autocompletion=COMPLETE_MODES, help=", ".join(MODES[:-1]) + " or " + MODES[-1] + "."),
    config: Optional[str] = typer.Option(None, "--config", "-c", help="The config to run: a model's name (its folder under test_tipc/configs: -c bert_sst2) or the config file (default: the only test_tipc/configs/*/train_infer_python.txt, or the chain's)."),
    data_dir: Optional[str] = typer.Option(None, "--data-dir", help="Folder of the whole data set for whole-data modes (sets TIPC_DATA_DIR)."),
    step_timeout: Optional[int] = typer.Option(None, "--step-timeout", min=1, help="Seconds before a step is killed and reported as a timeout (default: the descriptor's run.step_timeout); a script silent for 300 s longer is stopped as stuck."),
    model_dir: Optional[str] = typer.Option(None, "--model-dir", help="whole_infer: a train output folder to export and infer (sets TIPC_MODEL_DIR; default: the latest train run)."),
    root: Optional[Path] = typer.Option(None, "--root", help=ROOT_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Show only the step lines (RUN when a step starts, PASS/FAIL/SKIP when it ends), not prepare.sh's output and the runner's other lines."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Also print each step's log as it grows (the scripts' own output: the loss, the inference results)."),
    color: Color = typer.Option(Color.auto, "--color", help="auto (a terminal, unless NO_COLOR; FORCE_COLOR gives colour to a log too), always or never."),
    chain: str = typer.Option(chains.BASIC, "--chain", autocompletion=complete_chains, help=chains.run_help()),
    python: Optional[str] = typer.Option(None, "--python", help="The interpreter for this run (sets TIPC_PYTHON), whatever the config's python: line says; the config is left as it is."),
    max_checkpoint_bytes: Optional[int] = typer.Option(None, "--max-checkpoint-bytes", min=1, help="The largest checkpoint the export check reads (default: a quarter of the machine's memory)."),
    sandbox: bool = typer.Option(False, "--sandbox", help="Run prepare.sh and the runner in a sandbox (bubblewrap): only the repository and the run folder writable, no network; exit 2 where bubblewrap is missing."),
) -> None:
    """Prepare the data, run the chain's generated scripts, and summarise the results.

    Writes summary.json and junit.xml next to results_python.log; exit code 0 only if every step passed.
    The mode's last run is kept aside in <mode>.previous (its summary and report, no weight file).
    This runs the repository's code with your rights; --sandbox confines the chain (docs/SECURITY.md).

    Example: tipcgen run --mode whole_train_whole_infer --data-dir ../shared/data/sst2
    """
    from tipcgen.results import summary_text
    from tipcgen.run import pipeline
    from tipcgen.run.request import RunRequest

    from tipcgen.cli.progress import RunDisplay

    root = find_root(root)
    if quiet and verbose:
        raise TipcgenError("--quiet and --verbose ask for less and for more", "pass one of them")
    with RunDisplay(quiet=quiet, verbose=verbose, color=color.value) as display:
        request = RunRequest(mode=mode, root=root, config=config, chain=chain, data_dir=data_dir, model_dir=model_dir,
                             step_timeout=step_timeout, python=python, sandbox=sandbox,
                             max_checkpoint_bytes=max_checkpoint_bytes, quiet=quiet, on_line=display.on_line,
                             on_run_dir=display.on_run_dir)
        summary = pipeline.run(request, ChainProofs())
    colored = _color(color.value)
    echo(summary_text.terminal_text(summary, color=colored), color=colored or None)
    run_dir = paths.run_dir(root, summary.model, summary.mode, chain)
    echo(f"summary: {run_dir / paths.SUMMARY_JSON}\njunit:   {run_dir / paths.JUNIT_XML}")
    if summary.previous:  # the run this one replaced, moved aside with its report (never its weights)
        echo(f"previous run: {root / summary.previous}")
    raise typer.Exit(summary.exit_code)


@app.command()
def report(
    run_dir: Optional[Path] = typer.Argument(None, help="A run folder, test_tipc/output/<model>/<mode> (default: the newest under --root)."),
    format: ReportFormat = typer.Option(ReportFormat.all, "--format", help="md, html, or all (both)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="The folder to write into (default: the run folder, next to summary.json)."),
    align: Optional[Path] = typer.Option(None, "--align", help="Add the alignment table: the JSON of tipcgen align report --json, or the reproduction folder (default: align_report.json in the run folder, if any)."),
    root: Optional[Path] = typer.Option(None, "--root", help=ROOT_HELP),
    force: bool = typer.Option(False, "--force", help="Replace a different report already in --output (the old one is kept under .tipcgen/backup/)."),
) -> None:
    """Write one document (Markdown and HTML) of a run, for a submission or a pull request.

    It holds the environment, the steps, a timing chart, the loss curve (from train.log), the result
    checks, the alignment table and the commands to reproduce.

    Markdown links the PNGs next to it; the HTML embeds them (one file, no JavaScript). Without
    matplotlib the report is written without pictures, and says so. In the run folder a report is
    replaced; in an --output folder, a different existing report only with --force (backed up).

    Example: tipcgen report test_tipc/output/bert_sst2/lite_train_lite_infer --format html
    """
    from tipcgen.outputs import accept
    from tipcgen.outputs import report as reporter

    root = find_root(root)
    folder = run_dir if run_dir is not None else reporter.find_run(root)
    formats = reporter.FORMATS if format is ReportFormat.all else (format.value,)
    acceptance = accept.for_report(folder, root if run_dir is None else reporter.root_of(folder))
    result, paths = reporter.write(folder, output, formats, align, root if run_dir is None else None, force, acceptance)
    for path in paths:
        echo(f"      wrote  {path}")
    for note in result.notes:
        echo(f"note: {terminal(note)}", err=True)
    s = result.summary
    cut = f", {s.count(INTERRUPTED)} interrupted" if s.count(INTERRUPTED) else ""
    echo(f"{s.model} / {s.mode}: {result.verdict} ({s.count(PASSED)} passed, {s.count(FAILED)} failed, "
               f"{s.count(SKIPPED)} skipped{cut})")


@app.command()
def lint(
    configs: List[Path] = typer.Argument(..., help="Config files or folders (searched for *.txt)."),
    root: Optional[Path] = typer.Option(None, "--root", help="The repository root: check that the scripts the config names exist there, and that each accepts the keys the runner passes it (its --help, run in a sandbox, cached in your cache folder)."),
    repo_root: Optional[Path] = typer.Option(None, "--repo-root", hidden=True, help="The old name of --root."),
    format: Format = typer.Option(Format.text, "--format", help="text for people, json for machines."),
    trust_repo: bool = typer.Option(False, "--trust-repo", help="Run the repository's scripts' --help even where no sandbox (bubblewrap) can be had: their code runs with your rights (docs/SECURITY.md)."),
    select: List[str] = typer.Option([], "--select", metavar="RULE", help="Report only these rules (repeatable, or comma-separated)."),
    ignore: List[str] = typer.Option([], "--ignore", metavar="RULE", help="Leave out these rules (repeatable, or comma-separated); an ignored error no longer fails the exit code."),
    statistics: bool = typer.Option(False, "--statistics", help="Print how many findings each rule has (most first) instead of the findings."),
) -> None:
    """Find what upstream TIPC runners get silently wrong in configs (shifted lines, ':' in values, list lengths).

    To silence one finding on purpose, write a line in a .tipcgen-lint file beside the configs (the nearest
    at or above a config's folder; test_tipc/.tipcgen-lint covers them all), never in the config:
    PATH[:LINE|:KEY] RULE[,RULE...]  # why. A silence that silences nothing is an unused-silence finding.

    Exit code 1 if any finding is an error, 2 if a file cannot be read as UTF-8 text, 0 otherwise.

    Example: tipcgen lint test_tipc/configs --root .
    """
    from tipcgen.configs import lint as linter
    from tipcgen.configs import lint_silence

    repo_root = _repository_root(root, repo_root, "--repo-root") if root or repo_root else None
    for path in configs:
        if not path.exists():
            raise TipcgenError(f"{path}: no such file or folder", "pass config files or folders that hold them")
    chosen, left_out = linter.check_rules(select, "--select"), linter.check_rules(ignore, "--ignore")
    found = linter.lint_report([str(p) for p in configs], repo_root=str(repo_root) if repo_root else None,
                               check_flags=repo_root is not None, unsandboxed=trust_repo)
    silences = lint_silence.apply(found, linter.config_files(configs))  # .tipcgen-lint: silenced on purpose
    findings = linter.chosen(silences.kept + silences.unused, chosen, left_out)
    if statistics:
        rows = linter.statistics(findings)
        if format is Format.json:
            echo(json_text([{"rule": rule, "severity": severity, "count": n} for n, rule, severity in rows]))
        else:
            for n, rule, severity in rows:
                echo(f"{n:>7}  {rule:<22}  {severity}")
    elif format is Format.json:
        echo(linter.findings_to_json(findings))
    else:
        for finding in findings:
            echo(linter.format_finding(finding))
    if format is Format.text:
        errors = sum(1 for f in findings if f.severity == "error")
        warnings = sum(1 for f in findings if f.severity == "warning")
        unchecked = sum(1 for f in findings if f.rule == "not-position-checked")
        silenced = len(linter.chosen(silences.silenced, chosen, left_out))
        where = ", ".join(sorted({str(s) for s in silences.sources}))
        echo(f"{errors} error(s), {warnings} warning(s)" + (f"; {unchecked} file(s) whose lines' positions were not "
                                                           "checked (not-position-checked)" if unchecked else "")
             + (f"; {silenced} silenced ({where})" if silenced else ""), err=True)
    raise typer.Exit(1 if linter.has_errors(findings) else 0)


app.command(name="import")(import_command)  # cli/import_cmd.py


@app.command()
def golden(
    target: str = typer.Argument(..., help="The descriptor (sample name or path) whose golden results to write."),
    mode: str = typer.Option(LITE_TRAIN_LITE_INFER, "--mode", "-m", autocompletion=COMPLETE_MODES, help="The mode whose last passing run gives the results."),
    root: Optional[Path] = typer.Option(None, "--root", help=ROOT_HELP),
) -> None:
    """Write golden inference results from the last passing run, on purpose.

    They go to test_tipc/results/ and to the descriptor's checks.golden folder (for a built-in sample,
    to the copy init rendered under --root: never into the installed package); every later run
    compares its inference results with them (atol/rtol from the descriptor).

    Example: tipcgen golden sample_models/bert-sst2/tipc.yaml --mode lite_train_lite_infer
    """
    from tipcgen import descriptor
    from tipcgen.outputs import golden as goldens
    from tipcgen.run.pipeline import check_mode

    check_mode(mode)
    root = find_root(root)
    desc = descriptor.load(target)
    written = goldens.regenerate(desc, root, mode)
    for item in written:
        echo(f"{item.action:>11}  {item.path}")
    warning = goldens.unseeded_warning(root, desc.model_name, mode)
    if warning:
        echo(f"warning: {warning}", err=True)
    echo("Commit them: later runs of this mode check their inference results against them.")


@app.command()
def doctor(
    config: Optional[str] = typer.Option(None, "--config", "-c", help="The config to check: a model's name (-c bert_sst2) or the config file (default: the only test_tipc/configs/*/train_infer_python.txt)."),
    data_dir: Optional[str] = typer.Option(None, "--data-dir", help="Folder of the whole data set to check (default: $TIPC_DATA_DIR)."),
    root: Optional[Path] = typer.Option(None, "--root", help=ROOT_HELP),
    trust_repo: bool = typer.Option(False, "--trust-repo", help="Run the repository's scripts' --help even where no sandbox (bubblewrap) can be had: their code runs with your rights (docs/SECURITY.md)."),
    format: Format = typer.Option(Format.text, "--format", help="text for people, json for machines (each check's name, status, detail and fix)."),
) -> None:
    """Check this machine before a run: Python, paddle (also inside run --sandbox's sandbox), GPU, ONNX tools, git, scripts, flags, descriptor, data.

    Exit code 1 if any check failed (its fix is printed under it), 0 otherwise.

    Example: tipcgen doctor --data-dir ../shared/data/sst2
    """
    from tipcgen.run import doctor as checkup

    checks = checkup.diagnose(find_root(root), config, data_dir, unsandboxed=trust_repo)
    echo(checkup.checks_json(checks) if format is Format.json else checkup.format_checks(checks))
    raise typer.Exit(checkup.exit_code(checks))


@functools.cache
def _command() -> TyperGroup:
    """The click command Typer builds from `app` (what `app()` builds anew on every call: a tenth of an in-process
    call's CPU in the tests, which call main() many times in one interpreter), with _metavars' names."""
    command = cast(TyperGroup, typer.main.get_command(app))  # an app of several commands builds a TyperGroup
    _metavars(command)
    return command


def _metavars(command: object) -> None:
    """Every value's placeholder in --help as its name in capitals (`--mode MODE`, `CONFIGS...`), not Typer's
    type names (`<str>`, `<list[str]>`, `<float range>`, `{configs}...`); a choice keeps its list of choices."""
    for param in getattr(command, "params", []):
        descriptor = getattr(param, "type_descriptor", None)
        if param.metavar is None and not getattr(param, "is_flag", False) and param.name \
                and not getattr(descriptor, "is_choice", False):
            param.metavar = param.name.upper()
        if getattr(param, "param_type_name", "") == "argument" and not getattr(descriptor, "is_choice", False):
            param.display_type = lambda ctx: ""  # the help's argument row: its name only, not `<list[str]>`
    for sub in getattr(command, "commands", {}).values():
        _metavars(sub)


def main(argv: list[str] | None = None, prog_name: str | None = None) -> None:
    """Run the CLI on argv (default: the command line) as prog_name (default: how it was started). A user's
    mistake (TipcgenError) or an operating-system error on a path they gave (too long, a link loop, no
    permission, ...) is one line on stderr and exit code 2. TIPCGEN_DEBUG=1
    shows the traceback of an OSError instead; any other exception is a bug and always shows it."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):  # a path or config text the terminal cannot encode is escaped, not fatal
            stream.reconfigure(errors="backslashreplace")
    try:
        _command()(args=argv, prog_name=prog_name)
    except TipcgenError as exc:  # one error, its control characters and escapes shown, never acted on
        echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except (OSError, RuntimeError) as exc:
        # pathlib before 3.13 reports a symbolic link loop in Path.resolve() as RuntimeError("Symlink loop from ...")
        loop = isinstance(exc, RuntimeError) and str(exc).startswith("Symlink loop from ")
        if os.environ.get("TIPCGEN_DEBUG", "") not in ("", "0") or not (isinstance(exc, OSError) or loop):
            raise
        error = os_error(exc) if isinstance(exc, OSError) else TipcgenError(
            f"cannot use {str(exc).removeprefix('Symlink loop from ')}: a symbolic link loop",
            "fix or remove the link")
        echo(f"error: {error}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        echo("interrupted (Ctrl-C)", err=True)
        sys.exit(130)
