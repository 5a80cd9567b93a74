"""Shared fixtures: paths, the stub project, and running the CLI as a user does (`tipcgen()`: in this
process by default, a real process on request).

Markers (docs/PERFORMANCE.md, "The test suite"): a test is `paddle` when it needs the paddle stack and `chain` when it runs
the real bert-sst2 chain. They are applied by where a test lives and what it uses, so new test files need no list:
- every test under tests/chains/ (paddle, chain) and tests/model_scripts/ (paddle): FOLDER_MARKS;
- a module that sets `pytestmark = pytest.mark.paddle` (whole file), or a test decorated with it;
- a test that uses a fixture of PADDLE_FIXTURES (e.g. `sample_lite_run`), wherever it lives.
Without paddle installed, every `paddle` test is skipped with the install hint, never failed, and
`python -m pytest -m "not paddle"` runs the rest (the stub chains need bash and Python only:
TIPC_NO_PADDLE=1 below). The unit layer, `python -m pytest -q -m "not paddle and not ray"`, leaves out the Ray
cluster test too (the `ray` marker in pyproject.toml); every run of the whole suite runs it.

The full run (docs/PERFORMANCE.md, "Two runs of the suite"): a test marked `full` proves again, on another
project, another layout or the whole data set, what a test of every run already proves once on real Paddle. A
run of the whole suite leaves them out (so the README's and CI's `python -m pytest -q` stays within CI's time),
`TIPCGEN_TESTS=full python -m pytest -q` runs them too, and a run that names their files or `-m full` runs them.

Parallel runs (pytest-xdist, the `test` extra): a run of the whole suite (no test paths named, so
pytest takes `testpaths`) gets one worker more than the CPUs it may use (`-n <cpus + 1> --dist
loadgroup`: a worker waiting on a chain's processes leaves a CPU idle, the extra one fills it; 2 CPUs, 608
tests without paddle on 2026-12-01: 59 s -> 55 s, 316 s -> 302 s with it; 1,446 of them on 2026-12-04: three
workers 108 s, four 117 s) unless -n, --dist, -p no:xdist or --pdb says
otherwise; a run of named files stays in one process. A session or module fixture runs once per
worker, so every test that uses an expensive shared run (SHARED_RUNS) is put in that run's
xdist_group and runs on one worker; a test may set its own group (the whole-SST-2 test does). The tests
marked `waits` share one group too (WAITS_GROUP): one worker waits on their clocks while the others work.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import importlib.util
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from tipcgen.core import sandbox as _sandbox

ROOT = Path(__file__).resolve().parents[1]
if str(Path(__file__).resolve().parent) not in sys.path:  # helper modules (grid, upstream_runner, ...) for tests/chains/
    sys.path.insert(0, str(Path(__file__).resolve().parent))
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "tipc-corpus"
SST2 = SHARED / "data" / "sst2"
STUB = ROOT / "tests" / "fixtures" / "stub"
HAS_PADDLE = importlib.util.find_spec("paddle") is not None
# Folders whose every test needs the paddle stack, and the markers their tests get (tests/model_scripts: the
# sample model's own scripts; tests/chains: real Paddle chains through the generated scripts). A test
# elsewhere is marked by what it uses.
FOLDER_MARKS = {"chains": ("paddle", "chain"), "model_scripts": ("paddle",)}
# Fixtures that need the paddle stack, and the markers a test using one gets.
PADDLE_FIXTURES = {"sample_lite_run": ("paddle", "chain"), "sample_p2o_run": ("paddle", "chain")}
# The stub and toy chains need no paddle: every `tipcgen run` of the tests skips the preflight's
# paddle probe (docs/CHAINS.md), so they run where paddle is missing. A test of the probe itself
# passes TIPC_NO_PADDLE="" (test_broken_steps.py); the paddle chains fail on their own without it.
os.environ.setdefault("TIPC_NO_PADDLE", "1")
# Every process a test starts finds `python` (and the venv's tools) where the tests run, as in an activated
# venv, whether or not the venv was activated: a chain run by bash directly inherits this PATH. Without it a
# pyenv shim first on PATH ran the stub steps under another interpreter than the tests', each `python`
# through ~20 processes of pyenv's bash (126 of them in the run without paddle: ~12 s of its CPU).
_BIN = str(Path(sys.executable).parent)
if os.environ.get("PATH", "").split(os.pathsep)[0] != _BIN:
    os.environ["PATH"] = _BIN + os.pathsep + os.environ.get("PATH", "")
# The flag check caches each script's --help (configs/flag_check.py): here in a folder of this run, never under a
# repository the tests read in place (tests/fixtures/*, the checkout itself). The process that made it (the xdist
# controller: its workers inherit the variable, and so share the probes) removes it when the run ends.
_OWN_CACHE = None
if "TIPCGEN_CACHE_DIR" not in os.environ:
    os.environ["TIPCGEN_CACHE_DIR"] = _OWN_CACHE = tempfile.mkdtemp(prefix="tipcgen-test-cache-")
# TIPCGEN_TESTS=full: the whole suite with the `full` tests too (the docstring above).
FULL_RUN = os.environ.get("TIPCGEN_TESTS", "") == "full"
# The fuzz tests and the generated batteries run a quarter of their examples by default (seconds, not minutes,
# in every run of the suite); TIPCGEN_FUZZ=full, or the full run, runs all of them (docs/PERFORMANCE.md).
FUZZ_SHARE = 1.0 if FULL_RUN or os.environ.get("TIPCGEN_FUZZ", "") == "full" else 0.25


def fuzz_examples(full: int) -> int:
    """How many examples a fuzz test that would run `full` of them runs now (FUZZ_SHARE of them, at least 20)."""
    return max(20, round(full * FUZZ_SHARE))


def finishes(fn, seconds: float = 60.0):
    """fn() run in a thread: its value or its exception, or a failure when it has not returned in `seconds` (a read
    or a lock that blocks, on a FIFO say: a ceiling, not a bound)."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{fn} blocked for {seconds} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def parsed(path: Path) -> ast.Module:
    """path's syntax tree, parsed once per worker while the file stays as it is (the tests that walk the package
    read each of its modules several times): one tree shared by them all, so read it, never change it."""
    info = path.stat()
    return _parsed(str(path), info.st_mtime_ns, info.st_size, info.st_ino)


@functools.lru_cache(maxsize=None)
def _parsed(path: str, *_stamp: int) -> ast.Module:
    return ast.parse(Path(path).read_text(encoding="utf-8"))


def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of parsed(path), in ast.walk's order, listed once per worker: the package-walking tests walk
    each module several times, and a walk (a generator over every field of every node) cost more than the
    checks made on its nodes."""
    return _nodes(parsed(path))


def parents(path: Path) -> dict[int, ast.AST]:
    """The parent of each node of parsed(path), by id(node); once per worker, as nodes()."""
    return _parents(parsed(path))


@functools.lru_cache(maxsize=None)
def _nodes(tree: ast.Module) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(tree))


@functools.lru_cache(maxsize=None)
def _parents(tree: ast.Module) -> dict[int, ast.AST]:
    return {id(child): node for node in _nodes(tree) for child in ast.iter_child_nodes(node)}


def fuzz_sample(cases: list) -> tuple[list, str]:
    """The cases of a generated battery this run checks: all of them in a full share, else every k-th
    (k = 1 / FUZZ_SHARE) from an offset drawn per run, so that runs of the suite take turns over the whole
    battery. Returns them and a label for assertion messages (the offset, to repeat a failed sample)."""
    stride = max(1, round(1 / FUZZ_SHARE))
    offset = int(os.environ.get("TIPCGEN_FUZZ_OFFSET", "") or random.randrange(stride)) % stride
    sample = cases[offset::stride]
    return sample, f"{len(sample)} of {len(cases)} cases (TIPCGEN_FUZZ_OFFSET={offset})"


# Shared runs, first match wins (a test of test_chain.py's `lite_run` also uses `sample_lite_run`):
# fixture name -> xdist group. Module fixtures are named per module, since names repeat across files.
SHARED_RUNS = {
    "sample_lite_run": "sample_lite_run",   # conftest: bert-sst2's lite chain, once per session
    "sample_p2o_run": "sample_lite_run",    # conftest: its paddle2onnx chain
    "two_io_grid": "two_io_grid",            # chains/test_fixed_checks.py: the two_io project's whole grid
    "corpus_entries": "corpus_sweep",        # conftest: lint, import and init of every corpus config, once
    "corpus_findings": "corpus_sweep",       # test_lint.py: lint over the corpus (the sweep's)
    "corpus_all": "corpus_sweep",            # test_runner_reading.py: the sweep with the third folder's runners
    "lite_run": "{module}:lite_run",         # test_question_matching.py (test_chain.py's is a copy of the above)
    "toy_repo": "{module}:toy_repo",         # test_accept.py
    "bench_run": "{module}:bench_run",       # test_benchmark.py
    "weights": "{module}:weights",           # test_convert.py (with cnn_inputs and traces)
    "traces": "{module}:weights",
    "cnn_inputs": "{module}:weights",
    "tutorial_repo": "{module}:tutorial_repo",  # test_tutorial_layout.py
    "separate_stubs": "stubs",               # test_suite.py
    "plain_run": "{module}:plain_run",       # test_runner.py: one passing stub chain its readers share
    "python_flood": "{module}:python_flood", # test_broken_steps.py: one chain flooding its log, read twice
    "zoo": "{module}:zoo",                   # test_repository.py (stub chains) and chains/test_repository_lite.py (paddle)
    "models_template": "{module}:trees",     # test_upstream_helpers.py
    "paddleocr_tree": "{module}:trees",
    "quant_repo": "{module}:quant_repo",     # test_quant_chains.py (its PTQ and PACT runs share the project)
    "ptq_run": "{module}:quant_repo",
    "two_ptq_models": "{module}:quant_repo",  # test_quant_chains.py: the mobile project's repository, its kl_quant model's run
    "checkpoint_folder_run": "{module}:checkpoint_folder_run",  # chains/test_checkpoints.py (its limit test reruns it)
    "battery": "{module}:battery",           # test_hostile_align.py: every hostile file, every case in one process
    "world": "{module}:world",               # test_hostile_links.py: a rendered stub project after one run
    "stub_run": "{module}:stub_run",         # test_hostile_report.py: the same
}


# The tests marked `waits` (most of their wall time on a clock: a step limit, a silence, a sleep they must outlast)
# run one after another on one worker, which then leaves the CPUs to the other two: spread by the scheduler, the
# sleepers of one module ran on all three workers at once and left both cores idle for seconds (docs/PERFORMANCE.md,
# "Stop 48"). A waiting test that uses a shared run stays in that run's group (the Ray cluster's).
WAITS_GROUP = "waits"


def _leaves_out_full(config) -> bool:
    """Whether this run leaves the `full` tests out: a run of the whole suite (no test paths named), without
    TIPCGEN_TESTS=full or a -m that names them. An xdist worker is told by the controller (it re-reads argv)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        return bool(workerinput.get("tipcgen_leave_full"))
    whole_suite = config.args_source == pytest.Config.ArgsSource.TESTPATHS
    return whole_suite and not FULL_RUN and "full" not in (config.option.markexpr or "")


def pytest_terminal_summary(terminalreporter, config):
    """Say that the run left the `full` tests out (their count is among the deselected), once, on the controller."""
    if _leaves_out_full(config) and not hasattr(config, "workerinput"):
        terminalreporter.write_line("tipcgen: the full run's tests were left out: "
                                    "TIPCGEN_TESTS=full python -m pytest -q runs them too")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads -n (only initial conftests get this hook)
def pytest_cmdline_main(config):
    option = config.option
    whole_suite = config.args_source == pytest.Config.ArgsSource.TESTPATHS
    if (whole_suite and getattr(option, "numprocesses", 0) is None and option.dist == "no"
            and not option.usepdb and not option.collectonly and not hasattr(config, "workerinput")):
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        option.numprocesses, option.dist = cpus + 1, "loadgroup"


def pytest_unconfigure(config):
    if _OWN_CACHE:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


def pytest_configure(config):
    """Tests interrupt the chains they start with SIGINT. A shell starts a background job (`pytest &`) with
    SIGINT ignored, which every process it starts would inherit (and tipcgen keeps an ignored signal
    ignored, as under nohup): take it back, here and in each xdist worker."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's, on the controller, for each worker it starts
def pytest_configure_node(node):
    """A worker re-reads the command line, where `--dist loadgroup` is missing when pytest_cmdline_main set
    it (a whole-suite run): tell the worker, so that its tests carry their group."""
    if node.config.option.dist == "loadgroup":
        node.workerinput["tipcgen_loadgroup"] = True
    node.workerinput["tipcgen_leave_full"] = _leaves_out_full(node.config)


@pytest.hookimpl(tryfirst=True)  # after every collection_modifyitems, before the xdist worker sends the ids
def pytest_collection_finish(session):
    """pytest-xdist 3.8 groups a test by appending `@group` to `item._nodeid`; pytest 9.2 keeps the id in
    `item._id` and ignores that attribute, so every test became its own unit and a shared run ran once
    per worker. Where the suffix is missing, put it on the id pytest reports (workers only)."""
    workerinput = getattr(session.config, "workerinput", None)
    if workerinput is None or not (getattr(session.config.option, "loadgroup", False)
                                   or workerinput.get("tipcgen_loadgroup")):
        return
    for item in session.items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        node_id = getattr(item, "_id", None)
        if names and "@" not in item.nodeid and node_id is not None and hasattr(node_id, "_str_cache"):
            grouped = dataclasses.replace(node_id)
            object.__setattr__(grouped, "_str_cache", f"{item.nodeid}@{'_'.join(names)}")
            item._id = grouped


def pytest_itemcollected(item):
    """The xdist group of a test that uses a shared run (SHARED_RUNS), or of a test that waits (WAITS_GROUP), set
    as the test is collected."""
    if item.get_closest_marker("xdist_group") is None:
        names = getattr(item, "fixturenames", ())
        group = next((g for f, g in SHARED_RUNS.items() if f in names), None)
        if group is None and item.get_closest_marker("waits") is not None:
            group = WAITS_GROUP
        if group:
            item.add_marker(pytest.mark.xdist_group(group.format(module=item.path.name)))


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="paddle is not installed here (pip install -e '.[paddle]')")
    for item in items:
        folder = item.path.parent.name  # tests/<folder>/test_x.py
        marks = [*FOLDER_MARKS.get(folder, ()),
                 *(mark for fixture, fixture_marks in PADDLE_FIXTURES.items()
                   if fixture in getattr(item, "fixturenames", ()) for mark in fixture_marks)]
        for mark in marks:
            if item.get_closest_marker(mark) is None:
                item.add_marker(mark)
        if not HAS_PADDLE and item.get_closest_marker("paddle") is not None:
            item.add_marker(skip)
    if _leaves_out_full(config):
        left_out = [item for item in items if item.get_closest_marker("full") is not None]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if item.get_closest_marker("full") is None]
    if hasattr(config, "workerinput"):  # under xdist: the longest units first, so they start at once, on two workers
        items.sort(key=_start_order)


def _start_order(item) -> int:
    group = item.get_closest_marker("xdist_group")
    name = group and (group.args[0] if group.args else group.kwargs.get("name"))
    if name in ("sst2_whole", "sample_lite_run"):
        return ("sst2_whole", "sample_lite_run").index(name)
    return 2 if name else 3 if item.get_closest_marker("chain") else 4


def _python_without_paddle() -> str | None:
    """A system Python 3 that cannot import paddle (the venv's can), for what tipcgen does where paddle is missing."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3", shutil.which("python3", path="/usr/bin:/bin")):
        if candidate and Path(candidate).is_file():
            code = "import importlib.util as u, sys; sys.exit(u.find_spec('paddle') is not None)"
            if subprocess.run([candidate, "-c", code], capture_output=True).returncode == 0:
                return candidate
    return None


NO_PADDLE_PYTHON = _python_without_paddle()

# A working bubblewrap here (CI installs it where it can, never failing when it cannot): the sandboxed probes
# run only then; a test of the sandbox itself is skipped without it, a test of what a probe finds probes
# unsandboxed (the same finding).
SANDBOX = _sandbox.available()[0]
needs_bwrap = pytest.mark.skipif(not SANDBOX, reason="no working bubblewrap here")
needs_plain_python = pytest.mark.skipif(NO_PADDLE_PYTHON is None, reason="no Python without paddle on this machine")


def edit(path: Path, old: str, new: str) -> None:
    """Replace text a test knows is in a file (and fail loudly if it is not: the test would test nothing)."""
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def fail_nth_replace(monkeypatch, module, nth: int) -> list:
    """Make ``module.os.replace`` raise 'disk full' on its nth call (a write that fails half-way); the calls' targets
    are returned as they happen."""
    real, calls = module.os.replace, []

    def flaky(src, dst):
        calls.append(dst)
        if len(calls) == nth:
            raise OSError("disk full")
        real(src, dst)

    monkeypatch.setattr(module.os, "replace", flaky)
    return calls


def default_signals() -> None:
    """preexec_fn for a process a test will signal: it starts with the dispositions of a terminal's foreground
    job (default), whatever this test run inherited (`nohup` ignores SIGHUP, a background job SIGINT and
    SIGQUIT; tipcgen rightly keeps an inherited SIG_IGN). The test then tests tipcgen, not how pytest began."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)


def chain_env(**extra: str) -> dict:
    """The environment of a chain: this process's (the interpreter running the tests, the one with paddle,
    is first on its PATH: see _BIN above), without colour, plus EXTRA."""
    return {**os.environ, "NO_COLOR": "1", **extra}


def tipcgen(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 600,
            check: bool = False, process: bool = False) -> subprocess.CompletedProcess:
    """Run `python -m tipcgen ARGS` as a user does; returns the completed process (text).

    By default the command runs in this process (`tipcgen.cli.app.main`, the console script's entry point, with
    argv, working folder, environment and streams of its own, restored after), which saves a Python and
    import start-up per call; every process it starts (bash, the generated scripts, the model's own) is
    real. process=True runs it in a real subprocess (with the timeout): for what only a process shows
    (signals, its exit, its terminal, another run beside it); so does an env that sets PYTHONPATH."""
    full_env = chain_env(**(env or {}))
    if process or "PYTHONPATH" in (env or {}):  # another import path: only a new interpreter honours it
        proc = subprocess.run([sys.executable, "-m", "tipcgen", *args], cwd=cwd or ROOT, env=full_env,
                              capture_output=True, text=True, timeout=timeout)
    else:
        proc = run_in_process(list(args), cwd or ROOT, full_env)
    if check and proc.returncode != 0:
        raise AssertionError(f"tipcgen {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def run_in_process(argv: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """`python -m tipcgen ARGV` in this process: exit code as the interpreter would give it (SystemExit's code;
    1 and the traceback on stderr for an exception it lets through)."""
    import contextlib
    import io
    import traceback

    from tipcgen.cli.app import main

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    # Strict UTF-8 streams, as a process gets under PYTHONIOENCODING=utf-8:strict: text that cannot be
    # written fails here as it would there (main() makes its own streams escape instead).
    raw = io.BytesIO(), io.BytesIO()
    out, err = (io.TextIOWrapper(b, encoding="utf-8", errors="strict", write_through=True) for b in raw)
    try:
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv, prog_name="python -m tipcgen")
                code = 0
            except SystemExit as exc:
                code = exc.code or 0
                if not isinstance(code, int):  # sys.exit("message"): printed, exit status 1
                    print(code, file=sys.stderr)
                    code = 1
            except BaseException:  # noqa: BLE001 - what the interpreter does with an uncaught exception
                traceback.print_exc()
                code = 1
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        for stream in (out, err):
            stream.detach()  # keep the bytes: a collected wrapper would close them
    stdout, stderr = (b.getvalue().decode("utf-8", "replace") for b in raw)
    return subprocess.CompletedProcess(["python", "-m", "tipcgen", *argv], code, stdout, stderr)


@pytest.fixture(scope="session")
def corpus_entries():
    """The sweep over ../shared's tipc-corpus and tipc-corpus-2 (tests/corpus_sweep.py: lint, import and init of
    every config, ~3 s), computed once per worker; SHARED_RUNS puts every test that uses it, or the sweep with
    the third folder (test_runner_reading's corpus_all), on one worker."""
    import corpus_sweep

    return corpus_sweep.sweep()


@pytest.fixture
def stub_repo(tmp_path: Path) -> Path:
    """A repository with the stub model scripts and its rendered test_tipc/."""
    return make_stub_repo(tmp_path)


def make_stub_repo(root: Path, descriptor: Path = STUB / "tipc.yaml", *, init: bool = True) -> Path:
    """root as a repository: the stub model's scripts (root/stub/) and the test_tipc/ init renders from descriptor
    (the stub's own by default; root / "stub" / "tipc.yaml", the copy, for an answers file that names it).
    init=False: the copy only, for a test that edits the descriptor or runs init itself. The one copy of the
    stub; the fixture `stub_repo` is this in tmp_path."""
    shutil.copytree(STUB, root / "stub")
    if init:
        tipcgen("init", str(descriptor), "--root", str(root), check=True)
    return root


_PROBED: dict[tuple, object] = {}


@pytest.fixture
def doctor_probes_once(monkeypatch):
    """doctor's probe of an interpreter (tipcgen's own fixed code in a child that imports paddle: ~1.5 s of CPU
    where paddle is installed) runs for real once per worker for each interpreter and environment it reads, and
    its record is reused after: its output depends on nothing else, and no test that uses this is about the
    probe itself (test_doctor_never_imports_paddle_in_process starts its own process). An interpreter chosen
    wrongly (a config's `python:./tool.sh`) is another key, so it is still run, and seen."""
    from tipcgen.run import doctor

    real = doctor._probe

    def once(path: str, box=None):  # box: the sandbox of run --sandbox (doctor's sandboxed paddle row)
        key = (path, box, os.environ.get("PYTHONPATH"), os.environ.get("CUDA_VISIBLE_DEVICES"))
        if key not in _PROBED:
            _PROBED[key] = real(path, box)
        return _PROBED[key]

    monkeypatch.setattr(doctor, "_probe", once)


@pytest.fixture
def descriptor_loads(monkeypatch) -> list[tuple[str, str]]:
    """What reads a descriptor from now on, in this process: ("walk", model) for each walk of the answers
    file (answers.rendered_descriptor), ("load", target) for each descriptor file loaded (descriptor.load)."""
    from tipcgen import descriptor
    from tipcgen.descriptor import answers

    seen: list[tuple[str, str]] = []
    load, walk = descriptor.load, answers.rendered_descriptor
    monkeypatch.setattr(descriptor, "load", lambda target, *a, **k: seen.append(("load", str(target))) or load(target, *a, **k))
    monkeypatch.setattr(answers, "rendered_descriptor",
                        lambda root, model=None, *a, **k: seen.append(("walk", str(model))) or walk(root, model, *a, **k))
    return seen


def read_summary(repo: Path, model: str = "stub_model", mode: str = "lite_train_lite_infer", chain: str = "basic") -> dict:
    """The summary.json a `tipcgen run` wrote in repo, as plain data (the tests' one reader of it)."""
    import json

    from tipcgen.format import paths

    return json.loads((paths.run_dir(repo, model, mode, chain) / paths.SUMMARY_JSON).read_text(encoding="utf-8"))


def read_records(repo: Path, model: str, mode: str) -> list[dict]:
    import json

    path = repo / "test_tipc" / "output" / model / mode / "steps.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def sample_lite_run(tmp_path_factory) -> Path:
    """`tipcgen init bert-sst2` in an empty folder and one lite chain run there, once per session.
    Tests that change the folder work on a copy."""
    pytest.importorskip("paddle")
    repo = tmp_path_factory.mktemp("sample_lite_run")
    tipcgen("init", "bert-sst2", "--output", str(repo), check=True)
    proc = tipcgen("run", "--mode", "lite_train_lite_infer", "--quiet", cwd=repo)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    return repo


@pytest.fixture(scope="session")
def sample_p2o_run(sample_lite_run, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess, tuple[str, str]]:
    """The paddle2onnx chain on a copy of the session's lite run, once per session: the repository, the
    finished process, and `pip freeze` before and after it (the chain must install nothing)."""
    pytest.importorskip("paddle2onnx")
    pytest.importorskip("onnxruntime")
    repo = tmp_path_factory.mktemp("sample_p2o_run") / "repo"
    shutil.copytree(sample_lite_run, repo)
    freeze = [sys.executable, "-m", "pip", "freeze"]
    before = subprocess.run(freeze, capture_output=True, text=True, check=True).stdout
    proc = tipcgen("run", "--chain", "paddle2onnx", "--mode", "lite_train_lite_infer", cwd=repo)
    after = subprocess.run(freeze, capture_output=True, text=True, check=True).stdout
    return repo, proc, (before, after)
