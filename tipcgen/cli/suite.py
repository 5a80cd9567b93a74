"""`tipcgen suite`: every config × mode × chain in one command, locally (--jobs N) or on Ray (--ray).

Thin: plan with tipcgen.suite, run with suite.run_local or suite_ray.run_ray, write with suite_report;
user mistakes raise TipcgenError, which tipcgen's main prints (exit 2). Registered in cli.py.
"""
from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import List, Optional

import typer

from tipcgen.cli.echo import echo
from tipcgen.cli.progress import Color
from tipcgen.configs.locate import find_root
from tipcgen.core.errors import TipcgenError
from tipcgen.format import chains as registry
from tipcgen.format.paths import JUNIT_XML, SUITE_ELSEWHERE, SUITE_JSON, SUITE_OUTPUT, TEST_TIPC
from tipcgen.format.words import LITE_TRAIN_LITE_INFER, MODES



def _complete_suite_chains(incomplete: str) -> list[str]:
    """`--chain`'s completion: the chains the registry says suite plans (format/chains.py), read when asked."""
    return [chain.name for chain in registry.suite_chains() if chain.name.startswith(incomplete)]


def completing(words):
    """A shell_complete for an option whose values are these words (the shell completes `--mode lite<TAB>`)."""
    def complete(incomplete: str) -> list[str]:
        return [word for word in words if word.startswith(incomplete)]

    return complete


def suite(
    paths: Optional[List[str]] = typer.Argument(None, help="Config files, folders (a repository root: its test_tipc/configs) or quoted globs (default: --root's test_tipc/configs)."),
    mode: List[str] = typer.Option([LITE_TRAIN_LITE_INFER], "--mode", "-m", autocompletion=completing(MODES), help="A mode to run every config in (repeatable)."),
    chain: List[str] = typer.Option([registry.BASIC], "--chain", autocompletion=_complete_suite_chains, help=registry.suite_help()),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="Chains run side by side on this machine."),
    cores_per_chain: Optional[int] = typer.Option(None, "--cores-per-chain", min=1, help="CPU cores per chain (affinity, OMP_NUM_THREADS, CPU_NUM; default: the cores / --jobs)."),
    gpus_per_chain: int = typer.Option(1, "--gpus-per-chain", min=0, help="GPUs per chain (CUDA_VISIBLE_DEVICES); 0: none."),
    share_gpus: bool = typer.Option(False, "--share-gpus", help="Let chains share GPUs (default: never two chains on one GPU)."),
    timeout: float = typer.Option(3600, "--timeout", help="Seconds a chain may run before it is killed and reported as a timeout (finite, above 0)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Folder for suite.json, junit.xml and each chain's run folder (default: --root's test_tipc/output/suite, or ./tipc-suite where --root has no test_tipc/)."),
    root: Optional[Path] = typer.Option(None, "--root", help="The repository of configs that lie in no test_tipc/ folder, and the default configs (default: found from the current folder up, as for run)."),
    lint_only: bool = typer.Option(False, "--lint-only", help="Only the lint gate and the plan: name each refused config, run nothing."),
    ray: bool = typer.Option(False, "--ray", help="Run each chain as a Ray task (a local Ray, or the cluster of --address)."),
    address: Optional[str] = typer.Option(None, "--address", help="A running Ray cluster (e.g. 127.0.0.1:6379); implies --ray."),
    keep_work: bool = typer.Option(False, "--keep-work", help="Keep each chain's working copy (under OUTPUT/work)."),
    sandbox: bool = typer.Option(False, "--sandbox", help="Run each chain with tipcgen run --sandbox (bubblewrap: only its repository copy and run folder writable, no network); exit 2 where bubblewrap is missing."),
    color: Color = typer.Option(Color.auto, "--color", help="auto (a terminal, unless NO_COLOR; FORCE_COLOR gives colour to a log too), always or never."),
) -> None:
    """Run many TIPC chains: a lint gate, then each chain as `tipcgen run` in its own copy of its repository.

    Writes suite.json, junit.xml (a testsuite per model) and runs/<model>/<chain>/<mode>/ under --output;
    exit code 0 only if no config was refused and every chain passed. Without --lint-only this runs each
    repository's code (prepare.sh, its scripts) with your rights; --sandbox confines it (docs/SECURITY.md).

    Example: tipcgen suite . ../other-model --jobs 2 --timeout 900
    """
    from tipcgen.run import guard
    from tipcgen.suite import owned, report
    from tipcgen.suite import slots as machine
    from tipcgen.suite import suite as planner

    root = find_root(root)
    owned.check_limits(timeout, jobs)
    owned.check_modes(mode)
    owned.check_chains(chain)
    chains, refused = planner.plan(paths or [], root, mode, chain)
    if not chains and not refused:
        raise TipcgenError("no config of the chosen chains was found" + (f" in {', '.join(paths)}" if paths else ""),
                           "name config files or folders, or choose --chain basic|paddle2onnx")
    if lint_only:
        for item in refused:
            echo(f"REFUSED {item.config}\n" + "\n".join(f"    {reason}" for reason in item.reasons))
        for item in chains:
            echo(f"run     {item.key}  ({Path(item.root) / item.config})")
        echo(f"{len(chains)} chain(s) to run, {len(refused)} config(s) refused", err=True)
        raise typer.Exit(1 if refused else 0)
    if sandbox:
        from tipcgen.core import sandbox as confine

        found, why = confine.available()
        if not found:
            raise TipcgenError(f"--sandbox: no sandbox can be had here ({why})",
                               f"{confine.INSTALL_HINT}, or run without --sandbox")
        if ray or address:
            raise TipcgenError("--sandbox runs local chains only", "leave out --ray/--address, or --sandbox")
    result = report.SuiteResult(refused=refused, engine="ray" if ray or address else "local")
    if ray or address:
        from tipcgen.suite import ray_tasks as suite_ray

        suite_ray.require()
    else:
        gpus = machine.detect_gpus()
        if not gpus:
            result.notes.append("no GPU found (nvidia-smi is missing or lists none): chains run on CPU")
        slots = machine.slots(jobs, cores_per_chain, gpus, gpus_per_chain, share_gpus)
    out = owned.checked_links(output or (root / SUITE_OUTPUT if (root / TEST_TIPC).is_dir() else root / SUITE_ELSEWHERE),
                              root, chains).resolve()
    owned.check_output(out, [Path(chain.root) for chain in chains])
    # Nothing is written before here: a mistake above leaves the last suite's results as they were.
    owned.claim_output(out)
    progress = report.Progress(len(chains), color=color.value)
    started = time.monotonic()
    # SIGINT, SIGTERM and SIGHUP (one not ignored at start) stop the chains, which still write their
    # summaries, and the suite still writes suite.json: run's guard, the same for both commands.
    with guard.StopSignals() as signals:
        try:
            if ray or address:
                result.results = suite_ray.run_ray(chains, out, address, cores_per_chain or 1,
                                                   gpus_per_chain, timeout, progress, result.notes)
            else:
                result.results = planner.run_local(chains, out, slots, timeout, progress, keep_work, sandbox)
        except guard.Interrupted:  # before any chain started (joining Ray, shipping the repositories)
            result.results = planner.not_started(chains)
        signals.armed = False
        if signals.received is not None:
            result.interrupted_by = signal.Signals(signals.received).name
    progress.close()
    result.wall_seconds = round(time.monotonic() - started, 3)
    report.write_json(result, out / SUITE_JSON)
    report.write_junit(result, out / JUNIT_XML)
    echo(report.terminal_text(result))
    echo(f"summary: {out / SUITE_JSON}\njunit:   {out / JUNIT_XML}")
    raise typer.Exit(result.exit_code)
