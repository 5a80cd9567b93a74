"""Where things live in a generated tree and its run folders: every path and file name, spelt once.

The runner templates get the run-folder names through the render context (``runner_context``), and
run, results, report, golden, doctor, suite and accept import them from here. The file names a runner
writes per step (``<trainer>_gpus_<entry>...log``) stay as upstream spells them and are built in bash;
Python reads what a step was from its record's fields (summary.Step), never from those names.
tests/test_vocabulary.py finds no other string constant in the package that is one of these names (a chain's
config, runner and status log are spelt in its record in format/chains.py, the chain registry).
Pure: constants and path arithmetic, no I/O.
"""
from __future__ import annotations

from pathlib import Path

from tipcgen.core import inputs
from tipcgen.core.writes import BACKUP_DIR
from tipcgen.format import chains
from tipcgen.format.words import BENCHMARK_TRAIN

TEST_TIPC = "test_tipc"
CONFIGS = f"{TEST_TIPC}/configs"  # a folder per model: test_tipc/configs/<model>/<CONFIG_NAMES[chain]>
OUTPUT = f"{TEST_TIPC}/output"  # every run folder is under it
RESULTS_DIR = f"{TEST_TIPC}/results"  # committed golden results
README = f"{TEST_TIPC}/README.md"  # the generated overview of test_tipc/
CHAIN_DOC = f"{TEST_TIPC}/docs/test_train_inference_python.md"  # the basic chain's documentation and support table

PREPARE_SH = f"{TEST_TIPC}/prepare.sh"
PREPARE_LOG = "prepare.log"  # prepare.sh's output, in the run folder
COMMON_FUNC = f"{TEST_TIPC}/common_func.sh"  # upstream's helpers (upstream's Lite, serving and C++ scripts source it)
STEPS_SH = f"{TEST_TIPC}/tipc_steps.sh"  # the slot readers and step machinery every tipcgen script sources
LAYOUTS_JSON = f"{TEST_TIPC}/tipc_layouts.json"  # the tables tipc_preflight.py checks a config with (rendered)
FLEET_SH = f"{TEST_TIPC}/tipc_fleet.sh"  # the fleet chain's simulated machines (the basic runner sources it there)

# Each chain's runner, config file name and status log (upstream's names; reviewers read them): from the chain
# registry (format/chains.py), which spells them.
RUNNERS = {chain.name: f"{TEST_TIPC}/{chain.runner}" for chain in chains.CHAINS}
CONFIG_NAMES = {chain.name: chain.config for chain in chains.CHAINS}
RESULT_LOGS = {chain.name: chain.result_log for chain in chains.CHAINS}
# The dy2static chain's training: the basic runner's run of both trainings, in this folder of its run folder,
# on the config the dy2static runner writes there (the dy2static config's train block in the basic config).
DY2STATIC_TRAIN_DIR, DY2STATIC_CONFIG = "train", "train_infer_python_dy2static.txt"
RESULTS_LOG = RESULT_LOGS[chains.BASIC]
BASIC_RUNNER = RUNNERS[chains.BASIC]  # the runner upstream's tools and reviewers call
TRAIN_LOG = "train.log"  # <output_dir>/train.log, where the TIPC train scripts log (upstream's name)

# The Python scripts test_tipc/ ships: copies of tipcgen/render/shipped/ under the same names.
CHECK_INFERENCE, TIPC_COMPARE, COMPARE_RESULTS = "check_inference.py", "tipc_compare.py", "compare_results.py"
CHECK_QUANT, BENCHMARK_ANALYSIS, CHECK_DY2STATIC, CHECK_FLEET = (chains.CHECK_QUANT, chains.BENCHMARK_ANALYSIS,
                                                                  chains.CHECK_DY2STATIC, chains.CHECK_FLEET)
UNPACK_ARCHIVE = "unpack_archive.py"  # prepare.sh's unpacker of a lite data archive
TIPC_PREFLIGHT = "tipc_preflight.py"  # every script's checks before any step: the config, the run folder

# tipcgen's own files in a repository.
ANSWERS = ".tipcgen-answers.yml"  # what init rendered, from which descriptors (tipcgen update reads it)
LINT_SILENCES = ".tipcgen-lint"  # lint findings silenced on purpose, beside the configs (configs/lint_silence.py)
STATE = ".tipcgen"  # tipcgen's folder: the merge base, backups, caches, the submission record
BASE = f"{STATE}/base"  # the merge base: each rendered file as init wrote it
BACKUP = BACKUP_DIR  # where a replaced file is kept: core/writes.py (below format/) spells it
CACHE = f"{STATE}/cache"
FLAG_CACHE = f"{CACHE}/flags"  # the scripts' --help probes (configs/flag_check.py)
SUBMISSION_RECORD = f"{STATE}/submission.json"  # init --submission: the sha256 of the kept runner files
SHIM_DIR = f"{STATE}/bin"  # run: a kept runner's interpreter shim, one folder per run (removed after it)
GITIGNORE = ".gitignore"  # init adds the working folders to it

# What tipcgen report writes (into the run folder, or --output).
REPORT_MD, REPORT_HTML, LOSS_PNG = "report.md", "report.html", "report-loss.png"

# tipcgen suite's output folder (its own, marked; the default is under test_tipc/output/, else beside).
SUITE_JSON = "suite.json"
SUITE_MARKER = ".tipcgen-suite"  # says the folder is the suite's, which it may empty
SUITE_RUNS, SUITE_WORK = "runs", "work"  # each chain's run folder; each chain's working copy while it runs
SUITE_OUTPUT, SUITE_ELSEWHERE = f"{OUTPUT}/suite", "tipc-suite"


def config_rel(model: str, chain: str = chains.BASIC) -> str:
    """A model's config of a chain, relative to the repository root."""
    return f"{CONFIGS}/{model}/{CONFIG_NAMES[chain]}"


def shipped_rel(name: str) -> str:
    """A shipped script (CHECK_INFERENCE, ...) in test_tipc/."""
    return f"{TEST_TIPC}/{name}"


# In every run folder.
RECORDS = "steps.jsonl"  # one JSON record per step, written by the runner (tipc_record)
SUMMARY_JSON = "summary.json"
JUNIT_XML = "junit.xml"
# The structured line a result check prints last (tipcgen/render/shipped/tipc_compare.py spells it too: the
# shipped scripts import nothing from tipcgen; tests/test_shipped.py holds the two equal).
CHECK_MARKER = ":::TIPC_CHECK "

# Committed golden results (test_tipc/results/, and the descriptor's golden folder): one per trained model
# (training: a step record's `training` field, `_fixed` added for the chain's own check) and precision.
GOLDEN_RESULTS = "python_{model}_{mode}_{training}_results_{precision}.txt"


def golden_name(model: str, mode: str, training: str, precision: str) -> str:
    return GOLDEN_RESULTS.format(model=model, mode=mode, training=training, precision=precision)


def run_rel(model: str, mode: str, chain: str = chains.BASIC) -> str:
    """A chain's run folder, relative to the repository root: each chain and mode has its own."""
    if chain == chains.BASIC:
        return f"{OUTPUT}/{model}/{mode}"
    return f"{OUTPUT}/{model}/{chain}/{mode}"


def run_dir(root: Path, model: str, mode: str, chain: str = chains.BASIC) -> Path:
    return root / run_rel(model, mode, chain)


# The run before this one: a rerun of a mode moves the last run folder aside, beside it, to <run folder>.previous
# (replacing an older one), without its weight files (WEIGHT_SUFFIXES, or a pickle: what repro/record.py counts
# as a training's checkpoint), so that its summary, junit.xml, report and logs survive a run that then fails early
# or is stopped, and no checkpoint of it can pass for a new training or be taken as the newest train run.
PREVIOUS = ".previous"
# A weight file by its name (repro/record.py reads it by content too: a pickle whatever its name).
WEIGHT_SUFFIXES = (".pdparams", ".pdiparams", ".pth", ".pt", ".pd", ".safetensors")


def is_weight_file(path: Path) -> bool:
    """A file repro/record.py counts among a training's weights, and a rerun's previous folder keeps none of: a
    weight suffix, or a pickle whatever its name (paddle.save writes any name it is given)."""
    return path.name.endswith(WEIGHT_SUFFIXES) or inputs.pickled(path)


def previous_dir(run_folder: Path) -> Path:
    """Where a rerun keeps the run folder it replaces (PREVIOUS)."""
    return run_folder.with_name(run_folder.name + PREVIOUS)


def is_previous(run_folder: Path) -> bool:
    """A folder a rerun moved aside: never the newest run a command picks by itself."""
    return run_folder.name.endswith(PREVIOUS)


def runner_context() -> dict[str, str | list[str]]:
    """The names the runner templates spell (as bash words: $TIPC_MODEL and $MODE are expanded there)."""
    run = {chain: "./" + run_rel("$TIPC_MODEL", "$MODE", chain) for chain in RUNNERS}
    golden = {"model": "${TIPC_MODEL}", "mode": "${MODE}", "precision": "*"}  # a glob over the precisions
    basic, p2o, bench, ptq, dy2s, fleet = (chains.BASIC, chains.PADDLE2ONNX, BENCHMARK_TRAIN, chains.PTQ,
                                           chains.DY2STATIC, chains.FLEET)
    return {"records": RECORDS, "step_fields": " ".join(STEP_FIELDS),
            "golden_results": GOLDEN_RESULTS.format(training="gpus_${gpus}", **golden),
            "golden_fixed_results": GOLDEN_RESULTS.format(training="gpus_${gpus}_fixed", **golden),
            "basic_run": run[basic], "basic_log": RESULT_LOGS[basic],
            "paddle2onnx_run": run[p2o], "paddle2onnx_log": RESULT_LOGS[p2o],
            "benchmark_run": run[bench], "benchmark_log": RESULT_LOGS[bench],
            "ptq_run": run[ptq], "ptq_log": RESULT_LOGS[ptq],
            "dy2static_run": run[dy2s], "dy2static_log": RESULT_LOGS[dy2s],
            "dy2static_train_dir": DY2STATIC_TRAIN_DIR, "dy2static_config": DY2STATIC_CONFIG,
            "basic_config": CONFIG_NAMES[basic], "basic_runner": RUNNERS[basic], "check_dy2static": CHECK_DY2STATIC,
            "fleet_run": run[fleet], "check_fleet": CHECK_FLEET,
            "previous": PREVIOUS, "weight_suffixes": list(WEIGHT_SUFFIXES), "preflight": TIPC_PREFLIGHT}

# The configuration fields of a step record (steps.jsonl), beside kind/name/status/exit_code/seconds/
# log/reason/note/command: tipc_record writes them (TIPC_FIELDS in tipc_steps.sh), results reads them.
STEP_FIELDS = ("gpu", "trainer", "autocast", "training", "device", "use_gpu", "use_trt", "mkldnn", "threads",
               "precision", "batch_size", "model_dir", "reference", "device_num")
