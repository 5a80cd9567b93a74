"""Run a chain exactly as a reviewer does: ``bash test_tipc/prepare.sh`` then the runner.

Both scripts run as subprocesses from the repository root; their output is streamed line by
line to a callback (progress), and the summary is read from what the runner leaves on disk.
There is no private execution path.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections import deque
from pathlib import Path
from typing import Callable

from . import layout
from .errors import RunError
from .results import (JUNIT_XML, SUMMARY_JSON, Step, Summary, check_status_lines, environment_info,
                      read_records, write_json, write_junit)

RUNNERS = {"basic": "test_tipc/test_train_inference_python.sh", "paddle2onnx": "test_tipc/test_paddle2onnx.sh"}
CONFIG_NAMES = {"basic": "train_infer_python.txt", "paddle2onnx": "model_linux_gpu_normal_normal_paddle2onnx_python_linux_cpu.txt"}
RESULT_LOGS = {"basic": "results_python.log", "paddle2onnx": "results_paddle2onnx.log"}
PREPARE = "test_tipc/prepare.sh"
PREPARE_LOG = "prepare.log"
_GRACE_SECONDS = 30


def check_mode(mode: str) -> str:
    if mode in layout.MODES:
        return mode
    if mode in layout.LEGACY_MODES:
        raise RunError(f"mode '{mode}' is a legacy name from the first TIPC version",
                       f"use {layout.LEGACY_MODES[mode]} (modes: {', '.join(layout.MODES)})")
    raise RunError(f"unknown mode '{mode}'", "use one of: " + ", ".join(layout.MODES))


def find_config(config: str | None, root: Path, chain: str = "basic") -> Path:
    """The config to run: the one given, or the only one of the chain under test_tipc/configs."""
    name = CONFIG_NAMES[chain]
    if config:
        return _given_config(config, root, name)
    found = sorted((root / "test_tipc" / "configs").glob(f"*/{name}"))
    if not found:
        raise RunError(f"no test_tipc/configs/*/{name} under {root.resolve()}",
                       "render one first: tipcgen init <sample | descriptor.yaml>, or pass --config")
    if len(found) > 1:
        listing = ", ".join(str(p.relative_to(root)) for p in found)
        raise RunError(f"several configs found ({listing})", "choose one with --config")
    return found[0].relative_to(root)


def _given_config(config: str, root: Path, name: str) -> Path:
    """--config as a path relative to the root: an existing regular file inside it (the scripts run from the root)."""
    full = root / config  # an absolute config stays absolute
    if not os.path.lexists(full):
        raise RunError(f"config file not found: {config}", f"pass a file such as test_tipc/configs/<model>/{name}")
    if not full.is_file():
        raise RunError(f"{config} is not a regular file (a folder, pipe, device or broken link)",
                       f"pass the config file itself, such as test_tipc/configs/<model>/{name}")
    relative = Path(os.path.relpath(os.path.abspath(full), os.path.abspath(root)))
    if relative.parts[:1] == ("..",):
        raise RunError(f"{config} is outside the repository root {root}",
                       "the scripts run from the root and read the config relative to it: pass a config under "
                       "--root, or point --root at the repository that holds it")
    return relative


_PADDLE_PROBE = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('paddle') else 3)"


def preflight(config_path: Path, root: Path, chain: str, env: dict[str, str]) -> None:
    """What would make every step fail, said once before any step runs (tipcgen doctor says more)."""
    from . import lint

    text = config_path.read_text(encoding="utf-8", errors="replace")
    if chain == "basic":
        missing = [f for f in lint.lint_text(text, str(config_path.relative_to(root)), repo_root=root)
                   if f.rule in ("missing-script", "slot-shift")]
        if missing:
            raise RunError("; ".join(f"{f.path}:{f.line}: {f.message}" for f in missing),
                           "fix the config (tipcgen lint shows every finding), or run from the repository root")
    python = env.get("TIPC_PYTHON") or next((line.split(":", 1)[1].strip() for line in text.splitlines()
                                              if line.startswith("python:")), "python")
    found = shutil.which(python, path=env.get("PATH"))
    if found is None:
        raise RunError(f"the config's interpreter '{python}' (line python:) is not on PATH",
                       "write python:python in the config, or set TIPC_PYTHON to the interpreter to use")
    probe = subprocess.run([found, "-c", _PADDLE_PROBE], env=env, capture_output=True, timeout=60)
    if probe.returncode == 3:
        raise RunError(f"paddle is not installed for {found}",
                       "pip install paddlepaddle==3.3.1 (or pip install -e \".[paddle]\" for the tested stack); "
                       "tipcgen doctor checks the rest")


def model_name_of(config_path: Path) -> str:
    for line in config_path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("model_name:"):
            return line.split(":", 1)[1].strip()
    raise RunError(f"{config_path} has no model_name: line", "check it with tipcgen lint")


def run_dir_of(root: Path, model: str, mode: str, chain: str = "basic") -> Path:
    """Each chain and mode has its own output folder: two runs never share one."""
    if chain == "basic":
        return root / "test_tipc" / "output" / model / mode
    return root / "test_tipc" / "output" / model / chain / mode


def _stream(cmd: list[str], root: Path, env: dict[str, str], on_line: Callable[[str], None],
            keep: deque) -> tuple[int, bool]:
    """Run cmd, passing each output line to on_line; returns (exit code, interrupted)."""
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, errors="replace", bufsize=1)
    interrupted = False
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            keep.append(line)
            on_line(line)
        return proc.wait(), False
    except KeyboardInterrupt:
        interrupted = True
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
        return proc.wait(), interrupted


def run_chain(mode: str, root: Path, config: str | None = None, data_dir: str | None = None,
              step_timeout: int | None = None, chain: str = "basic", model_dir: str | None = None,
              on_line: Callable[[str], None] = lambda line: None) -> Summary:
    check_mode(mode)
    if chain not in RUNNERS:
        raise RunError(f"unknown chain '{chain}'", "use one of: " + ", ".join(RUNNERS))
    root = root.resolve()
    config_path = find_config(config, root, chain)
    model = model_name_of(root / config_path)
    if data_dir is not None and not Path(data_dir).is_dir():
        raise RunError(f"--data-dir {data_dir} is not a folder", "name the folder that holds the whole data set")
    for script in (PREPARE, RUNNERS[chain]):
        if not (root / script).is_file():
            raise RunError(f"{script} is missing under {root}", "render it with tipcgen init, and run from the repository root")
    if shutil.which("bash") is None:
        raise RunError("bash is not installed", "the TIPC scripts are bash scripts: install bash")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.setdefault("GLOG_minloglevel", "2")
    if data_dir is not None:
        env["TIPC_DATA_DIR"] = str(Path(data_dir).resolve())
    if model_dir is not None:
        if not Path(model_dir).is_dir():
            raise RunError(f"--model-dir {model_dir} is not a folder", "name a train output folder (it holds the checkpoint)")
        env["TIPC_MODEL_DIR"] = str(Path(model_dir).resolve())
    if step_timeout is not None:
        env["TIPC_STEP_TIMEOUT"] = str(step_timeout)

    preflight(root / config_path, root, chain, env)
    started = time.perf_counter()
    summary = Summary(model=model, mode=mode, config=str(config_path), chain=chain, environment=environment_info())
    prepare_out: deque = deque(maxlen=200_000)
    t0 = time.perf_counter()
    rc, interrupted = _stream(["bash", PREPARE, str(config_path), mode], root, env, on_line, prepare_out)
    prepare = Step(kind="prepare", name="prepare", status="passed" if rc == 0 else "failed", exit_code=rc,
                   seconds=round(time.perf_counter() - t0, 3), log="", command=f"bash {PREPARE} {config_path} {mode}")
    run_dir = run_dir_of(root, model, mode, chain)
    runner_out: deque = deque(maxlen=50)
    if rc == 0 and not interrupted:
        rc, interrupted = _stream(["bash", RUNNERS[chain], str(config_path), mode], root, env, on_line, runner_out)
        summary.runner_exit_code = rc
    else:
        shutil.rmtree(run_dir, ignore_errors=True)
        prepare.reason = "interrupted" if interrupted else f"exit code {rc}"
        prepare.tail = list(prepare_out)[-20:]
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / PREPARE_LOG).write_text("\n".join(prepare_out) + "\n", encoding="utf-8")
    prepare.log = str((run_dir / PREPARE_LOG).relative_to(root))
    steps, problems = read_records(run_dir, root)
    summary.steps = [prepare, *steps]
    summary.problems = problems + check_status_lines(run_dir, steps, RESULT_LOGS[chain])
    if prepare.status == "passed" and not interrupted and not steps:
        summary.problems.append("the runner stopped before any step: " + " | ".join(list(runner_out)[-5:]))
    if summary.runner_exit_code not in (None, 0, 1, 130) and steps:
        summary.problems.append(f"the runner exited with code {summary.runner_exit_code}: "
                                + " | ".join(list(runner_out)[-3:]))
    summary.interrupted = interrupted
    summary.wall_seconds = round(time.perf_counter() - started, 3)
    write_json(summary, run_dir / SUMMARY_JSON)
    write_junit(summary, run_dir / JUNIT_XML)
    stopped = prepare_out if prepare.exit_code == 2 else runner_out if summary.runner_exit_code == 2 and not steps else None
    if stopped is not None:
        raise _script_error(list(stopped))
    return summary


def _script_error(lines: list[str]) -> RunError:
    """A script that refused to start (exit 2) explains why in `tipc error:` / `hint:` lines."""
    errors = [line.removeprefix("tipc error: ") for line in lines if line.startswith("tipc error: ")]
    hints = [line.strip().removeprefix("hint: ") for line in lines if line.strip().startswith("hint: ")]
    message = errors[-1] if errors else " | ".join(lines[-3:]) or "the script stopped with exit code 2"
    return RunError(message, hints[-1] if hints else "")
