"""What a run did not check, said beside its verdict (issue #56): a PASSED chain is read as "everything was
proved", so the summary's notes (summary.json, the terminal's NOTE lines, the reports) name each gap. Never a
failure: an honest training with no eval step still passes, and says so.

From the summary alone: no eval step ran (``eval: null``: the trained model's metric was never read), a result
check that compared nothing (``check_inference.py``'s "nothing compared": one configuration, outputs without a
batch dimension). From the repository (``run/tracked.py`` reads git): files the run left untracked in it, and a
committed model file the inference script opens by a literal name (what it read may not be what this run
trained).
"""
from __future__ import annotations

from tipcgen.format.words import CHECK, EVAL, INFER, PASSED, TRAIN
from tipcgen.format.chains import BASIC, run_check_references
from tipcgen.results.summary import Summary

PREFIX = "not checked: "
SHOWN = 5


def summary_notes(summary: Summary) -> list[str]:
    """The gaps the summary itself shows (each note begins with PREFIX)."""
    notes = []
    kinds = {step.kind for step in summary.steps}
    if summary.chain == BASIC and TRAIN in kinds and EVAL not in kinds:  # benchmark_train times, never evaluates
        notes.append(PREFIX + "no eval step ran (eval: null in the descriptor, or no eval line in the config): the "
                     "run proves the training ran and exported, not what the trained model scores")
    for step in summary.steps:
        found = step.check.differences
        if step.kind != CHECK or step.status != PASSED or step.check.reference in run_check_references() or not found:
            continue
        if found.get("accuracy"):
            continue  # the PTQ check compares accuracies, not outputs
        if found.get("logs") == 0 or ("max_abs" in found and not found["max_abs"]):
            notes.append(PREFIX + f"the result check {step.name} compared nothing (one configuration, or outputs "
                         "without a batch dimension): it passed without comparing the exported model's outputs")
    return notes


def left_behind(paths: list[str]) -> str:
    """The note for files the run left untracked in the repository ('' when none)."""
    if not paths:
        return ""
    shown = ", ".join(paths[:SHOWN]) + (f" (and {len(paths) - SHOWN} more)" if len(paths) > SHOWN else "")
    return (PREFIX + f"the run left {len(paths)} untracked file(s) in the repository, outside its output folder: "
            f"{shown}; nothing checked they belong there (have the script write them under the run's folder, or "
            "add them to .gitignore)")


def committed_reads(reads: list[tuple[str, str]]) -> str:
    """The note for committed model files the inference script opens by a literal name: (path, file:line)."""
    if not reads:
        return ""
    shown = ", ".join(f"{path} ({where})" for path, where in reads[:SHOWN])
    return (PREFIX + f"the {INFER} script opens committed file(s) by a literal name: {shown}; the inference may have "
            "read that, not what this run trained and exported (pass the model through inference.model_dir's key)")
