"""The chain registry and the proof seam (tipcgen/format/chains.py, issue #58 items 1 and 2): a chain kind is one
record and every table of chains is derived from it; a proof is one entry and the references a PASSED verdict
needs are derived from the list. A toy chain registered in a fresh interpreter is listed by the CLI and planned by
suite, and with a render hook of its own rendered by init, run and summarised by run; a chain table or chain
comparison written by hand outside the registry fails here."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT, nodes
from tipcgen.format import chains, paths
from tipcgen.format.words import CHECK, SKIPPED, PASSED, TRAIN
from tipcgen.results.summary import Step, Summary, verdict

PACKAGE = ROOT / "tipcgen"
REGISTRY = "format/chains.py"

# A toy chain, registered before anything else of tipcgen is imported (the tables are derived at import).
TOY = textwrap.dedent('''
    import dataclasses, shutil, sys
    from pathlib import Path
    from tipcgen.format import chains
    from tipcgen.format.words import TRAIN, INFER
    toy = chains.Chain("toy", "train_toy_python.txt", "test_toy.sh", "results_toy.log", "toy (a chain of the test)",
                       every_mode=(TRAIN, INFER), always_trains=True, suite="toy (train_toy_python.txt)")
    chains.CHAINS = (*chains.CHAINS, toy)
    from typer.testing import CliRunner
    from tipcgen.cli import app
    from tipcgen.format import paths
    from tipcgen.results.summary import required_kinds
    from tipcgen.suite import suite
    assert paths.RUNNERS["toy"] == "test_tipc/test_toy.sh", paths.RUNNERS
    assert paths.CONFIG_NAMES["toy"] == "train_toy_python.txt" and paths.RESULT_LOGS["toy"] == "results_toy.log"
    assert required_kinds("toy", "lite_train_lite_infer", set()) == ["train", "infer"]
    cli = CliRunner()
    for command, piece in (("run", "or toy (a chain of the test)."),
                           ("suite", "toy (train_toy_python.txt); dy2static, fleet and toy not in whole_infer.")):
        out = " ".join(cli.invoke(app.app, [command, "--help"], env={"NO_COLOR": "1"}).output.split())
        assert piece in out, out
    group = app._command()
    for command in ("run", "suite"):
        cmd = group.commands[command]
        param = next(p for p in cmd.params if p.name == "chain")
        done = [getattr(i, "value", i) for i in param.shell_complete(cmd.make_context(command, [], resilient_parsing=True), "to")]
        assert done == ["toy"], (command, done)
    repo = Path(sys.argv[1])
    shutil.copytree(sys.argv[2] + "/test_tipc", repo / "test_tipc")
    shutil.copytree(sys.argv[2] + "/sample_models/bert-sst2", repo / "sample_models/bert-sst2")
    basic = repo / "test_tipc/configs/bert_sst2/train_infer_python.txt"
    shutil.copy(basic, basic.with_name("train_toy_python.txt"))
    planned, refused = suite.plan([str(repo)], repo, ["lite_train_lite_infer", "whole_infer"], ["basic", "toy"])
    assert refused == [], refused
    found = sorted((c.chain, c.mode) for c in planned)
    assert ("toy", "lite_train_lite_infer") in found and ("toy", "whole_infer") not in found, found
    print("toy chain listed and planned")
''')


def test_a_toy_chain_registered_once_is_listed_by_the_cli_and_planned_by_suite(tmp_path: Path):
    proc = subprocess.run([sys.executable, "-c", TOY, str(tmp_path / "repo"), str(ROOT)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "toy chain listed and planned" in proc.stdout, proc.stdout + proc.stderr


def test_the_tables_are_the_registrys():
    names = chains.names()
    assert names == ("basic", "paddle2onnx", "benchmark_train", "ptq", "dy2static", "fleet")
    assert tuple(paths.RUNNERS) == tuple(paths.CONFIG_NAMES) == tuple(paths.RESULT_LOGS) == names
    from tipcgen.suite.suite import always_training, chain_of_name

    assert chain_of_name() == {"train_infer_python.txt": "basic",
                               "model_linux_gpu_normal_normal_paddle2onnx_python_linux_cpu.txt": "paddle2onnx",
                               "train_dy2static_python.txt": "dy2static",
                               "train_linux_gpu_fleet_normal_infer_python_linux_gpu_cpu.txt": "fleet"}
    assert always_training() == ("dy2static", "fleet")


@pytest.mark.parametrize("chain, mode, kinds", [
    ("basic", "lite_train_lite_infer", ["train", "eval", "export", "infer"]), ("basic", "whole_infer", ["infer"]),
    ("basic", "klquant_whole_infer", []), ("benchmark_train", "benchmark_train", ["train", "speed"]),
    ("paddle2onnx", "whole_infer", ["convert", "infer"]), ("ptq", "lite_train_lite_infer", ["quant", "infer", "check"]),
    ("dy2static", "whole_train_whole_infer", ["train", "export", "infer", "check"]),
    ("fleet", "lite_train_whole_infer", ["train", "eval", "export", "infer", "check"]), ("fleet", "whole_infer", []),
    ("nochain", "lite_train_lite_infer", [])])
def test_required_kinds_are_the_ones_the_tables_said(chain, mode, kinds):
    from tipcgen.results.summary import required_kinds

    assert required_kinds(chain, mode, set()) == kinds
    assert chains.honours_null_kinds(chain) == (chain in ("basic", "fleet"))


# ---- no chain table outside the registry ----

_TABLES = {"RUNNERS", "CONFIG_NAMES", "RESULT_LOGS"}
# Words spelt as a chain's name that name something else: the PTQ configs' layout names (a descriptor's
# ptq.layout, which import comments), the templates' name of the paddle2onnx section's values (new's context,
# words' section_names).
NOT_CHAINS = {"format/compression.py": {"ptq"}, "configs/import_compression.py": {"ptq"},
              "format/words.py": {"paddle2onnx"}, "new/new.py": {"paddle2onnx"}}


def chain_literals(path: Path, names: set[str], rel: str) -> list[str]:
    """A chain's name spelt where a chain table or a chain comparison is written by hand: a dict key, one of two or
    more chain names in a tuple/list/set, compared with (or `in`) an expression that names a chain, a parameter
    `chain`'s default, or the key of paths' chain tables."""
    found = []

    def hit(node: ast.AST) -> None:
        if isinstance(node, ast.Constant) and node.value in names:
            found.append((node.lineno, f"{rel}:{node.lineno}: {node.value!r}"))

    for node in nodes(path):
        if isinstance(node, ast.Dict):
            for key in node.keys:
                if key is not None:
                    hit(key)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            named = [e for e in node.elts if isinstance(e, ast.Constant) and e.value in names]
            if len(named) > 1:
                for element in named:
                    hit(element)
        elif isinstance(node, ast.Compare) and "chain" in ast.unparse(node).lower():
            for side in (node.left, *node.comparators):
                hit(side)
                if isinstance(side, (ast.Tuple, ast.List, ast.Set)):
                    for element in side.elts:
                        hit(element)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args.posonlyargs + node.args.args
            for argument, default in zip(arguments[len(arguments) - len(node.args.defaults):], node.args.defaults):
                if "chain" in argument.arg:
                    hit(default)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and "chain" in node.target.id \
                and node.value is not None:
            hit(node.value)
        elif isinstance(node, ast.Subscript) and any(t in ast.unparse(node.value) for t in _TABLES):
            hit(node.slice)
        elif isinstance(node, ast.Call) and any(a.arg == "chain" for a in node.keywords):
            for keyword in node.keywords:
                if keyword.arg == "chain":
                    hit(keyword.value)
    return [text for _, text in sorted(found)]


def test_no_chain_table_outside_the_registry():
    names = set(chains.names())
    found = [hit for path in sorted(PACKAGE.rglob("*.py"))
             if (rel := path.relative_to(PACKAGE).as_posix()) != REGISTRY and not rel.startswith("render/shipped/")
             for hit in chain_literals(path, names - NOT_CHAINS.get(rel, set()), rel)]
    assert found == [], "derive it from tipcgen/format/chains.py (CHAINS, or a chain's constant: chains.BASIC, ...)"


def test_the_chain_table_checker_sees_one(tmp_path: Path):
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent('''
        """Says "basic" in a docstring: not a table."""
        TABLE = {"basic": 1, "section": "ptq"}
        BOTH = ("dy2static", "fleet")
        ONE = ("ptq", "kl_quant")
        def f(chain="basic", other="fleet"):
            if chain == "paddle2onnx" or summary.chain in ("ptq",):
                return RUNNERS["benchmark_train"]
            return data.get("dy2static"), run(chain="fleet")
        '''))
    assert chain_literals(probe, set(chains.names()), "probe.py") == [
        "probe.py:3: 'basic'", "probe.py:4: 'dy2static'", "probe.py:4: 'fleet'", "probe.py:6: 'basic'",
        "probe.py:7: 'paddle2onnx'", "probe.py:7: 'ptq'", "probe.py:8: 'benchmark_train'", "probe.py:9: 'fleet'"]


# ---- the proof seam ----

def test_the_runs_own_proofs_are_derived_from_the_proof_list():
    assert chains.run_check_references() == ("trained", "git")
    assert all(proof.kind == CHECK for proof in chains.PROOFS)
    assert len({proof.reference for proof in chains.PROOFS}) == len(chains.PROOFS)
    known = set(chains.names())
    assert all(set(proof.chains or ()) <= known for proof in chains.PROOFS)
    assert chains.by_name()["basic"].proofs == ("trained", "git", "dygraph", "golden", "fixed")
    assert chains.by_name()["ptq"].proofs == ("trained", "git", "fixed")


def test_every_reference_a_runner_records_is_a_proof_and_every_chain_proof_is_recorded():
    written = {m.group(1) for template in (ROOT / "templates").rglob("*.j2")
               for m in re.finditer(r"\b(?:reference|TIPC_CASE\[reference\])=([a-z]\w*)",
                                    template.read_text(encoding="utf-8"))}
    of_chains = {proof.reference for proof in chains.PROOFS if not proof.of_run}
    assert written == of_chains


def _summary(*steps: Step) -> Summary:
    return Summary(model="m", mode="lite_train_lite_infer", config="c", steps=[Step(TRAIN, "t", PASSED), *steps],
                   runner_exit_code=0, required_kinds=[TRAIN])


@pytest.mark.parametrize("reference", ["trained", "git"])
def test_a_skipped_run_proof_fails_the_verdict_and_a_result_check_skip_does_not(reference):
    skipped = Step.flat(CHECK, "proof", SKIPPED, reference=reference, device="cpu")
    assert verdict(_summary(skipped)) == "FAILED" and _summary(skipped).unproven() == [skipped]
    assert verdict(_summary(Step.flat(CHECK, "proof", SKIPPED, reference=reference, device="gpu"))) != "FAILED"
    assert verdict(_summary(Step.flat(CHECK, "golden", SKIPPED, reference="golden", device="cpu"))) != "FAILED"


def test_a_proof_entered_once_is_required_by_the_verdict(monkeypatch):
    skipped = Step.flat(CHECK, "toy proof", SKIPPED, reference="toyproof", device="cpu")
    assert verdict(_summary(skipped)) != "FAILED"  # not a proof of the run: a skipped step of no account
    monkeypatch.setattr(chains, "PROOFS", (*chains.PROOFS, chains.Proof("toyproof", "a test's", "tests", of_run=True)))
    assert verdict(_summary(skipped)) == "FAILED" and _summary(skipped).unproven() == [skipped]
    passed = Step.flat(CHECK, "toy proof", PASSED, reference="toyproof", check={"logs": 1})
    assert verdict(_summary(passed)) == "PASSED (results not checked)"  # a run's proof is no result check



def test_chain_names_and_references_are_typed_words_written_as_the_plain_word():
    """The registry's names (ChainName) and the proofs' references (Reference) are enums (their members as words:
    test_vocabulary): every chain and proof takes its own from them, and a step or summary holding one writes the
    word the files have always held."""
    import json

    from tipcgen.format.words import BENCHMARK_TRAIN

    assert {chain.name for chain in chains.CHAINS} == set(chains.ChainName) == set(chains.names())
    assert all(isinstance(chain.name, chains.ChainName) for chain in chains.CHAINS)
    assert [proof.reference for proof in chains.PROOFS] == list(chains.Reference)
    assert chains.ChainName.BENCHMARK_TRAIN == BENCHMARK_TRAIN and chains.ChainName("ptq") is chains.PTQ
    step = Step.flat(CHECK, "golden", PASSED, reference=chains.GOLDEN)
    assert json.dumps(step.to_dict()["reference"]) == '"golden"'
    assert json.dumps(Summary("m", "whole_infer", "c", chain=chains.PTQ).to_dict()["chain"]) == '"ptq"'


# The toy chain again, this time with a render hook (a module of the test, on sys.path) and a shipped check: `init`
# renders its config, runner and check; `run --chain toy` runs its runner (it sources tipc_steps.sh as every chain's
# does) and summarises it. Nothing of tipcgen is edited: the record, its hook and its runner are the chain.
TOY_HOOK = textwrap.dedent('''
    from tipcgen.format import paths

    RUNNER = """#!/usr/bin/env bash
    set -u
    source "$(dirname "${BASH_SOURCE[0]}")/tipc_steps.sh"
    tipc_open check "CONFIG MODE" "$@"
    tipc_begin "$(slot_value model_name)" "$(slot_value python)"
    tipc_start_run "./test_tipc/output/$TIPC_MODEL/toy/$MODE" results_toy.log "toy $MODE"
    tipc_step train toy_train "$LOG_PATH/toy_train.log" "" -- "$PYTHON" -c "print('trained')"
    tipc_step infer toy_infer "$LOG_PATH/toy_infer.log" "" -- "$PYTHON" -c "print('inferred')"
    tipc_finish
    """


    def files(job):
        out = {paths.config_rel(d.model_name, "toy"): job.files[paths.config_rel(d.model_name)] for d in job.models}
        if out:
            out[paths.RUNNERS["toy"]] = RUNNER
        return out
''')

TOY_RUN = textwrap.dedent('''
    import json, os, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])  # toy_hook.py
    from tipcgen.format import chains
    from tipcgen.format.words import TRAIN, INFER
    toy = chains.Chain("toy", "train_toy_python.txt", "test_toy.sh", "results_toy.log", "toy (a chain of the test)",
                       every_mode=(TRAIN, INFER), always_trains=True, render="toy_hook", shipped=(chains.CHECK_FLEET,))
    chains.CHAINS = (*chains.CHAINS, toy)
    from typer.testing import CliRunner
    from tipcgen.cli import app
    repo = Path(sys.argv[1])
    os.chdir(repo)
    cli = CliRunner()
    init = cli.invoke(app.app, ["init", "stub/tipc.yaml"], env={"NO_COLOR": "1"})
    assert init.exit_code == 0, init.output
    for rel in ("test_tipc/configs/stub_model/train_toy_python.txt", "test_tipc/test_toy.sh", "test_tipc/check_fleet.py"):
        assert (repo / rel).is_file(), (rel, init.output)
    run = cli.invoke(app.app, ["run", "--chain", "toy", "--mode", "lite_train_lite_infer"], env={"NO_COLOR": "1"})
    run_dir = repo / "test_tipc/output/stub_model/toy/lite_train_lite_infer"
    summary = json.loads((run_dir / "summary.json").read_text())
    steps = {(s["kind"], s["name"]): s["status"] for s in summary["steps"]}
    assert summary["chain"] == "toy" and steps[("train", "toy_train")] == steps[("infer", "toy_infer")] == "passed", steps
    assert (run_dir / "results_toy.log").is_file() and (run_dir / "junit.xml").is_file()
    assert summary["required_kinds"] == ["train", "infer"] and summary["ok"] == (run.exit_code == 0), summary
    print("toy chain rendered, run and summarised:", summary["ok"], summary["problems"], run.output[-600:])
''')


def test_a_toy_chain_with_a_render_hook_is_rendered_run_and_summarised(tmp_path: Path):
    """#58 item 1: a chain kind is one registration: its record (format/chains.py's fields), the hook its record
    names (render/hook.py) and its runner; init renders it beside the others, run runs and summarises it."""
    from conftest import make_stub_repo

    repo = make_stub_repo(tmp_path / "repo", init=False)
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "toy_hook.py").write_text(TOY_HOOK)
    proc = subprocess.run([sys.executable, "-c", TOY_RUN, str(repo), str(tmp_path / "hooks")], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "toy chain rendered, run and summarised" in proc.stdout, proc.stdout + proc.stderr
