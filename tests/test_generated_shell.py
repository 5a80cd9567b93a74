"""The generated shell reads top to bottom (#37 item 5, #58 item 3): common_func.sh holds upstream's helpers alone
(for the repository's other scripts: no tipcgen script sources it), the slot readers and step machinery are in
tipc_steps.sh, the checks before any step in tipc_preflight.py (with the tables of tipc_layouts.json: the layouts of
the repository's configs only), each chain's own shell is its own file (the fleet chain's simulated machines in
tipc_fleet.sh, whose hook the basic runner has only in that chain), and every line of every generated script is
under 120 characters, for both samples and every fixture descriptor (each alone, and the stub models as one
repository). The basic chain's shell a reviewer reads (its runner and what it sources) is held to its line count."""
from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, fuzz_examples
from tipcgen import descriptor
from tipcgen.configs.existing import defined_functions
from tipcgen.format import families, paths
from tipcgen.render import repository
from tipcgen.render.shipped import tipc_preflight

MAX_LINE, MAX_COMMON_FUNC = 119, 80
# The lines of the basic chain's shell a reviewer reads for bert-sst2 (the runner and tipc_steps.sh), a ceiling a
# change must justify: 1,629 before #58 item 3 moved the fleet chain's simulation to tipc_fleet.sh and rendered only
# the layout tables a repository's configs use (1,484); then the checks before any step moved to tipc_preflight.py,
# upstream's helpers out of what the runner sources, the fleet hook out of a runner without that chain, the stop
# signal's grace to timeout's --kill-after (973); then the opening (mode, config lines, model name, interpreter, the
# model's settings as tables) moved to tipc_preflight.py too: at most 900, #58's bound (docs/ARCHITECTURE.md, "The
# generated shell").
BASIC_SHELL_LINES = 900
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
    files = repository.render_repository([descriptor.load(path) for path in group])
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


def test_common_func_holds_upstreams_helpers_only_and_tipc_steps_the_readers_and_steps():
    """What a reviewer finds where: upstream's helpers in common_func.sh (for the repository's other scripts), the
    readers and every step in tipc_steps.sh, the config and run folder checks in tipc_preflight.py, each function
    defined once."""
    shell = _shell([SAMPLES[0]])
    common, steps = defined_functions(shell[paths.COMMON_FUNC]), defined_functions(shell[paths.STEPS_SH])
    assert common == {"func_parser_key", "func_parser_value", "func_parser_value_lite", "func_parser_params",
                      "func_set_params", "func_set_amp_params", "status_check"}
    assert {"slot_value", "slot_key", "section_value", "tipc_add_slots", "tipc_step", "tipc_record", "tipc_open",
            "tipc_read_table", "tipc_on_interrupt", "tipc_start_run", "tipc_finish"} <= steps
    assert {"check", "check_mode", "check_keys", "check_shapes", "check_model", "no_links", "check_lock",
            "keep_previous", "settings"} <= set(vars(tipc_preflight))
    assert common & steps == set()


@pytest.mark.parametrize("group", RENDERS, ids=_id)
def test_every_generated_script_sources_tipc_steps_and_not_upstreams_helpers(group: list[str]):
    for rel, text in _shell(group).items():
        if rel not in (paths.COMMON_FUNC, paths.STEPS_SH, paths.FLEET_SH):
            sources = [line for line in text.splitlines() if line.startswith("source ")]
            assert [s.rsplit("/", 1)[-1] for s in sources] == ['tipc_steps.sh"'], rel


def _sourced(text: str) -> list[str]:
    """The files a script sources, by name, in order (at its top level or inside a block)."""
    return [line.rsplit("/", 1)[-1].rstrip('"') for line in text.splitlines() if line.lstrip().startswith("source ")]


def test_the_fleet_chains_machines_are_its_own_file_sourced_only_in_that_chain():
    """The basic runner of a repository with the fleet chain holds a hook (FLEET_HOSTS, and tipc_fleet.sh sourced
    under TIPC_MULTI_NODE=local, which the fleet runner sets); the simulation itself (fleet_nodes, fleet_train,
    fleet_check) is tipc_fleet.sh. Without the chain, neither: the runner refuses TIPC_MULTI_NODE=local."""
    plain, fleet = _shell([SAMPLES[0]]), _shell(FLEET)
    assert paths.FLEET_SH not in plain and paths.RUNNERS["fleet"] not in plain
    assert {"fleet_nodes", "fleet_train", "fleet_check"} <= defined_functions(fleet[paths.FLEET_SH])
    for shell in (plain, fleet):
        runner = shell[paths.BASIC_RUNNER]
        assert not defined_functions(runner) & {"fleet_nodes", "fleet_train", "fleet_check"}
    runner = fleet[paths.BASIC_RUNNER]
    hook = runner[runner.index('if [ "${TIPC_MULTI_NODE:-}" = local ]; then'):]
    assert hook.index('    source "$(dirname "${BASH_SOURCE[0]}")/tipc_fleet.sh"') < hook.index("\nfi\n")
    assert _sourced(runner) == ["tipc_steps.sh", "tipc_fleet.sh"] and _sourced(plain[paths.BASIC_RUNNER]) == ["tipc_steps.sh"]
    assert "FLEET" not in plain[paths.BASIC_RUNNER] and "fleet_" not in plain[paths.BASIC_RUNNER]
    assert "TIPC_MULTI_NODE=local" in fleet[paths.RUNNERS["fleet"]]


def test_a_basic_runner_told_to_simulate_machines_without_the_fleet_chain_says_so(tmp_path: Path):
    """TIPC_MULTI_NODE=local where no descriptor asked for the fleet chain: one message naming the missing file
    and what renders it, before any step (not a `command not found` per entry)."""
    repository.init(descriptor.load(SAMPLES[0]), tmp_path)
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
    assert top == ["tipc_steps.sh"]
    count = len(runner.splitlines()) + sum(len(shell[f"{paths.TEST_TIPC}/{name}"].splitlines()) for name in top)
    assert count <= BASIC_SHELL_LINES, f"the basic chain's shell grew to {count} lines (ceiling {BASIC_SHELL_LINES})"


def _tables(group: list[str]) -> dict:
    return json.loads(repository.render_repository([descriptor.load(path) for path in group])[paths.LAYOUTS_JSON])


def test_tipc_layouts_holds_the_layout_tables_of_the_repositorys_configs_only():
    """bert-sst2 (51-line configs): the standard table alone (it names the families whose tables are the same); the
    stub repository (a tutorial model beside 51-line ones): both; each model's keys as its descriptor rendered them."""
    sample = _tables([SAMPLES[0]])
    assert [t["name"] for t in sample["layouts"]] == ["standard"] and "paddlegan" in sample["layouts"][0]["also"]
    assert [t["name"] for t in _tables(REPOSITORY)["layouts"]] == ["standard", "tutorial"]
    assert sample["models"]["bert_sst2"][:2] == [[1, "model_name"], [2, "python"]]
    assert sample["layouts"][0]["slots"]["model_name"] == 1 and sample["model_slot"] == "model_name"


_PICK = r"""source "$1/tipc_steps.sh"
shift
for file in "$@"; do
    ( tipc_read_table check "$file" lite_train_lite_infer lite_train_lite_infer; printf 'read %s\n' "$TIPC_LAYOUT" ) 2> /dev/null \
        || printf 'refused\n'
done
"""


def _bash_picks(tmp_path: Path, tables: dict, texts: list[str]) -> list[str]:
    """What the runner makes of each config text with the given tables: read (with which table) or refused."""
    shell = _shell([SAMPLES[0]])
    (tmp_path / "tipc_steps.sh").write_text(shell[paths.STEPS_SH])
    (tmp_path / paths.TIPC_PREFLIGHT).write_text(tipc_preflight.__loader__.get_source(tipc_preflight.__name__))
    (tmp_path / "tipc_layouts.json").write_text(json.dumps(tables))
    files = []
    for i, text in enumerate(texts):
        (tmp_path / f"c{i}.txt").write_text(text)
        files.append(str(tmp_path / f"c{i}.txt"))
    proc = subprocess.run(["bash", "-c", _PICK, "pick", str(tmp_path), *files], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "TIPC_PYTHON": sys.executable})  # the configs' python: lines
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


_CONFIGS = {name: repository.layout_text(name, {}) for name in ("standard", "tutorial", "paddleseg")}


@settings(max_examples=fuzz_examples(30), deadline=None)
@given(texts=st.lists(st.tuples(st.sampled_from(sorted(_CONFIGS)), st.integers(0, 60), st.booleans(),
                                st.booleans()), min_size=1, max_size=6))
def test_a_config_the_runner_reads_is_read_with_the_table_it_was_meant_for(tmp_path_factory, texts):
    """The table a config is checked against is the one whose anchors it holds longest (tipc_preflight.pick, which
    render uses too, to bring the table of a kept config along): configs of each layout with a line deleted,
    inserted or none changed are read with their own table when unchanged, and refused when shifted."""
    configs, changed = [], []
    for name, at, delete, change in texts:
        lines = _CONFIGS[name].splitlines()
        at %= len(lines)
        if change:
            lines = lines[:at] + lines[at + 1:] if delete else lines[:at] + ["extra:1"] + lines[at:]
        configs.append("\n".join(lines) + "\n")
        changed.append(change)
    tables = {**_tables([SAMPLES[0]]), "models": {}, "layouts": families.runner_tables()}
    picked = _bash_picks(tmp_path_factory.mktemp("pick"), tables, configs)
    for (name, *_), change, line, text in zip(texts, changed, picked, configs):
        table, _ = tipc_preflight.pick(tipc_preflight.non_blank(text)[0], tables["layouts"])
        assert line in ("refused", f"read {table['name']}"), (line, table["name"])
        if not change:
            assert line == f"read {table['name']}" and name in (table["name"], *table["also"]), (name, line)


def test_a_shifted_config_or_one_of_a_layout_not_rendered_still_fails_before_any_step(tmp_path: Path):
    """With the standard table alone, a 51-line config with a line deleted fails at the anchor it misses, and a
    tutorial config (no model of bert-sst2's repository has one) fails naming the line it holds no anchor on."""
    standard = _CONFIGS["standard"].splitlines()
    shifted = "\n".join(standard[:5] + standard[6:]) + "\n"
    tables = _tables([SAMPLES[0]])
    assert _bash_picks(tmp_path, tables, [shifted, _CONFIGS["tutorial"], _CONFIGS["standard"]]) == [
        "refused", "refused", "read standard"]
    (tmp_path / "c.txt").write_text(_CONFIGS["tutorial"])
    proc = subprocess.run(["bash", "-c", 'source ./tipc_steps.sh; tipc_read_table check c.txt lite_train_lite_infer lite_train_lite_infer; '
                           'echo read'], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "read" not in proc.stdout
    assert "c.txt:" in proc.stderr and "expected '" in proc.stderr and "tipcgen lint shows where" in proc.stderr


def test_the_runner_reads_the_table_as_words_never_as_code(tmp_path: Path):
    """A table line that is not a number where one is expected (a tampered tipc_preflight.py, say) stops the runner
    before it could be used as an array index (which bash would evaluate)."""
    (tmp_path / "tipc_steps.sh").write_text(_shell([SAMPLES[0]])[paths.STEPS_SH])
    (tmp_path / paths.TIPC_PREFLIGHT).write_text("print('layout standard 51')\nprint('slot python $(touch pwned)')\n"
                                                 "print('end - 0')\n")
    proc = subprocess.run(["bash", "-c", "source ./tipc_steps.sh; tipc_read_table check c.txt; echo read"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "internal:" in proc.stderr and not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("answer", ["", "print('line 1 a:b')", "print('end - 0 ')", "import sys; sys.exit(0)"])
def test_an_interpreter_that_does_not_answer_the_checks_stops_the_runner(tmp_path: Path, answer: str):
    """TIPC_PYTHON names the interpreter the checks run under too: one that exits 0 without running them (a stub, a
    wrapper that drops its arguments) or an answer cut short must not pass for a config read and checked."""
    (tmp_path / "tipc_steps.sh").write_text(_shell([SAMPLES[0]])[paths.STEPS_SH])
    (tmp_path / paths.TIPC_PREFLIGHT).write_text(answer + "\n")
    for command in ("open", "check", "start"):
        proc = subprocess.run(["bash", "-c", f"source ./tipc_steps.sh; tipc_read_table {command} c.txt; echo read"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and "no answer from" in proc.stderr and "TIPC_PYTHON" in proc.stderr, proc.stderr
        assert proc.stdout == ""


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


_FIELDS_SET = re.compile(r"\btipc_(?:at|case) +([^;|&]*)|\bTIPC_(?:CASE|AT)\[([a-z_]+)\]=")


@pytest.mark.parametrize("group", RENDERS, ids=_id)
def test_every_step_field_a_script_sets_is_one_its_records_hold(group: list[str]):
    """tipc_at, tipc_case and a TIPC_CASE[key]= set a step's configuration by key; tipc_record_fields writes the keys
    of TIPC_FIELDS (paths.STEP_FIELDS) alone: a key outside them would be dropped from every record without a word.
    The shell does not check it as it runs (it would cost a line a call): every call of every script is read here."""
    found = 0
    for rel, text in _shell(group).items():
        for line in text.replace("\\\n", " ").splitlines():  # a call's continued lines as one
            if line.lstrip().startswith("#"):
                continue
            for args, key in _FIELDS_SET.findall(line.split(" # ")[0]):
                keys = [key] if key else [word.split("=", 1)[0] for word in args.split() if "=" in word]
                assert set(keys) <= set(paths.STEP_FIELDS), f"{rel}: {line.strip()}"
                found += len(keys)
    assert found > 0
