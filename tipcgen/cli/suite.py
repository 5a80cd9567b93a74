"""`tipcgen suite`: every config × mode × chain in one command, locally (--jobs N) or on Ray (--ray).

Thin: the options become a SuiteRequest (suite/request.py, checked there), suite/run.py plans and runs it and
writes its results; this prints them and exits. User mistakes raise TipcgenError, which tipcgen's main prints
(exit 2). Registered in cli.py.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from tipcgen.cli.echo import echo
from tipcgen.cli.progress import Color
from tipcgen.format import chains as registry
from tipcgen.format.paths import JUNIT_XML, SUITE_JSON
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
    from tipcgen.suite import report
    from tipcgen.suite import run as suite_run
    from tipcgen.suite.request import SuiteRequest

    request = SuiteRequest(paths=tuple(paths or ()), modes=tuple(mode), chains=tuple(chain), jobs=jobs,
                           cores_per_chain=cores_per_chain, gpus_per_chain=gpus_per_chain, share_gpus=share_gpus,
                           timeout=timeout, output=output, root=root, lint_only=lint_only, ray=ray, address=address,
                           keep_work=keep_work, sandbox=sandbox, color=color.value).checked()
    chains, refused = suite_run.plan(request)
    if request.lint_only:
        for refusal in refused:
            echo(f"REFUSED {refusal.config}\n" + "\n".join(f"    {reason}" for reason in refusal.reasons))
        for item in chains:
            echo(f"run     {item.key}  ({Path(item.root) / item.config})")
        echo(f"{len(chains)} chain(s) to run, {len(refused)} config(s) refused", err=True)
        raise typer.Exit(1 if refused else 0)
    result, out = suite_run.run(request, chains, refused)
    echo(report.terminal_text(result))
    echo(f"summary: {out / SUITE_JSON}\njunit:   {out / JUNIT_XML}")
    raise typer.Exit(result.exit_code)
