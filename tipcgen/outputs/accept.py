"""``tipcgen accept``: the checkpoints (核验点) a reviewer accepts a submission by, checked.

The items are those of PaddlePaddle/models tutorials/tipc/train_infer_python/README.md (2.2.1 to
4.2.2), plus the AutoLog block of every inference case (infer_python.md's benchmark). Each is checked
on the repository (accept_repo.py) and, where it needs one, on the last run
(test_tipc/output/<model>/<mode>/, here); each says passed or failed with the file and line or a log
excerpt. ``write_docs`` rewrites the docs' support table from that run (writes.write_tree writes).
"""
from __future__ import annotations

import re
from pathlib import Path

from tipcgen.core import inputs, writes
from tipcgen.core.errors import TipcgenError
from tipcgen.format.chains import BASIC
from tipcgen.format.config import TipcConfig
from tipcgen.format.paths import (
    CHAIN_DOC,
    COMMON_FUNC,
    OUTPUT,
    PREPARE_SH,
    README,
    RUNNERS,
    SUMMARY_JSON,
    TEST_TIPC,
    TRAIN_LOG,
    config_rel,
    is_previous,
)
from tipcgen.format.words import FAILED, INFER, PASSED, SKIPPED, TRAIN
from tipcgen.outputs import accept_repo, support_table
from tipcgen.outputs.checklist import Acceptance, Item
from tipcgen.results import autolog
from tipcgen.results.summary import Summary, load_summary, log_tail, relocate_logs
from tipcgen.results.summary_check import inside
from tipcgen.format import paths

TREE = (config_rel("{model}"), CHAIN_DOC, README, PREPARE_SH, RUNNERS[BASIC], COMMON_FUNC)
TRAIN_FIELDS = ("loss", "avg_reader_cost", "avg_batch_cost", "avg_ips")
_LOSS = re.compile(r"(?<![\w.])loss\s*[:=]\s*[-+]?(?:\d|nan|inf)", re.IGNORECASE)
_COUNTER = re.compile(r"(?<![\w.])(?:global_step|step|iter|iteration|batch_id|epoch)\s*[:=\[]\s*\d", re.IGNORECASE)
_NOT_TRAIN = re.compile(r"\b(?:eval|evaluat|valid|val\b|val_|test)", re.IGNORECASE)  # an eval line in a train log
_EXCERPT = 160
_NO_RUN = "run the chain first: tipcgen run --mode lite_train_lite_infer (or pass --run RUN_DIR)"


def find_run(root: Path) -> Path | None:
    """The newest basic-chain run folder (test_tipc/output/<model>/<mode>/summary.json), or None."""
    found = [p for p in (root / OUTPUT).glob("*/*/" + SUMMARY_JSON) if not is_previous(p.parent)]
    return max(found, key=lambda p: p.stat().st_mtime).parent if found else None


def read_run(run_dir: Path, root: Path | None = None) -> Summary:
    path = run_dir / SUMMARY_JSON
    if not path.is_file():
        raise TipcgenError(f"{run_dir} has no {SUMMARY_JSON}",
                           "pass a run folder such as test_tipc/output/<model>/<mode>, which tipcgen run writes")
    summary = load_summary(path)  # summary_check validates every field: SummaryFileError (exit 2) names the one
    if root is not None:  # a folder a rerun moved aside: its logs are read there (summary.relocate_logs)
        relocate_logs(summary, run_dir, root)
    return summary


def for_report(run_dir: Path, root: Path) -> Acceptance | None:
    """The checklist a report of run_dir shows: the basic chain's (the other chains have no 核验点)."""
    summary = read_run(run_dir, root)
    return check(root, run_dir, summary) if summary.chain == BASIC else None


def check(root: Path, run_dir: Path | None = None, summary: Summary | None = None) -> Acceptance:
    """Every item, on root and on run_dir (default: the newest run under root; its summary when given)."""
    if not root.is_dir():
        raise TipcgenError(f"--root {root} is not a folder", "pass the repository root (the folder that holds test_tipc/)")
    root = root.resolve()
    run_dir = (run_dir.resolve() if run_dir is not None else find_run(root))
    if summary is None and run_dir is not None:
        summary = read_run(run_dir, root)
    config_path, config = accept_repo._config(root, summary)
    dirs = accept_repo._script_dirs(root, config)
    docs = accept_repo.readmes(root, dirs)
    items = [accept_repo.check_lite_data(root, dirs),
             accept_repo.check_entry_points(root, dirs, config, "2.2.2", ("train.py", "eval.py", "predict.py"),
                                            {"train.py": "norm_train", "eval.py": "eval"},
                                            "entry points train.py, eval.py, predict.py"),
             check_train_log(root, run_dir, summary),
             accept_repo.check_predict_docs(root, docs, accept_repo._find(dirs, "predict.py")),
             accept_repo.check_entry_points(root, dirs, config, "3.2.1", ("export_model.py", "infer.py"),
                                            {"export_model.py": "norm_export", "infer.py": "inference"},
                                            "export_model.py and the Paddle Inference infer.py"),
             accept_repo.check_commands_documented(root, docs),
             check_autolog(root, summary, config_path, config),
             check_tree(root, config_path),
             check_support_table(root),
             run_item(root, run_dir, summary)]
    return Acceptance(root=root, run_dir=run_dir, items=items)


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _excerpt(line: str) -> str:
    line = line.strip()
    return line if len(line) <= _EXCERPT else line[:_EXCERPT] + "…"


def _train_logs(root: Path, run_dir: Path, summary: Summary) -> list[Path]:
    """Each passed train step's log: <output_dir>/train.log, else the step's own log."""
    logs = []
    for step in summary.steps:
        if step.kind != TRAIN or step.status != PASSED:
            continue
        path = inside(run_dir, f"{step.name}/{TRAIN_LOG}") or inside(root, step.log)  # never outside them
        if path is not None:
            logs.append(path)
    return logs


def check_train_log(root: Path, run_dir: Path | None, summary: Summary | None) -> Item:
    title = "training log: every logged iteration has " + ", ".join(TRAIN_FIELDS)
    if summary is None or run_dir is None:
        return Item("2.2.3", title, False, OUTPUT + "/", "no run found", _NO_RUN)
    logs = _train_logs(root, run_dir, summary)
    if not logs:
        return Item("2.2.3", title, False, _rel(run_dir, root), "the run has no passed train step with a log",
                    "run a mode that trains (lite_train_lite_infer)")
    iterations = 0
    for path in logs:
        for number, line in enumerate(inputs.lines(path, "training log"), 1):  # bounded (core/inputs.py)
            if not (_LOSS.search(line) and (_COUNTER.search(line) or "avg_" in line)) or _NOT_TRAIN.search(line):
                continue
            iterations += 1
            missing = [f for f in TRAIN_FIELDS if not re.search(rf"(?<![\w.]){f}\s*[:=]\s*[-+0-9.na]", line, re.I)]
            if missing:
                return Item("2.2.3", title, False, f"{_rel(path, root)}:{number}",
                            f"no {', '.join(missing)} in `{_excerpt(line)}`",
                            "log " + ", ".join(f"{f}: <value>" for f in TRAIN_FIELDS) + " on every logged iteration")
    if not iterations:
        return Item("2.2.3", title, False, ", ".join(_rel(p, root) for p in logs),
                    "no logged iteration (a line with loss and a step counter or avg_ fields)",
                    "log e.g. `epoch: 1, global_step: 10, loss: 0.69, avg_reader_cost: 0.01 sec, "
                    "avg_batch_cost: 0.1 sec, avg_ips: 80.0 samples/sec`")
    return Item("2.2.3", title, True, ", ".join(_rel(p, root) for p in logs), f"{iterations} logged iteration(s), all with the fields")


def check_autolog(root: Path, summary: Summary | None, config_path: Path | None = None,
                  config: TipcConfig | None = None) -> Item:
    title = "inference speed: an AutoLog block in every inference case's log"
    if summary is None:
        return Item("3.2.3", title, False, OUTPUT + "/", "no run found", _NO_RUN)
    cases = [s for s in summary.steps if s.kind == INFER and s.status == PASSED and s.log]
    if not cases:
        return Item("3.2.3", title, False, summary.config, "the run has no passed inference case",
                    "run a mode with inference (lite_train_lite_infer)")
    logs = {s.name: inside(root, s.log) for s in cases}  # a log outside the repository counts as none
    without = [s for s in cases if logs[s.name] is None or not autolog.read_block(log_tail(logs[s.name], 400))]
    off = _benchmark_off(config)
    if without and off is not None:
        number, line = off
        return Item("3.2.3", title, False, f"{_rel(config_path, root)}:{number}" if config_path else summary.config,
                    f"the config passes {line} (line {number}), so the inference script is never asked for its "
                    f"AutoLog block: {len(without)} of {len(cases)} case(s) print none",
                    f"set {line.partition(':')[0]}:True in the config (the acceptance measures inference speed with it on)")
    if without:
        return Item("3.2.3", title, False, _rel(root / without[0].log, root),
                    f"{len(without)} of {len(cases)} case(s) print no AutoLog block (no `Perf info` with "
                    f"inference_time(ms)), e.g. {without[0].name}",
                    "print AutoLog's report (auto_log.AutoLogger ... autolog.report()) when --benchmark is True")
    return Item("3.2.3", title, True, f"{len(cases)} inference log(s)", "every case has preprocess, inference and postprocess times")


def check_tree(root: Path, config_path: Path | None) -> Item:
    title = "test_tipc tree: configs/<model>/train_infer_python.txt, docs, README.md, prepare.sh, runner, common_func.sh"
    model = config_path.parent.name if config_path else None
    missing = []
    for name in TREE:
        rel = name.format(model=model or "<model>")
        if model is None and "{model}" in name or not (root / rel).is_file():
            missing.append(rel)
    if missing:
        return Item("4.2.1", title, False, TEST_TIPC + "/", "missing: " + ", ".join(missing),
                    "render the tree with tipcgen init <descriptor>")
    return Item("4.2.1", title, True, TEST_TIPC + "/", f"all present (model {model})")


def check_support_table(root: Path) -> Item:
    title = "docs/test_train_inference_python.md: the support table says what was tested"
    path = root / paths.CHAIN_DOC
    if not path.is_file():
        return Item("4.2.2-docs", title, False, paths.CHAIN_DOC, "missing", "render it with tipcgen init")
    text = accept_repo.doc_text(path)
    found = support_table.table_body(text)
    if found is None:
        return Item("4.2.2-docs", title, False, paths.CHAIN_DOC, "no section `## 1. 测试结论汇总`",
                    "fill it from a run: tipcgen accept --write-docs")
    line, body = found
    if not body:
        return Item("4.2.2-docs", title, False, f"{paths.CHAIN_DOC}:{line}", "the support table is empty",
                    "fill it from a run: tipcgen accept --write-docs")
    source = "a run" if support_table.MARKER in text else "the descriptor (tipcgen accept --write-docs fills it from a run)"
    return Item("4.2.2-docs", title, True, f"{paths.CHAIN_DOC}:{body[0][0]}", f"{len(body)} row(s), from {source}")


def run_item(root: Path, run_dir: Path | None, summary: Summary | None) -> Item:
    runner = paths.RUNNERS.get(summary.chain if summary is not None else BASIC, paths.BASIC_RUNNER).rsplit("/", 1)[-1]
    title = f"the chain passes (prepare.sh + {runner})"  # a dy2static or fleet run (--run): its own runner
    if summary is None or run_dir is None:
        return Item("4.2.2-run", title, False, OUTPUT + "/", "no run found", _NO_RUN)
    where = _rel(run_dir / SUMMARY_JSON, root)
    counts = f"{summary.count(PASSED)} passed, {summary.count(FAILED)} failed, {summary.count(SKIPPED)} skipped"
    if not summary.ok:
        failed = [s.name for s in summary.steps if s.status == FAILED]
        detail = counts + (f"; failed: {', '.join(failed[:3])}" if failed else "") + \
            (f"; {summary.problems[0]}" if summary.problems else "") + ("; interrupted" if summary.was_interrupted else "")
        return Item("4.2.2-run", title, False, where, detail, "fix the failed steps (tipcgen report shows their logs) and run again")
    return Item("4.2.2-run", title, True, where, f"{summary.mode}: {counts}")


def write_docs(root: Path, run_dir: Path | None = None) -> Path:
    """Rewrite the docs' support table from the passed steps of a run (the newest by default)."""
    root = root.resolve()
    run_dir = run_dir.resolve() if run_dir is not None else find_run(root)
    if run_dir is None:
        raise TipcgenError(f"no run under {root / OUTPUT} to fill the support table from", _NO_RUN)
    summary = read_run(run_dir, root)
    path = root / paths.CHAIN_DOC
    if not path.is_file():
        raise TipcgenError(f"{path} is missing", "render it first: tipcgen init <descriptor>")
    table = support_table.render(support_table.build(summary, _rel(run_dir, root)))
    text = support_table.replace(inputs.read_text(path, "document"), table)
    if text is None:
        raise TipcgenError(f"{path} has no support table under `## 1. 测试结论汇总` to replace",
                           "re-render it with tipcgen init --force, then run this again")
    writes.write_tree({paths.CHAIN_DOC: text}, root, force=True)
    return path


def _benchmark_off(config: TipcConfig | None) -> tuple[int, str] | None:
    """(line number, line) of a config line that turns inference's benchmark off (``--benchmark:False``)."""
    if config is None:
        return None
    for number, line in enumerate(config.lines, 1):
        key, value = line.key.strip(), (line.value or "").strip()
        if line.kind == "kv" and key.startswith("-") and key.lstrip("-").lower() == "benchmark" \
                and value.lower() in ("false", "0", "no", "off"):
            return number, line.text.strip()
    return None
