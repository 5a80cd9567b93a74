"""The fleet configs and their check, without paddle (docs/CHAINS.md, "The fleet chain").

The corpora's 36 multi-machine configs (`*fleet*`, gpu_list `192.168.0.1,192.168.0.2;0,1`) lint without errors and
come back byte for byte through import and init; a descriptor's `fleet:` section renders the model's fleet config
(gpu_list naming machines, the device at its CPU value) and is validated; `check_fleet.py` holds every rank's start
and the ranks' mean loss against the one-process run, naming the node, rank or step. The real chain:
tests/chains/test_fleet_chain.py.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, fuzz_examples
from layout_text import round_trip
from tipcgen import descriptor
from tipcgen.configs.lint import lint_text
from tipcgen.core.errors import DescriptorError
from tipcgen.format import paths
from tipcgen.format.config import TipcConfig
from tipcgen.render import render, shipped

SHARED = ROOT.parent / "shared"
FILES = sorted(p for corpus in ("tipc-corpus", "tipc-corpus-2", "tipc-corpus-3") if (SHARED / corpus).is_dir()
               for p in (SHARED / corpus).rglob("*fleet*.txt"))
FIXTURE = ROOT / "tests" / "fixtures" / "dy2static_mlp"
CHECK = shipped.HERE / paths.CHECK_FLEET


@pytest.mark.skipif(len(FILES) != 36, reason=f"the corpora not found under {SHARED}")
def test_the_corpus_fleet_configs_lint_and_come_back_byte_for_byte() -> None:
    for path in FILES:
        text = path.read_bytes().decode("utf-8")
        assert [f for f in lint_text(text, str(path)) if f.severity == "error"] == [], path.name
        assert round_trip(text) == text, path.name
    assert sum(";" in (TipcConfig.parse(p.read_text()).logical_lines()[3].value or "") for p in FILES) >= 30


def _descriptor(section: str):
    text = (FIXTURE / "tipc.yaml").read_text(encoding="utf-8")
    return descriptor.load_text(text[: text.index("fleet:")] + section, str(FIXTURE / "tipc.yaml"), FIXTURE)


def test_the_fleet_config_is_the_basic_one_with_machines() -> None:
    desc = _descriptor("fleet: {gpu_list: '192.168.0.1,192.168.0.2;0,1'}\n")
    files = render.render_repository([desc])
    basic = files[paths.config_rel(desc.model_name)].splitlines()
    fleet = files[paths.config_rel(desc.model_name, "fleet")].splitlines()
    assert [i for i, (a, b) in enumerate(zip(basic, fleet)) if a != b] == [3] and len(basic) == len(fleet)
    assert fleet[3] == "gpu_list:192.168.0.1,192.168.0.2;0,1"
    runner = files[paths.RUNNERS["fleet"]]
    assert "TIPC_MULTI_NODE=local" in runner and "dy2static_mlp) TIPC_FLEET_ATOL=1e-05 TIPC_FLEET_RTOL=1e-05" in runner


@pytest.mark.parametrize("section, field", [
    ("fleet: {gpu_list: '127.0.0.2,127.0.0.3'}\n", "fleet.gpu_list"),        # no devices
    ("fleet: {gpu_list: '127.0.0.2,127.0.0.2;-1'}\n", "fleet.gpu_list"),     # one machine twice
    ("fleet: {gpu_list: 'host-a,host-b;-1'}\n", "fleet.gpu_list"),           # not addresses
    ("fleet: {tolerance: {atol: -1}}\n", "fleet.tolerance.atol"),
    ("fleet: {nodes: 2}\n", "fleet.nodes"),
    ("fleet: 2\n", "fleet"),
])
def test_a_bad_fleet_section_names_its_field(section: str, field: str) -> None:
    with pytest.raises(DescriptorError) as caught:
        _descriptor(section)
    assert field in str(caught.value)


def _nodes(tmp_path: Path, losses: list[list[float]], procs: int = 2, world: int | None = None, skip: int | None = None):
    args = []
    for node in range(len(losses) // procs):
        folder = tmp_path / f"node_{node}"
        folder.mkdir()
        args.append(f"--node={folder}")
        for local in range(procs):
            rank = node * procs + local
            if rank == skip:
                continue
            (folder / f"envlog.{local}").write_text(f"HOME=/x\nPADDLE_TRAINER_ID={rank}\nPADDLE_TRAINERS_NUM={world or len(losses)}\n"
                                                    f"PADDLE_CURRENT_ENDPOINT=127.0.0.{node + 2}:6070\n")
            (folder / f"workerlog.{local}").write_text("".join(f"global_step: {i + 1}, loss: {v}\n" for i, v in enumerate(losses[rank])))
    return args


def _check(tmp_path, node_args, single: list[float], procs: int = 2):
    (tmp_path / "single.log").write_text("".join(f"global_step: {i + 1}, loss: {v}\n" for i, v in enumerate(single)))
    return subprocess.run([sys.executable, str(CHECK), *node_args, f"--procs={procs}", f"--single={tmp_path / 'single.log'}",
                           f"--out={tmp_path / 'out.json'}"], capture_output=True, text=True)


RANKS = [[1.0, 0.8], [1.2, 0.6], [0.9, 0.7], [0.9, 0.9]]  # means 1.0, 0.75


def test_the_mean_over_ranks_is_the_one_process_run(tmp_path: Path) -> None:
    proc = _check(tmp_path, _nodes(tmp_path, RANKS), [1.0, 0.75])
    assert proc.returncode == 0, proc.stdout
    assert "node 1: ranks 2, 3 of world size 4 started (127.0.0.3:6070)" in proc.stdout
    assert set(json.loads((tmp_path / "out.json").read_text())) == {"node 0 rank 0", "node 0 rank 1", "node 1 rank 2",
                                                                   "node 1 rank 3", "one process"}


@pytest.mark.parametrize("kwargs, single, expected", [
    ({}, [1.0, 0.70], "at step 2 the mean loss over the 4 ranks is 0.75, the one-process run's 0.7"),
    ({"skip": 3}, [1.0, 0.75], "node 1: rank 3 never started"),
    ({"world": 8}, [1.0, 0.75], "node 0: local rank 0 started as rank 0 of 8, not rank 0 of 4"),
    ({}, [1.0], "logged 2 losses, the one-process run 1"),
])
def test_what_does_not_hold_is_named(tmp_path: Path, kwargs, single, expected) -> None:
    proc = _check(tmp_path, _nodes(tmp_path, RANKS, **kwargs), single)
    assert proc.returncode == 1 and expected in proc.stdout, proc.stdout


def test_suite_plans_the_fleet_and_dy2static_chains_in_their_train_modes(tmp_path: Path) -> None:
    from conftest import tipcgen
    from tipcgen.suite import suite
    import shutil

    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    tipcgen("init", "tipc.yaml", cwd=repo, check=True)
    modes = ["lite_train_lite_infer", "whole_infer"]
    planned, refused = suite.plan([str(repo)], repo, modes, ["basic", "dy2static", "fleet"])
    assert refused == []
    assert sorted((c.chain, c.mode) for c in planned) == [
        ("basic", "lite_train_lite_infer"), ("basic", "whole_infer"), ("dy2static", "lite_train_lite_infer"),
        ("fleet", "lite_train_lite_infer")]
    planned, _ = suite.plan([str(repo)], repo, modes, ["basic"])
    assert {c.chain for c in planned} == {"basic"}  # the other configs are left out, not refused


@settings(max_examples=fuzz_examples(120), deadline=None)
@given(entry=st.one_of(st.text(alphabet="0123456789.,;-1 ab:", max_size=40),
                       st.lists(st.sampled_from(["127.0.0.2", "127.0.0.3", "192.168.0.1", "10.0.0.1", "", "a.b.c.d"]),
                                min_size=1, max_size=4).map(",".join).flatmap(
                           lambda ips: st.sampled_from([";-1", ";-1,-1", ";0,1", ";", ";x", ""]).map(lambda d: ips + d))))
def test_any_machine_list_is_rendered_or_refused_naming_the_field(entry: str) -> None:
    try:
        desc = _descriptor(f"fleet: {{gpu_list: {json.dumps(entry)}}}\n")
    except DescriptorError as exc:
        assert "fleet.gpu_list" in str(exc)
        return
    ips, _, devices = entry.partition(";")
    assert len(set(ips.split(","))) == len(ips.split(",")) and devices and all(
        d == "-1" or d.isdigit() for d in devices.split(","))
    text = render.render_repository([desc])[paths.config_rel(desc.model_name, "fleet")]
    assert f"gpu_list:{entry}\n" in text
