"""Golden results: taken on purpose from a passing run, committed, and checked by every later run.

``tipcgen golden DESCRIPTOR --mode MODE`` copies the inference results of the last passing run of
MODE into the descriptor's golden folder and into ``test_tipc/results/`` (the compare_results
convention: ``python_<model>_<mode>_results_<precision>.txt``, one ``<name>\\t<json>`` line per example).
"""
from __future__ import annotations

import re
from pathlib import Path

from .descriptor import Descriptor, samples_dir
from .errors import TipcgenError
from .render import Written, golden_dir, write_tree
from .results import SUMMARY_JSON, load_summary

_CASE = re.compile(r"^python_infer_cpu_(gpus_.+?)_usemkldnn_.*_precision_(fp32|fp16|int8)_")


def golden_name(model: str, mode: str, training: str, precision: str) -> str:
    return f"python_{model}_{mode}_{training}_results_{precision}.txt"


def result_lines(log: Path) -> list[str]:
    """The `<name>\\t<json>` lines of an inference log."""
    out = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
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
    failed = [s.name for s in run.steps if s.status == "failed"
              and not (s.kind == "check" and s.name.startswith("golden"))]
    if failed or run.problems or run.interrupted or not run.count("passed"):
        raise TipcgenError(f"the last run of {mode} did not pass ({summary}: failed {', '.join(failed) or 'before any step'})",
                           "golden results are taken from a passing run only: fix the chain, run it again")
    files: dict[str, str] = {}
    for log in sorted(run_dir.glob("python_infer_cpu_*.log")):
        match = _CASE.search(log.name)
        if not match or golden_name(model, mode, *match.groups()) in files:
            continue
        lines = result_lines(log)
        if lines:
            files[golden_name(model, mode, *match.groups())] = "\n".join(lines) + "\n"
    files.update(fixed_results(run_dir, model, mode))
    if not files:
        raise TipcgenError(f"no inference log under {run_dir} prints `<name>\\t<json>` result lines, and the "
                           "chain's own check (check_inference.py) wrote no results",
                           "export the model with paddle.jit.save, or make the inference script print one such line per example")
    return files


_FIXED = re.compile(r"^fixed_inputs_(gpus_.+)$")
_FIXED_CASE = re.compile(r"^cpu_usemkldnn_.*_precision_(fp32|fp16|int8)_results\.txt$")


def fixed_results(run_dir: Path, model: str, mode: str) -> dict[str, str]:
    """Golden file name → text from the chain's own check: the first CPU configuration of each precision
    per trained model (`python_<model>_<mode>_gpus_<..>_fixed_results_<precision>.txt`)."""
    files: dict[str, str] = {}
    for folder in sorted(p for p in run_dir.glob("fixed_inputs_gpus_*") if p.is_dir()):
        training = _FIXED.match(folder.name).group(1)
        for path in sorted(folder.glob("cpu_usemkldnn_*_results.txt")):
            match = _FIXED_CASE.match(path.name)
            name = golden_name(model, mode, f"{training}_fixed", match.group(1)) if match else ""
            lines = result_lines(path) if match and path.is_file() else []
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
    run_dir = root / "test_tipc" / "output" / desc.model_name / mode
    files = collect(run_dir, desc.model_name, mode)
    targets = {f"test_tipc/results/{name}": text for name, text in files.items()}
    sample = builtin_sample(desc)
    if sample is None:
        written = write_tree(files, folder, force=True, backup=False)
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
