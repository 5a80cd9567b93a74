"""The generated shell reads top to bottom (#37 item 5): common_func.sh holds upstream's helpers and the slot
readers (at most 200 lines), tipcgen's checks and step machinery are in tipc_steps.sh, a table holds one entry
per line, and no line of any generated script is over 160 characters, for both samples and every fixture
descriptor (each alone, and the stub models as one repository)."""
from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT
from tipcgen import descriptor
from tipcgen.configs.existing import defined_functions
from tipcgen.format import paths
from tipcgen.render import render

MAX_LINE, MAX_COMMON_FUNC = 160, 200
SAMPLES = sorted(str(p) for p in (ROOT / "sample_models").glob("*/tipc.yaml"))
FIXTURES = sorted(str(p) for p in (ROOT / "tests" / "fixtures").glob("*/tipc*.yaml"))
REPOSITORY = [str(ROOT / "tests" / "fixtures" / name / "tipc.yaml") for name in ("stub", "stub_tutorial", "stub_variant")]
RENDERS = [[path] for path in SAMPLES + FIXTURES] + [REPOSITORY]
# shellcheck costs seconds a script: the renders that hold every template's output between them (the sample: the
# basic, paddle2onnx and benchmark runners and prepare.sh; two PTQ models: the kl_quant body and the ptq one).
PTQ = [str(ROOT / "tests" / "fixtures" / "ptq_cnn" / name) for name in ("tipc_kl.yaml", "tipc_mobile.yaml")]
SHELLCHECKED = [[SAMPLES[0]], PTQ]


def _id(group: list[str]) -> str:
    return "+".join(Path(p).relative_to(ROOT).as_posix() for p in group)


def _shell(group: list[str]) -> dict[str, str]:
    return dict(_rendered_shell(tuple(group)))


@functools.lru_cache(maxsize=None)
def _rendered_shell(group: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """The generated scripts of one render (each group rendered once per session)."""
    files = render.render_repository([descriptor.load(path) for path in group])
    return tuple((rel, text) for rel, text in files.items() if rel.endswith(".sh") and isinstance(text, str))


def test_the_renders_cover_the_samples_and_fixtures():
    assert len(SAMPLES) >= 2 and len(FIXTURES) >= 8, (SAMPLES, FIXTURES)


@pytest.mark.parametrize("group", RENDERS, ids=_id)
def test_no_generated_line_is_over_160_characters_and_common_func_is_short(group: list[str]):
    shell = _shell(group)
    assert paths.COMMON_FUNC in shell and paths.STEPS_SH in shell
    long = [f"{rel}:{n}: {len(line)} characters" for rel, text in shell.items()
            for n, line in enumerate(text.splitlines(), start=1) if len(line) > MAX_LINE]
    assert long == []
    assert len(shell[paths.COMMON_FUNC].splitlines()) <= MAX_COMMON_FUNC


def test_common_func_holds_upstreams_helpers_and_the_slot_readers_only():
    """What a reviewer finds where: upstream's helpers and the readers in common_func.sh, every step and check
    in tipc_steps.sh, each function defined once."""
    shell = _shell([SAMPLES[0]])
    common, steps = defined_functions(shell[paths.COMMON_FUNC]), defined_functions(shell[paths.STEPS_SH])
    assert {"func_parser_key", "func_parser_value", "func_parser_value_lite", "func_parser_params", "func_set_params",
            "func_set_amp_params", "status_check", "slot_value", "slot_key", "section_value", "tipc_add_slots"} <= common
    assert {"tipc_step", "tipc_record", "tipc_check_layout", "tipc_check_keys", "tipc_check_shapes", "tipc_no_links",
            "tipc_check_lock", "tipc_on_interrupt", "tipc_start_run", "tipc_finish"} <= steps
    assert common & steps == set()


@pytest.mark.parametrize("group", RENDERS, ids=_id)
def test_every_generated_script_sources_common_func_then_tipc_steps(group: list[str]):
    for rel, text in _shell(group).items():
        if rel not in (paths.COMMON_FUNC, paths.STEPS_SH):
            sources = [line for line in text.splitlines() if line.startswith("source ")]
            assert [s.rsplit("/", 1)[-1] for s in sources] == ['common_func.sh"', 'tipc_steps.sh"'], rel


def test_a_layouts_slot_table_has_one_slot_per_line():
    steps = _shell([SAMPLES[0]])[paths.STEPS_SH]
    assert "\n                [model_name]=1\n                [python]=2\n" in steps
    assert "\n                1:model_name\n                2:python\n" in steps


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed (apt-get install shellcheck)")
@pytest.mark.parametrize("group", SHELLCHECKED, ids=_id)
def test_every_generated_script_is_shellcheck_clean(group: list[str], tmp_path: Path):
    names = []
    for rel, text in _shell(group).items():
        (tmp_path / Path(rel).name).write_text(text)
        names.append(Path(rel).name)
    assert paths.RUNNERS["ptq"] in _shell(PTQ) and "ptq_chain_kl_quant() {" in _shell(PTQ)[paths.RUNNERS["ptq"]]
    proc = subprocess.run(["shellcheck", "-x", *sorted(names)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


_LOCAL = re.compile(r"^\s*local\s+(?:-[aAn]+\s+)*(.*)$")
_FOR = re.compile(r"\bfor\s+(?:\(\(\s*)?([a-z_][a-z0-9_]*)")
_READ = re.compile(r"\$\{?#?!?([a-z_][a-z0-9_]*)")


def _functions(text: str) -> dict[str, list[str]]:
    """Each top-level function of a script (`name() {` ... `}` at column 0): its body lines."""
    out: dict[str, list[str]] = {}
    name = None
    for line in text.splitlines():
        if (match := re.match(r"^([a-z_][a-z0-9_]*)\(\) \{$", line)):
            name = match.group(1)
            out[name] = []
        elif line == "}":
            name = None
        elif name is not None:
            out[name].append(line)
    return out


@pytest.mark.parametrize("group", [[SAMPLES[0]], REPOSITORY], ids=_id)
def test_no_function_reads_a_local_of_its_caller(group: list[str]):
    """run_training, infer_case and the others get their inputs as arguments (a value, or the name of an array
    they read through local -n): every lower-case variable a function expands is one of its own locals or loop
    variables (upper-case names are the run's globals: MODE, PYTHON, LOG_PATH, TIPC_*). The PTQ runner's
    per-layout bodies (ptq_chain_<layout>) are the script's own body and keep its variables; it is not checked."""
    shell = _shell(group)
    functions = _functions(shell[paths.BASIC_RUNNER])
    assert {"run_training", "infer_case", "run_inference", "run_export", "run_train_chain"} <= set(functions)
    for rel, text in shell.items():
        if rel != paths.RUNNERS["ptq"]:
            functions.update({f"{rel}:{name}": body for name, body in _functions(text).items()})
    for name, body in functions.items():
        own: set[str] = set()
        for line in body:
            if (match := _LOCAL.match(line)):
                own |= {word.split("=", 1)[0] for word in re.findall(r"([a-z_][a-z0-9_]*(?:=\S*)?)", match.group(1))}
            own |= set(_FOR.findall(line))
        code = [re.sub(r"(^|\s)#.*", "", line) for line in body]
        read = {var for line in code for var in _READ.findall(line.replace("'", " "))}
        assert read <= own, (name, sorted(read - own))
