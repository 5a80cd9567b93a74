"""The generated shell reads top to bottom (#37 item 5, #58 item 3): common_func.sh holds upstream's helpers and
the slot readers (at most 200 lines), tipcgen's checks and step machinery are in tipc_steps.sh, a table holds one
entry per line, each chain's own shell is its own file (the fleet chain's simulated machines in tipc_fleet.sh,
sourced by the basic runner only in that chain), tipc_steps.sh holds the layout tables of the repository's configs
only, and every line of every generated script is under 120 characters, for both samples and every fixture
descriptor (each alone, and the stub models as one repository). The basic chain's shell a reviewer reads (its
runner and what it sources) is held to its line count."""
from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, fuzz_examples
from tipcgen import descriptor
from tipcgen.configs.existing import defined_functions
from tipcgen.format import families, paths
from tipcgen.render import render
from tipcgen.render.templating import environment

MAX_LINE, MAX_COMMON_FUNC = 119, 200
# The lines of the basic chain's shell a reviewer reads for bert-sst2 (the runner, common_func.sh, tipc_steps.sh),
# a ceiling a change must justify: 1,629 before #58 item 3 moved the fleet chain's simulation (~170 lines) to
# tipc_fleet.sh and rendered only the layout tables a repository's configs use; issue #58 asks for 900, which
# needs a further split (docs/ARCHITECTURE.md, "The generated shell").
BASIC_SHELL_LINES = 1484  # +2 the core count without OMP_NUM_THREADS, +2 INTR on a progress line
SAMPLES = sorted(str(p) for p in (ROOT / "sample_models").glob("*/tipc.yaml"))
FIXTURES = sorted(str(p) for p in (ROOT / "tests" / "fixtures").glob("*/tipc*.yaml"))
REPOSITORY = [str(ROOT / "tests" / "fixtures" / name / "tipc.yaml") for name in ("stub", "stub_tutorial", "stub_variant")]
RENDERS = [[path] for path in SAMPLES + FIXTURES] + [REPOSITORY]
# shellcheck costs seconds a script: the renders that hold every template's output between them (the sample: the
# basic, paddle2onnx and benchmark runners and prepare.sh; two PTQ models: the kl_quant body and the ptq one).
PTQ = [str(ROOT / "tests" / "fixtures" / "ptq_cnn" / name) for name in ("tipc_kl.yaml", "tipc_mobile.yaml")]
FLEET = [str(ROOT / "tests" / "fixtures" / "dy2static_mlp" / "tipc.yaml")]  # the fleet and dy2static chains
SHELLCHECKED = [[SAMPLES[0]], PTQ, FLEET]


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
def test_every_generated_line_is_under_120_characters_and_common_func_is_short(group: list[str]):
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
        if rel not in (paths.COMMON_FUNC, paths.STEPS_SH, paths.FLEET_SH):
            sources = [line for line in text.splitlines() if line.startswith("source ")]
            assert [s.rsplit("/", 1)[-1] for s in sources] == ['common_func.sh"', 'tipc_steps.sh"'], rel


def _sourced(text: str) -> list[str]:
    """The files a script sources, by name, in order (at its top level or inside a block)."""
    return [line.rsplit("/", 1)[-1].rstrip('"') for line in text.splitlines() if line.lstrip().startswith("source ")]


def test_the_fleet_chains_machines_are_its_own_file_sourced_only_in_that_chain():
    """The basic runner holds a hook (FLEET_HOSTS, and tipc_fleet.sh sourced under TIPC_MULTI_NODE=local, which the
    fleet runner sets); the simulation itself (fleet_nodes, fleet_train, fleet_check) is tipc_fleet.sh, rendered
    only where a descriptor asks for the fleet chain."""
    plain, fleet = _shell([SAMPLES[0]]), _shell(FLEET)
    assert paths.FLEET_SH not in plain and paths.RUNNERS["fleet"] not in plain
    assert {"fleet_nodes", "fleet_train", "fleet_check"} <= defined_functions(fleet[paths.FLEET_SH])
    for shell in (plain, fleet):
        runner = shell[paths.BASIC_RUNNER]
        assert not defined_functions(runner) & {"fleet_nodes", "fleet_train", "fleet_check"}
        hook = runner[runner.index('if [ "${TIPC_MULTI_NODE:-}" = local ]; then'):]
        assert hook.index('    source "$(dirname "${BASH_SOURCE[0]}")/tipc_fleet.sh"') < hook.index("\nfi\n")
        assert _sourced(runner) == ["common_func.sh", "tipc_steps.sh", "tipc_fleet.sh"]
    assert "TIPC_MULTI_NODE=local" in fleet[paths.RUNNERS["fleet"]]


def test_a_basic_runner_told_to_simulate_machines_without_the_fleet_chain_says_so(tmp_path: Path):
    """TIPC_MULTI_NODE=local where no descriptor asked for the fleet chain: one message naming the missing file
    and what renders it, before any step (not a `command not found` per entry)."""
    render.init(descriptor.load(SAMPLES[0]), tmp_path)
    proc = subprocess.run(["bash", paths.BASIC_RUNNER, paths.config_rel("bert_sst2"), "lite_train_lite_infer"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "TIPC_MULTI_NODE": "local"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no tipc_fleet.sh beside" in proc.stderr and "fleet: section" in proc.stderr
    assert not (tmp_path / paths.OUTPUT).exists()


def test_the_basic_chains_shell_a_reviewer_reads_is_held_to_its_count():
    """The runner and every file it sources at its top level (the fleet hook's file is the fleet chain's), as
    rendered for bert-sst2; each line under 120 characters (the render test above)."""
    shell = _shell([SAMPLES[0]])
    runner = shell[paths.BASIC_RUNNER]
    top = [line.rsplit("/", 1)[-1].rstrip('"') for line in runner.splitlines() if line.startswith("source ")]
    assert top == ["common_func.sh", "tipc_steps.sh"]
    count = len(runner.splitlines()) + sum(len(shell[f"{paths.TEST_TIPC}/{name}"].splitlines()) for name in top)
    assert count <= BASIC_SHELL_LINES, f"the basic chain's shell grew to {count} lines (ceiling {BASIC_SHELL_LINES})"


def _layouts(steps: str) -> list[str]:
    return re.search(r"^TIPC_LAYOUTS=\((.*)\)$", steps, re.M).group(1).split()


def test_tipc_steps_holds_the_layout_tables_of_the_repositorys_configs_only():
    """bert-sst2 (51-line configs): the standard table alone; the stub repository (a tutorial model beside 51-line
    ones): both; a paddleseg model: its table, written as the standard one's differences, the standard arm only
    its base (no config of the repository is read with it)."""
    sample = _shell([SAMPLES[0]])[paths.STEPS_SH]
    assert _layouts(sample) == ["standard"] and "        tutorial)" not in sample and "paddleseg)" not in sample
    assert _layouts(_shell(REPOSITORY)[paths.STEPS_SH]) == ["standard", "tutorial"]
    names = [t["name"] for t in families.runner_tables()]
    seg = next(n for n in names if n == "paddleseg")
    tables = families.runner_tables_for([seg])
    assert [(t["name"], t["base_only"]) for t in tables] == [("standard", True), ("paddleseg", False)]
    text = _steps_with(tables)
    assert _layouts(text) == ["paddleseg"] and "tipc_use_layout paddleseg\n" in text
    assert "        standard)  # also" in text and "(the base of paddleseg)" in text


def _steps_with(tables: list[dict]) -> str:
    """tipc_steps.sh rendered with the given layout tables (and the sample's model settings)."""
    context = render._runner_context([descriptor.load(SAMPLES[0])])
    return environment().get_template("runner/tipc_steps.sh.j2").render(**{**context,
                                                                           "layouts": render.tables_context(tables)})


_PICK = r"""source "$1/common_func.sh"
source "$1/tipc_steps.sh"
tipc_die() { printf 'refused %s\n' "$TIPC_LAYOUT"; exit 0; }
shift
for file in "$@"; do
    ( tipc_load_config "$file"; tipc_check_layout "$file"; printf 'read %s\n' "$TIPC_LAYOUT" )
done
"""


def _bash_picks(tmp_path: Path, steps: str, texts: list[str]) -> list[str]:
    """The table tipc_check_layout reads each config text with, refused or read (tipc_die replaced to say which)."""
    (tmp_path / "common_func.sh").write_text(_shell([SAMPLES[0]])[paths.COMMON_FUNC])
    (tmp_path / "tipc_steps.sh").write_text(steps)
    files = []
    for i, text in enumerate(texts):
        (tmp_path / f"c{i}.txt").write_text(text)
        files.append(str(tmp_path / f"c{i}.txt"))
    proc = subprocess.run(["bash", "-c", _PICK, "pick", str(tmp_path), *files], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


_CONFIGS = {name: render.layout_text(name, {}) for name in ("standard", "tutorial", "paddleseg")}


@settings(max_examples=fuzz_examples(30), deadline=None)
@given(texts=st.lists(st.tuples(st.sampled_from(sorted(_CONFIGS)), st.integers(0, 60), st.booleans(),
                                st.booleans()), min_size=1, max_size=8))
def test_the_table_a_kept_config_is_read_with_is_the_one_the_runner_picks(tmp_path_factory, texts):
    """families.runner_pick (which decides the tables a kept config brings along) picks what tipc_check_layout
    picks among every table, for configs of each layout with a line deleted, inserted or none changed."""
    configs = []
    for name, at, delete, change in texts:
        lines = _CONFIGS[name].splitlines()
        at %= len(lines)
        if change:
            lines = lines[:at] + lines[at + 1:] if delete else lines[:at] + ["extra:1"] + lines[at:]
        configs.append("\n".join(lines) + "\n")
    tables = families.runner_tables_for([t["name"] for t in families.runner_tables()])
    picked = _bash_picks(tmp_path_factory.mktemp("pick"), _steps_with(tables), configs)
    assert [line.split()[-1] for line in picked] == [families.runner_pick(text, tables)[0] for text in configs]


def test_a_shifted_config_or_one_of_a_layout_not_rendered_still_fails_before_any_step(tmp_path: Path):
    """With the standard table alone, a 51-line config with a line deleted fails at the anchor it misses, and a
    tutorial config (no model of bert-sst2's repository has one) fails naming the line it holds no anchor on."""
    standard = _CONFIGS["standard"].splitlines()
    shifted = "\n".join(standard[:5] + standard[6:]) + "\n"
    steps = _shell([SAMPLES[0]])[paths.STEPS_SH]
    assert _bash_picks(tmp_path, steps, [shifted, _CONFIGS["tutorial"], _CONFIGS["standard"]]) == [
        "refused standard", "refused standard", "read standard"]
    (tmp_path / "c.txt").write_text(_CONFIGS["tutorial"])
    proc = subprocess.run(["bash", "-c", 'source ./common_func.sh; source ./tipc_steps.sh; tipc_load_config c.txt; '
                           'tipc_check_layout c.txt; echo read'], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "read" not in proc.stdout
    assert "c.txt:" in proc.stderr and "expected '" in proc.stderr and "tipcgen lint shows where" in proc.stderr


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
