"""``tipcgen doctor``: can this machine run the chain? Checked before any step runs, each with a fix.

The interpreter is the one the runner would use (``TIPC_PYTHON``, else the config's ``python:``
line, else ``python`` from PATH) and is probed in one subprocess that prints JSON: paddle is never
imported here. The CLI prints ``format_checks`` and exits 1 if any check failed.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from tipcgen.configs import flag_check, legacy_format, lint
from tipcgen.configs.flag_check import is_command_name
from tipcgen.core import git, inputs, isolated, process, writes
from tipcgen.core.errors import TipcgenError
from tipcgen.core.sandbox import Spec
from tipcgen.core.text import terminal
from tipcgen.format import chain
from tipcgen.format.chains import BASIC
from tipcgen.format.config import TipcConfig
from tipcgen.format.paths import PREPARE_SH, RUNNERS
from tipcgen.format.words import PADDLE_PIN
from tipcgen.run import export_probe, sandboxed

STATUSES = ("ok", "warn", "fail")
MIN_PYTHON = (3, 9)
MIN_BASH = (5, 0)  # the runner times steps with $EPOCHREALTIME (bash 5.0)
# The pins of the [paddle] extra in pyproject.toml (tests/test_doctor.py keeps them in step).
PADDLENLP_PIN = "paddlenlp==2.8.1"
ONNX_PINS = "paddle2onnx==2.1.0 onnxruntime==1.32.0"
PADDLE_EXTRA = 'pip install -e ".[paddle]"'
PROBE_TIMEOUT = 120
MD5_LIMIT = 2 << 30  # bytes; larger whole-data files are checked for presence only
_MARK = "TIPCGEN_PROBE "
# Runs under the interpreter being checked: any Python 3, standard library and paddle only.
_PROBE = r"""
import importlib.util, json, platform, sys
from importlib import metadata
out = {"version": platform.python_version(), "executable": sys.executable, "modules": {}}
for name, dist in (("paddlenlp", "paddlenlp"), ("paddle2onnx", "paddle2onnx"), ("onnxruntime", "onnxruntime")):
    try:
        found = importlib.util.find_spec(name) is not None
    except Exception:
        found = False
    try:
        out["modules"][name] = metadata.version(dist) if found else None
    except Exception:
        out["modules"][name] = "unknown version"
try:
    import paddle
except BaseException as exc:
    out["paddle_error"] = (type(exc).__name__ + ": " + str(exc)).splitlines()[0]
else:
    out["paddle"] = paddle.__version__
    try:
        out["pir"] = bool(paddle.framework.use_pir_api())
    except Exception:
        out["pir"] = None
    try:
        out["cuda"] = bool(paddle.device.is_compiled_with_cuda())
        out["gpus"] = paddle.device.cuda.device_count() if out["cuda"] else 0
    except Exception as exc:
        out["cuda_error"] = (type(exc).__name__ + ": " + str(exc)).splitlines()[0]
print(__MARK__ + json.dumps(out))
""".replace("__MARK__", repr(_MARK))


# A small model exported under FLAGS_enable_pir_api=0 (the old program IR), in a temporary folder: whether this
# paddle can write inference.pdmodel at all for the ops most models call (a functional sigmoid, a matmul). On Paddle
# 3.3.1 it fails as the repositories of issue #56 did (matmul(): ... must be Value, but got Variable).
_OLD_IR_PROBE = r"""
import json, os, shutil, sys, tempfile
os.environ["FLAGS_enable_pir_api"] = "0"
import paddle
class Probe(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = paddle.nn.Linear(4, 3)
    def forward(self, x):
        return paddle.nn.functional.sigmoid(paddle.matmul(self.fc(x), paddle.ones([3, 2])))
out = tempfile.mkdtemp()
try:
    model = Probe()
    model.eval()
    paddle.jit.save(model, os.path.join(out, "inference"), input_spec=[paddle.static.InputSpec([None, 4], "float32")])
    found = {"ok": True, "files": sorted(os.listdir(out))}
except Exception as exc:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    said = next((line for line in lines if "must be" in line or "got" in line), lines[-1] if lines else "")
    named = said if said.startswith(type(exc).__name__) else type(exc).__name__ + ": " + said
    found = {"ok": False, "error": named[:300]}
finally:
    shutil.rmtree(out, ignore_errors=True)
print(__MARK__ + json.dumps(found))
""".replace("__MARK__", repr(_MARK))


@dataclass(frozen=True)
class Check:
    """One finding: what was checked, ok | warn | fail, what was found, and how to fix it."""

    name: str
    status: str
    detail: str
    fix: str = ""


def diagnose(root: Path, config: str | None = None, data_dir: str | None = None,
             unsandboxed: bool = False) -> list[Check]:
    """Every check: the interpreter and paddle, the tools the scripts call, the sandbox, the config, its scripts
    and the keys passed to them (their --help in the sandbox; unsandboxed: also without one, --trust-repo), data."""
    if not root.is_dir():
        raise TipcgenError(f"--root {root}: no such folder" if not root.exists() else f"--root {root}: is not a folder",
                           "pass the repository root (the folder that holds test_tipc/)")
    root = root.resolve()
    config_path, config_checks = _config(root, config)
    python, origin = _interpreter(root / config_path if config_path else None)
    python_checks = _python_side(python, origin, root / config_path if config_path else None)  # below: the sandbox row says whether --help probes are boxed
    pir = any(c.name == "export format" and c.detail.startswith("PIR") for c in python_checks)
    lint_ok = not any(c.name == "lint" and c.status == "fail" for c in config_checks)
    flags = _flags(root, config_path, lint_ok, unsandboxed) if config_path else []
    own, old_ir = _own_export(root, config_path, python, unsandboxed) if config_path else ([], None)
    probed = (lambda: old_ir) if old_ir else lambda: _old_ir_export(python)
    legacy = _legacy_format(root, config_path, pir, probed, own=old_ir is not None) if config_path else []
    legacy += _predictor(root, config_path, pir) if config_path else []
    boxed = _sandboxed_paddle(root, python, python_checks)
    return (python_checks + _tools() + [Check("sandbox", *sandboxed.doctor_row()), *boxed, _git(root)] + config_checks
            + flags + own + legacy + _data(root, config_path, data_dir))


def exit_code(checks: list[Check]) -> int:
    return 1 if any(check.status == "fail" for check in checks) else 0


def format_checks(checks: list[Check]) -> str:
    """A table for people: status, name, detail, and the fix under any row that is not ok."""
    width = max((len(check.name) for check in checks), default=0)
    rows = []
    for check in checks:
        rows.append(f"{'FAIL' if check.status == 'fail' else check.status:<4}  {check.name:<{width}}  {terminal(check.detail)}")
        if check.fix and check.status != "ok":  # details and fixes quote config lines and paths: escaped
            rows.append(f"{'':<4}  {'':<{width}}  fix: {terminal(check.fix)}")
    failed = sum(check.status == "fail" for check in checks)
    warned = sum(check.status == "warn" for check in checks)
    rows.append(f"doctor: {failed} failed, {warned} warning(s), {len(checks) - failed - warned} ok")
    return "\n".join(rows)


def checks_json(checks: list[Check]) -> str:
    """--format json: every check (name, status, detail, fix) and the counts, for a machine."""
    from tipcgen.core.text import json_text

    failed = sum(check.status == "fail" for check in checks)
    warned = sum(check.status == "warn" for check in checks)
    return json_text({"checks": [{"name": c.name, "status": c.status, "detail": c.detail, "fix": c.fix} for c in checks],
                      "failed": failed, "warnings": warned, "ok": len(checks) - failed - warned,
                      "exit_code": exit_code(checks)})


# ---------------------------------------------------------------- what run --sandbox and the tracked-files check meet

def _sandboxed_paddle(root: Path, python: str, python_checks: list[Check]) -> list[Check]:
    """paddle imported inside the sandbox run --sandbox builds (run/sandboxed.spec), by the same interpreter and
    environment: a venv whose files the sandbox hides fails here, not in the run's first step. Nothing where no
    sandbox can be had (the sandbox row says so) or paddle does not import outside it (the paddle row says so)."""
    from tipcgen.core import sandbox
    from tipcgen.format import paths as names

    if not any(c.name == "paddle" and c.status != "fail" for c in python_checks) or not sandbox.available()[0]:
        return []
    path = shutil.which(python)
    if path is None:
        return []
    found = _probe(path, sandboxed.spec(root, root / names.OUTPUT, dict(os.environ), path))
    if isinstance(found, dict) and "paddle" in found:
        return [Check("sandboxed paddle", "ok", f"paddle {found['paddle']} imports inside run --sandbox's sandbox "
                      f"({path})")]
    why = found.get("paddle_error", "unknown error") if isinstance(found, dict) else found.detail
    return [Check("sandboxed paddle", "fail", f"{path} cannot import paddle inside run --sandbox's sandbox: {why}",
                  "the sandbox shows only the repository, the system folders and the interpreter's own prefix: "
                  "put the environment outside /tmp or inside the repository (python -m venv .venv), or run "
                  "without --sandbox")]


def _git(root: Path) -> Check:
    """The tracked-files check's precondition: run compares git status before and after each part."""
    from tipcgen.run import tracked

    if git.found() is None:
        return Check("git", "warn", "git is not on PATH: run cannot check that the chain leaves the tracked files "
                     "as they were (its tracked-files check is skipped)", "install git")
    if tracked.snapshot(root) is None:
        return Check("git", "warn", f"{root} is not in a git work tree: run cannot check that the chain leaves the "
                     "tracked files as they were (its tracked-files check is skipped)",
                     "git init && git add -A && git commit -m baseline (a reviewer's clone is one)")
    return Check("git", "ok", "a git work tree: run checks that the chain changes no tracked file")


# ---------------------------------------------------------------- tools the scripts call

def _tools() -> list[Check]:
    checks = []
    bash = shutil.which("bash")
    if bash is None:
        checks.append(Check("bash", "fail", "bash is not on PATH; every TIPC script is a bash script",
                            f"install bash {MIN_BASH[0]}.{MIN_BASH[1]} or newer"))
    else:
        found = _run([bash, "-c", 'printf %s "$BASH_VERSION"'])
        version = _version_tuple(found or "")
        if version < MIN_BASH:
            checks.append(Check("bash", "fail", f"bash {found or 'of unknown version'} at {bash}; the runner needs "
                                f"{MIN_BASH[0]}.{MIN_BASH[1]}+", "install a newer bash (macOS: brew install bash)"))
        else:
            checks.append(Check("bash", "ok", f"{found} ({bash})"))
    for tool, why, status in (("timeout", "limits every step", "fail"), ("md5sum", "checks whole data sets", "warn"),
                              ("awk", "counts the rows of a whole-data file whose md5 differs", "warn")):
        path = shutil.which(tool)
        checks.append(Check(tool, "ok", path) if path else
                      Check(tool, status, f"{tool} is not on PATH; the runner uses it ({why})",
                            "install GNU coreutils" if tool != "awk" else "install awk (gawk or mawk)"))
    return checks


# ---------------------------------------------------------------- the interpreter and paddle

def _interpreter(config_file: Path | None) -> tuple[str, str]:
    """The interpreter the generated scripts use, and where that choice came from."""
    if os.environ.get("TIPC_PYTHON"):
        return os.environ["TIPC_PYTHON"], "TIPC_PYTHON"
    if config_file is not None:
        named = TipcConfig.read(config_file).python
        # a plain name is looked up on the user's PATH; a path the config names (./tool.sh) is never run
        if named and named.strip() and named.strip() != "null" and is_command_name(named.strip()):
            return named.strip(), f"python: line of {config_file.name}"
    return "python", "default"


def _python_side(python: str, origin: str, config_file: Path | None = None) -> list[Check]:
    path = shutil.which(python)
    if path is None:
        return [Check("python", "fail", f"'{python}' ({origin}) is not on PATH",
                      "install Python 3.9+ and activate it (python3 -m venv .venv && . .venv/bin/activate), "
                      "or set TIPC_PYTHON=/path/to/python")]
    if config_file is not None and origin != "TIPC_PYTHON":  # the config's word: python:make is never run
        try:
            text = inputs.read_text(config_file, "config")
        except TipcgenError:
            text = ""  # the config row says why it cannot be read
        refused = flag_check.not_python(text, {}, path, config_file.name)
        if refused:
            return [Check("python", "fail", refused, "set TIPC_PYTHON=/path/to/python (the interpreter with the "
                                                     "model's packages), or write python:python in the config")]
    found = _probe(path)
    if isinstance(found, Check):
        return [found]
    checks = [_python_version(found, path, origin)]
    checks += _paddle(found)
    modules = found.get("modules", {})
    checks.append(_module(modules, "paddlenlp", "the bert-sst2 sample imports it", f"pip install {PADDLENLP_PIN}"))
    for name in ("paddle2onnx", "onnxruntime"):
        checks.append(_module(modules, name, "the paddle2onnx chain needs it", f"pip install {ONNX_PINS}"))
    return checks


def _probe(path: str, box: Spec | None = None) -> dict | Check:
    """What the interpreter at path reports of itself and paddle (one subprocess; in the sandbox ``box`` where
    given), or the failed check."""
    outcome = process.run(process.Request(isolated.command(path, _PROBE), timeout=PROBE_TIMEOUT, stderr="separate",
                                          output_cap=1 << 20, sandbox=box))
    if outcome.exit_code is None or outcome.timed_out:
        why = outcome.error or f"it did not finish in {PROBE_TIMEOUT} s"
        return Check("python", "fail", f"{path} could not run a probe: {why}", "check that it is a working Python")
    line = next((line for line in reversed(outcome.output.splitlines()) if line.startswith(_MARK)), None)
    if line is None:
        last = terminal((outcome.errors.strip().splitlines() or ["no output"])[-1])[:300]
        return Check("python", "fail", f"{path} could not run a probe (exit code {outcome.exit_code}): {last}",
                     "check that it is a working Python 3")
    return json.loads(line[len(_MARK):])


def _python_version(found: dict, path: str, origin: str) -> Check:
    version = found.get("version", "")
    detail = f"{version} ({path}, {origin})"
    if _version_tuple(version) < MIN_PYTHON:
        return Check("python", "fail", detail, f"install Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]}+")
    return Check("python", "ok", detail)


def _paddle(found: dict) -> list[Check]:
    if "paddle" not in found:
        return [Check("paddle", "fail", f"cannot import paddle: {found.get('paddle_error', 'unknown error')}",
                      f"pip install {PADDLE_PIN}  (or {PADDLE_EXTRA} for the whole tested stack)")]
    version = found["paddle"]
    checks = []
    if _version_tuple(version) < (3, 0):
        checks.append(Check("paddle", "warn", f"paddle {version}; tipcgen's chains are tested with 3.3.1",
                            f"pip install {PADDLE_PIN}"))
    else:
        checks.append(Check("paddle", "ok", f"paddle {version}"))
    if found.get("pir"):
        checks.append(Check("export format", "ok", "PIR: export writes inference.json + inference.pdiparams"))
    else:
        checks.append(Check("export format", "ok", "legacy program: export writes inference.pdmodel + inference.pdiparams"))
    checks.append(_gpu(found))
    return checks


def _gpu(found: dict) -> Check:
    skipped = "GPU entries of gpu_list and use_gpu=True inference will be skipped"
    if "cuda_error" in found:
        return Check("gpu", "warn", f"paddle could not count CUDA devices ({found['cuda_error']}); {skipped}",
                     "check the CUDA driver with nvidia-smi")
    if not found.get("cuda"):
        return Check("gpu", "warn", f"paddle is a CPU build; {skipped}",
                     "for GPU runs install the paddlepaddle-gpu build that matches your CUDA version")
    gpus = found.get("gpus", 0)
    if not gpus:
        return Check("gpu", "warn", f"CUDA build of paddle, but no CUDA device is visible; {skipped}",
                     "check nvidia-smi and CUDA_VISIBLE_DEVICES")
    if not os.environ.get("TIPC_GPU_COUNT") and shutil.which("nvidia-smi") is None:
        return Check("gpu", "warn", f"paddle sees {gpus} CUDA device(s), but nvidia-smi is not on PATH, so the "
                     f"runner counts none: {skipped}", f"put nvidia-smi on PATH, or export TIPC_GPU_COUNT={gpus}")
    return Check("gpu", "ok", f"{gpus} CUDA device(s)")


def _module(modules: dict, name: str, why: str, fix: str) -> Check:
    version = modules.get(name)
    if version is None:
        return Check(name, "warn", f"not installed; {why}", fix)
    return Check(name, "ok", f"{name} {version}")


# ---------------------------------------------------------------- the config and its scripts

def _config(root: Path, config: str | None) -> tuple[Path | None, list[Check]]:
    from tipcgen.configs.locate import find_config

    try:
        path = find_config(config, root)
    except TipcgenError as exc:
        status = "fail" if config else "warn"
        return None, [Check("config", status, exc.message, exc.hint)]
    checks = [Check("config", "ok", str(path))]
    for script in (PREPARE_SH, RUNNERS[BASIC]):  # other chains' runners exist only where the descriptor asks
        if not (root / script).is_file():
            checks.append(Check("runner", "fail", f"{script} is missing", "render it with tipcgen init"))
    try:
        findings = lint.refusals(root / path, repo_root=root)  # the errors tipcgen run refuses a config for
    except TipcgenError as exc:
        return None, [Check("config", "fail", exc.message, exc.hint), *checks[1:]]
    findings = [replace(f, path=str(path)) for f in findings]
    missing = [f for f in findings if f.rule == "missing-script"]
    for finding in missing:
        checks.append(Check("scripts", "fail", f"{path}:{finding.line}: {finding.message}",
                            "fix the script path in the descriptor and re-render (tipcgen init ... --force), "
                            "or run from the repository root (--root)"))
    if not missing:
        checks.append(Check("scripts", "ok", f"every script {path.name} names exists under {root}"))
    errors = [f for f in findings if f.rule != "missing-script"]
    if errors:
        checks.append(Check("lint", "fail", f"{len(errors)} lint error(s), first: {lint.format_finding(errors[0])}",
                            f"tipcgen run refuses this config: see every finding with tipcgen lint {path}, fix them"))
    else:
        checks.append(Check("lint", "ok", f"no lint error in {path}"))
    return path, checks


def _flags(root: Path, config_path: Path, lint_ok: bool = True, unsandboxed: bool = False) -> list[Check]:
    """run's last refusal (configs/preflight.py): each key the runner passes is a flag of its script's --help,
    probed in the chain's interpreter by configs/flag_check.py (cached where run caches it)."""
    from tipcgen.configs import preflight

    text = inputs.read_text(root / config_path, "config")
    python, found = flag_check.probe_interpreter(text, dict(os.environ))
    why = (preflight.flags_unchecked(root, text) or ("" if lint_ok else "tipcgen run stops at the lint errors first")
           or ("" if found else f"the chain's interpreter '{python}' is not on PATH (see the python row)"))
    try:
        survey = None if why else flag_check.survey(root, text, found, unsandboxed=unsandboxed)
    except (TipcgenError, OSError) as exc:  # a script that cannot be read (a pipe, too long a name)
        survey, why = None, exc.message if isinstance(exc, TipcgenError) else str(exc)
    if survey is None:
        return [Check("flags", "warn", f"the keys the runner passes are not checked against the scripts' --help: {why}",
                      f"remove what stops the check (above), then see it alone: tipcgen lint {config_path} --root .")]
    by_hand = "check by hand that the script reads each key the runner passes it (the config line named)"
    rows = [Check("flags", "fail" if p.severity == "error" else "warn", f"{config_path}:{p.line}: {p.message}",
                  p.fix or by_hand) for p in survey.problems]
    if not any(row.status == "fail" for row in rows) and (survey.keys or not rows):
        cached = ("" if not survey.cached else " (cached)" if survey.cached == survey.answers else
                  f" ({survey.cached} of {survey.answers} cached)")
        rows.insert(0, Check("flags", "ok", f"{survey.keys} key(s) of {survey.scripts} script(s) checked: each "
                                            f"is a flag of its script's --help{cached}"))
    return rows


def _old_ir_export(python: str) -> tuple[bool, str] | None:
    """Whether this paddle exports a small model under FLAGS_enable_pir_api=0 (True, the files written) or not
    (False, its error); None when the probe could not run."""
    path = shutil.which(python)
    if path is None:
        return None
    with tempfile.TemporaryDirectory(prefix="tipcgen-old-ir-") as folder:  # to_static reads the forward's source file
        probe = Path(folder) / "old_ir_probe.py"
        writes.write_file(probe, _OLD_IR_PROBE, within=folder)
        outcome = process.run(process.Request([path, "-I", str(probe)], timeout=PROBE_TIMEOUT, stderr="separate",
                                              output_cap=1 << 20, cwd=folder))
    line = next((line for line in reversed(outcome.output.splitlines()) if line.startswith(_MARK)), None)
    if outcome.timed_out or line is None:
        return None
    found = json.loads(line[len(_MARK):])
    return (True, ", ".join(found.get("files", []))) if found.get("ok") else (False, str(found.get("error", "")))


def _own_export(root: Path, config_path: Path, python: str, unsandboxed: bool) -> tuple[list[Check], tuple | None]:
    """This repository's own export, exported again from the last lite run's checkpoint under PIR and under
    FLAGS_enable_pir_api=0 (run/export_probe.py): its row, and the old program IR's outcome for _legacy_format
    ((True, the files) or (False, the error); None where it was not probed: the small stand-in model is probed then)."""
    name, flag = "export of this model", legacy_format.FLAG
    model = TipcConfig.read(root / config_path).model_name
    recorded = export_probe.recorded_export(root, model.strip()) if model else None
    if recorded is None:
        return [Check(name, "warn", "not probed: no lite run has recorded an export step yet",
                      "tipcgen run --mode lite_train_lite_infer, then doctor again: it exports this model again from "
                      f"the trained checkpoint under PIR and under {flag}=0")], None
    if not any((root / recorded.output).glob("*.pdiparams")):  # a stand-in chain's (TIPC_NO_PADDLE), or a failed one
        return [Check(name, "warn", f"not probed: the last lite run's {recorded.name} wrote no .pdiparams into "
                      f"{recorded.output}", "tipcgen run --mode lite_train_lite_infer: its export step's log and "
                      "hint say why")], None
    try:
        under_pir, under_old = export_probe.probe(root, recorded, dict(os.environ), python, unsandboxed)
    except TipcgenError as exc:
        return [Check(name, "warn", f"not probed: {exc.message}", exc.hint or "")], None
    old_ir = (True, ", ".join(under_old.files)) if under_old.ok else (False, terminal(under_old.error))
    pir_text = (f"under PIR (Paddle 3's default) it writes {', '.join(under_pir.files)}" if under_pir.ok
                else f"under PIR (Paddle 3's default) it fails: {terminal(under_pir.error)}")
    old_text = f"under {flag}=0, {old_ir[1]}" if under_old.ok else f"under {flag}=0 it fails: {old_ir[1]}"
    detail = f"{recorded.name} run again from the last lite run's checkpoint: {pir_text}; {old_text}"
    flag_set = f"{flag}=0" in recorded.argv
    if under_pir.ok and (under_old.ok or not flag_set):
        fix = "" if under_old.ok else f"never add {flag}=0 for this model"
        return [Check(name, "ok", detail + (f" ({fix})" if fix else ""))], old_ir
    if under_old.ok:
        if flag_set:
            return [Check(name, "ok", detail + f" (the runner sets {flag}=0: descriptor env:)")], old_ir
        return [Check(name, "fail", detail, f'add env: {{{flag}: "0"}} to the descriptor and re-render (tipcgen init '
                      "DESCRIPTOR --force), or change what the PIR error names")], old_ir
    if under_pir.ok:  # the runner sets the flag, and the export fails under it: it works without
        return [Check(name, "fail", detail, f"remove {flag} from env: in the descriptor and re-render "
                      "(tipcgen init DESCRIPTOR --force)")], old_ir
    return [Check(name, "fail", detail, "the export step's log and its hint name the cause "
                  "(tipcgen run --mode lite_train_lite_infer)")], old_ir


def _legacy_format(root: Path, config_path: Path, pir: bool, old_ir=None, own: bool = False) -> list[Check]:
    """An inference script that loads inference.pdmodel, which Paddle 3 (PIR) export does not write; ``old_ir``
    (a callable, asked only under PIR): whether an export under FLAGS_enable_pir_api=0 works with this paddle
    (``own``: this repository's own export, else a small stand-in model's), so that the flag is advised only where
    it helps, and said to break the export where it is set and fails."""
    probed = "this model's own export" if own else "a probe export of a small model"
    found = legacy_format.config_state(root, config_path)
    if found is None:  # a script that reads inference.json: the flag only costs, where the runner sets it
        probe = old_ir() if pir and old_ir is not None and legacy_format.flag_in_runner(root, config_path) else None
        if probe is None or probe[0]:
            return []
        return [Check("inference format", "fail", f"the runner exports {legacy_format.FLAG}=0 for export and inference, "
                      f"but {probed} under it failed with this paddle ({probe[1]}), and the "
                      "inference script does not need it (it does not load inference.pdmodel only)",
                      f"remove {legacy_format.FLAG} from env: in the descriptor and re-render (tipcgen init DESCRIPTOR --force)")]
    script, runner_sets_flag = found
    at = legacy_format.pdmodel_line(root, script)
    where = f" ({at})" if at else ""
    probe = old_ir() if pir and old_ir is not None else None
    failed = probe is not None and not probe[0]
    under = f"{probed} under {legacy_format.FLAG}=0 failed with this paddle ({probe[1]})" if failed else ""
    if runner_sets_flag:
        if failed:
            return [Check("inference format", "fail", f"{script} loads inference.pdmodel and the runner exports "
                          f"{legacy_format.FLAG}=0 for export and inference, but {under}",
                          f"remove {legacy_format.FLAG} from env: in the descriptor, make {script} load inference.json "
                          f"when there is no .pdmodel{where}, and re-render (tipcgen init DESCRIPTOR --force)")]
        tried = ("" if probe is None else f"; {probed} under it worked with this paddle" + (
            "" if own else " (your model's ops may still fail: the export step's hint says so)"))
        return [Check("inference format", "ok", f"{script} loads inference.pdmodel; the runner exports "
                      f"{legacy_format.FLAG}=0 for export and inference (descriptor env:){tried}")]
    if failed:
        return [Check("inference format", "fail", f"{script} loads inference.pdmodel, which Paddle 3 (PIR) export does "
                      f"not write; and {legacy_format.FLAG}=0 is no cure here: {under}",
                      f"make {script} load inference.json when there is no .pdmodel{where}; do not add "
                      f"{legacy_format.FLAG} to env:")]
    tried = f" ({probed} under it worked with this paddle)" if probe is not None else ""
    return [Check("inference format", "fail" if pir else "warn",
                  f"{script} loads inference.pdmodel, which Paddle 3 (PIR) export does not write"
                  + ("" if pir else " (this paddle writes it: the chain passes here, not under Paddle 3)"),
                  f"make {script} load inference.json when there is no .pdmodel{where}; or add env: "
                  f'{{{legacy_format.FLAG}: "0"}} to the descriptor{tried} and re-render (tipcgen init DESCRIPTOR --force)')]


_MEMORY_OPTIM = re.compile(r"^(?!\s*#).*\benable_memory_optim\s*\(", re.MULTILINE)
_MKLDNN_ON = re.compile(r"^(?!\s*#).*\benable_mkldnn\s*\(\s*\)", re.MULTILINE)
_MKLDNN_OFF = re.compile(r"^(?!\s*#).*\bdisable_mkldnn\s*\(", re.MULTILINE)


def _predictor(root: Path, config_path: Path, pir: bool) -> list[Check]:
    """What the inference script's predictor meets on Paddle 3 (PIR): enable_memory_optim() fails on .json models;
    oneDNN is on by default on a CPU Config, so an enable_mkldnn flag that is false does nothing without
    disable_mkldnn(). Read from the script's source; said only under PIR (Paddle 2 has neither trap)."""
    if not pir:
        return []
    config = TipcConfig.read(root / config_path)
    line = config.slot(chain.name_of("inference.script"))
    script = legacy_format.script_of(line.value if line is not None else None)
    if not script:
        return []
    try:
        path = root / script
        if not path.is_file() or path.stat().st_size > legacy_format.MAX_SCRIPT_BYTES:
            return []
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return []

    def at(found: re.Match) -> str:
        return f"{script}:{text.count(chr(10), 0, found.start()) + 1}"

    checks = []
    memory = _MEMORY_OPTIM.search(text)
    if memory:
        checks.append(Check("predictor", "warn", f"{at(memory)} calls config.enable_memory_optim(), which makes "
                            "create_predictor fail on Paddle 3's PIR models (memory_optimize_pass)",
                            f"remove it from {script}, or call it only for a .pdmodel model"))
    mkldnn_on = _MKLDNN_ON.search(text)
    if mkldnn_on and not _MKLDNN_OFF.search(text):
        checks.append(Check("predictor", "warn", f"{at(mkldnn_on)} turns oneDNN on, and {script} never calls "
                            "disable_mkldnn(): Paddle 3.3's CPU Config has oneDNN on by default, so --enable_mkldnn "
                            "False leaves it on (and oneDNN with PIR models crashes on 3.3)",
                            f"call config.disable_mkldnn() in {script} when the flag is false"))
    return checks


# ---------------------------------------------------------------- data

def _data(root: Path, config_path: Path | None, data_dir: str | None) -> list[Check]:
    model = TipcConfig.read(root / config_path).model_name if config_path else None
    try:
        spec = _data_spec(root, model.strip() if model else None)
    except TipcgenError as exc:  # the descriptor is there and cannot be read: its own error, not "no descriptor"
        return [Check("descriptor", "fail", exc.message, exc.hint or "fix the descriptor (tipcgen init checks it)")]
    if spec is None:
        return [Check("data", "warn", "not checked: no descriptor (tipc.yaml or sample_models/*/tipc.yaml) "
                      "for this config under the root",
                      "render from a descriptor (tipcgen init tipc.yaml), or write one with tipcgen new")]
    if spec.data is None:
        return [Check("data", "ok", f"{spec.model_name}: the descriptor names no data")]
    checks = []
    missing = [f.lite for f in spec.data.files if f.lite and not (root / f.lite).exists()]  # a file, folder or archive
    if missing:
        checks.append(Check("lite data", "fail", f"missing under {root}: {', '.join(missing)}",
                            "the lite data ships with the project: restore it (git checkout), or re-render the sample"))
    else:
        checks.append(Check("lite data", "ok", f"{len(spec.data.files)} file(s) for lite modes"))
    checks.append(_whole_data(spec, data_dir))
    return checks


def _data_spec(root: Path, model: str | None):
    """The descriptor of this config's model: the one init rendered it from (.tipcgen-answers.yml), else
    tipc.yaml at the root or a sample's, if one matches."""
    from tipcgen import descriptor
    from tipcgen.descriptor import answers

    rendered = answers.rendered_descriptor(root, model, or_first=True)  # one that cannot be read: its error
    if rendered is not None and (model is None or rendered[0].model_name == model):
        return rendered[0]
    found, errors = [], []
    for path in [root / "tipc.yaml", *sorted(root.glob("sample_models/*/tipc.yaml"))]:
        if path.is_file():
            try:
                found.append(descriptor.load(path))
            except TipcgenError as exc:
                errors.append(exc)
    matching = [desc for desc in found if model is None or desc.model_name == model]
    if len(matching) != 1 and errors and (root / "tipc.yaml").is_file() and str(root / "tipc.yaml") in str(errors[0]):
        raise errors[0]  # the repository's own descriptor, unreadable: what it says is wrong is the finding
    return matching[0] if len(matching) == 1 else None


def _whole_data(spec, data_dir: str | None) -> Check:
    env = spec.data.whole_env
    folder = data_dir or os.environ.get(env)
    wanted = sorted({(f.whole, f.md5) for f in spec.data.files if f.whole})
    if not wanted:
        return Check("whole data", "ok", "the descriptor names no whole data")
    names = ", ".join(name for name, _ in wanted)
    if not folder:
        return Check("whole data", "warn", f"{env} is not set: whole-data modes will stop before any step "
                     f"(they read {names})", f"pass --data-dir DIR or export {env}=DIR, the folder with {names}")
    base = Path(folder)
    if not base.is_dir():
        return Check("whole data", "fail", f"{folder} is not a folder", f"point {env} / --data-dir at the folder with {names}")
    problems = []
    for name, md5 in wanted:
        path = base / name
        if not path.exists():
            problems.append(f"{name} is missing")
        elif md5 and path.is_file() and path.stat().st_size <= MD5_LIMIT and (digest := _md5(path)) != md5:
            problems.append(f"{name} has md5 {digest}, expected {md5}")
    if problems:
        return Check("whole data", "fail", f"{folder}: " + "; ".join(problems),
                     f"put the original {names} in {folder}")
    return Check("whole data", "ok", f"{folder} holds {names}" + (" (md5 checked)" if any(m for _, m in wanted) else ""))


# ---------------------------------------------------------------- helpers

def _md5(path: Path) -> str:
    digest = hashlib.md5()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _run(cmd: list[str]) -> str | None:
    outcome = process.run(process.Request(cmd, timeout=30, stderr="discard", output_cap=1 << 20))
    return None if outcome.exit_code is None or outcome.timed_out else outcome.output.strip()


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"[0-9]{1,9}", text, re.ASCII)[:2])  # ASCII, bounded: a probe's text
