"""One ``tipcgen suite``, from its checked request (suite/request.py) to its written results: the plan (configs ×
modes × chains through the lint gate), then the chains, locally in slots (suite.run_local) or as Ray tasks
(ray_tasks.run_ray), then suite.json and junit.xml under the output folder (report.py).

Nothing is written before the output folder is checked and claimed (owned.py): a mistake in the request leaves
the last suite's results as they were. A TipcgenError is the user's mistake (exit 2, one message).
"""
from __future__ import annotations

import signal
import time
from pathlib import Path

from tipcgen.core.errors import TipcgenError
from tipcgen.format.paths import JUNIT_XML, SUITE_ELSEWHERE, SUITE_JSON, SUITE_OUTPUT, TEST_TIPC
from tipcgen.suite import owned, report
from tipcgen.suite import slots as machine
from tipcgen.suite import suite as planner
from tipcgen.suite.request import SuiteRequest
from tipcgen.suite.suite import Chain, Refused


def plan(request: SuiteRequest) -> tuple[list[Chain], list[Refused]]:
    """The chains to run and the configs the lint gate refused (request: checked); a plan of nothing is refused."""
    assert request.root is not None, "plan takes a checked request (SuiteRequest.checked)"
    chains, refused = planner.plan(list(request.paths), request.root, list(request.modes), list(request.chains))
    if not chains and not refused:
        paths = request.paths
        raise TipcgenError("no config of the chosen chains was found" + (f" in {', '.join(paths)}" if paths else ""),
                           "name config files or folders, or choose --chain basic|paddle2onnx")
    return chains, refused


def output_of(request: SuiteRequest) -> Path:
    """--output, else --root's test_tipc/output/suite, or ./tipc-suite where --root has no test_tipc/."""
    assert request.root is not None
    root = request.root
    return request.output or (root / SUITE_OUTPUT if (root / TEST_TIPC).is_dir() else root / SUITE_ELSEWHERE)


def run(request: SuiteRequest, chains: list[Chain], refused: list[Refused]) -> tuple[report.SuiteResult, Path]:
    """Run the planned chains and write suite.json and junit.xml; the result and the output folder they are in.
    What cannot run here (no sandbox, no Ray, too few GPUs, an output folder that is not the suite's) is refused
    before anything is written."""
    assert request.root is not None, "run takes a checked request (SuiteRequest.checked)"
    if request.sandbox:
        from tipcgen.core import sandbox as confine

        found, why = confine.available()
        if not found:
            raise TipcgenError(f"--sandbox: no sandbox can be had here ({why})",
                               f"{confine.INSTALL_HINT}, or run without --sandbox")
        if request.on_ray:
            raise TipcgenError("--sandbox runs local chains only", "leave out --ray/--address, or --sandbox")
    result = report.SuiteResult(refused=refused, engine="ray" if request.on_ray else "local")
    slot_list: list[machine.Slot] = []
    if request.on_ray:
        from tipcgen.suite import ray_tasks as suite_ray

        suite_ray.require()
    else:
        gpus = machine.detect_gpus()
        if not gpus:
            result.notes.append("no GPU found (nvidia-smi is missing or lists none): chains run on CPU")
        slot_list = machine.slots(request.jobs, request.cores_per_chain, gpus, request.gpus_per_chain,
                                  request.share_gpus)
    out = owned.checked_links(output_of(request), request.root, chains).resolve()
    owned.check_output(out, [Path(chain.root) for chain in chains])
    # Nothing is written before here: a mistake above leaves the last suite's results as they were.
    owned.claim_output(out)
    _run_chains(request, chains, out, slot_list, result)
    report.write_json(result, out / SUITE_JSON)
    report.write_junit(result, out / JUNIT_XML)
    return result, out


def _run_chains(request: SuiteRequest, chains: list[Chain], out: Path, slot_list: list[machine.Slot],
                result: report.SuiteResult) -> None:
    """The chains, their results into result. SIGINT, SIGTERM and SIGHUP (one not ignored at start) stop the
    chains, which still write their summaries, and the suite still writes suite.json: run's guard, the same for
    both commands."""
    from tipcgen.run import guard

    progress = report.Progress(len(chains), color=request.color)
    started = time.monotonic()
    with guard.StopSignals() as signals:
        try:
            if request.on_ray:
                from tipcgen.suite import ray_tasks as suite_ray

                result.results = suite_ray.run_ray(chains, out, request.address, request.cores_per_chain or 1,
                                                   request.gpus_per_chain, request.timeout, progress, result.notes)
            else:
                result.results = planner.run_local(chains, out, slot_list, request.timeout, progress,
                                                   request.keep_work, request.sandbox)
        except guard.Interrupted:  # before any chain started (joining Ray, shipping the repositories)
            result.results = planner.not_started(chains)
        signals.armed = False
        if signals.received is not None:
            result.interrupted_by = signal.Signals(signals.received).name
    progress.close()
    result.wall_seconds = round(time.monotonic() - started, 3)
