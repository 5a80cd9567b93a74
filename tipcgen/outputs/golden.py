"""Golden results: taken on purpose from a passing run, committed, and checked by every later run.

``tipcgen golden DESCRIPTOR --mode MODE`` copies the inference results of the last passing run of
MODE into the descriptor's golden folder and into ``test_tipc/results/`` (the compare_results
convention: ``python_<model>_<mode>_results_<precision>.txt``, one ``<name>\\t<json>`` line per example).
"""
from __future__ import annotations

import json
from pathlib import Path

from tipcgen.core import inputs
from tipcgen.core.errors import TipcgenError
from tipcgen.core.writes import Written, write_tree
from tipcgen.descriptor import Descriptor, samples_dir
from tipcgen.format.chains import FIXED, GOLDEN
from tipcgen.format.paths import RESULTS_DIR, SUMMARY_JSON, golden_name
from tipcgen.format.paths import run_dir as run_dir_of
from tipcgen.format.words import CHECK, FAILED, INFER, PASSED
from tipcgen.render.repository import golden_dir
from tipcgen.results.summary import Summary, load_summary
from tipcgen.results.summary_check import inside
from tipcgen.run import seeds

PRECISIONS = ("fp32", "fp16", "int8")
FIXED_CASES = "cases.json"  # check_inference.py's list of the results files it wrote


def result_lines(log: Path) -> list[str]:
    """The `<name>\\t<json>` lines of an inference log."""
    out = []
    for line in inputs.lines(log, "inference log"):  # a regular file, bounded (core/inputs.py)
        name, tab, payload = line.partition("\t")
        if tab and name and payload.startswith(("{", "[")):
            out.append(line)
    return out


def collect(run_dir: Path, model: str, mode: str) -> dict[str, str]:
    """Golden file name → text, one per trained model and precision, from the first CPU inference log of each."""
    summary = run_dir / SUMMARY_JSON
    if not summary.is_file():
        raise TipcgenError(f"no run of {mode} under {run_dir}", f"run it first: tipcgen run --mode {mode}")
    run = load_summary(summary)  # SummaryFileError (exit 2) names the file and the field
    # The old golden results may fail on purpose (the model changed): every other step must pass.
    failed = [s.name for s in run.steps if s.status == FAILED
              and not (s.kind == CHECK and s.check.reference == GOLDEN)]
    if failed or run.problems or run.was_interrupted or not run.count(PASSED):
        raise TipcgenError(f"the last run of {mode} did not pass ({summary}: failed {', '.join(failed) or 'before any step'})",
                           "golden results are taken from a passing run only: fix the chain, run it again")
    files: dict[str, str] = {}
    # Per trained model and precision, the first CPU inference log (in log-name order, as before records had fields).
    cpu = [s for s in run.steps if s.kind == INFER and s.status == PASSED and s.case.device == "cpu" and s.log
           and s.training.name and s.case.precision in PRECISIONS]
    for step in sorted(cpu, key=lambda s: Path(s.log).name):
        name = golden_name(model, mode, step.training.name, step.case.precision)
        log = inside(run_dir, Path(step.log).name)  # a regular file inside the run folder, links not out
        if name in files or log is None:
            continue
        lines = result_lines(log)
        if lines:
            files[name] = "\n".join(lines) + "\n"
    files.update(fixed_results(run_dir, run, model, mode))
    if not files:
        raise TipcgenError(f"no inference log under {run_dir} prints `<name>\\t<json>` result lines, and the "
                           "chain's own check (check_inference.py) wrote no results",
                           "export the model with paddle.jit.save, or make the inference script print one such line per example")
    return files


def fixed_results(run_dir: Path, run: Summary, model: str, mode: str) -> dict[str, str]:
    """Golden file name → text from the chain's own check: the first CPU configuration of each precision
    per trained model (`python_<model>_<mode>_gpus_<..>_fixed_results_<precision>.txt`), from the check
    steps' records and the cases.json check_inference.py wrote next to their results."""
    files: dict[str, str] = {}
    checks = sorted((s for s in run.steps if s.kind == CHECK and s.check.reference == FIXED and s.training.name),
                    key=lambda s: s.name)
    for step in checks:
        folder = run_dir / step.name  # tipc_fixed_check writes its results there
        try:
            cases = json.loads(inputs.read_text(folder / FIXED_CASES, "cases.json", 1 << 20))
        except (OSError, ValueError, RecursionError, TipcgenError):  # none, or not one check_inference.py wrote
            continue
        for case in cases if isinstance(cases, list) else []:
            if not isinstance(case, dict) or case.get("place") != "cpu" or case.get("precision") not in PRECISIONS:
                continue
            path = inside(run_dir, f"{step.name}/{Path(str(case.get('file', ''))).name}")
            name = golden_name(model, mode, f"{step.training.name}_fixed", case["precision"])
            lines = result_lines(path) if path is not None else []
            if lines and name not in files:
                files[name] = "\n".join(lines) + "\n"
    return files


def regenerate(desc: Descriptor, root: Path, mode: str) -> list[Written]:
    """Write the golden results of the last passing run of mode (on purpose: they replace the old ones).

    They go to test_tipc/results/ (where the chain's check reads them) and to the descriptor's golden
    folder; for a built-in sample, whose descriptor lives in the installed package, to the copy of the
    sample that init rendered under root instead, if there is one: the package is never written."""
    folder = golden_dir(desc)
    if folder is None:
        raise TipcgenError(f"{desc.source} has no checks.golden folder", "add checks: {golden: golden} to the descriptor")
    run_dir = run_dir_of(root, desc.model_name, mode)
    files = collect(run_dir, desc.model_name, mode)
    targets = {f"{RESULTS_DIR}/{name}": text for name, text in files.items()}
    sample = builtin_sample(desc)
    if sample is None:  # written below the descriptor's folder, so that a golden folder committed as a link out of
        # it (golden -> /elsewhere) is refused by write_tree, never written through (issue #59 item 4)
        golden = Path(str(desc.checks.golden))
        written = write_tree({(golden / name).as_posix(): text for name, text in files.items()}, desc.base_dir,
                             force=True, backup=False)
    else:
        written = []
        copy = Path("sample_models") / sample
        if (root / copy / "tipc.yaml").is_file():
            golden = copy / str(desc.checks.golden)  # relative, without '..' (the descriptor checks it)
            targets.update({(golden / name).as_posix(): text for name, text in files.items()})
    return written + write_tree(targets, root, force=True, backup=False)


def builtin_sample(desc: Descriptor) -> str | None:
    """The sample's folder name when desc is one of the built-in samples (inside the installed package)."""
    try:
        return desc.base_dir.resolve().relative_to(samples_dir().resolve()).as_posix()
    except ValueError:
        return None


def unseeded_warning(root: Path, model: str, mode: str) -> str | None:
    """A warning when the run the golden results come from set no seed (its provenance names none): the next
    run may differ from them without the model changing."""
    try:
        run = load_summary(run_dir_of(root, model, mode) / SUMMARY_JSON)
    except (TipcgenError, OSError):
        return None
    if seeds.seeded(run.provenance) is not False:
        return None
    return (f"the run of {mode} these golden results come from set no seed (none in the config, the train script "
            "or its log): the next run may differ from them without the model changing; seed the training "
            "(paddle.seed, a --seed flag) and take them again")
