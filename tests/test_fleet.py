"""The fleet configs and their check, without paddle (docs/CHAINS.md, "The fleet chain").

The corpora's 36 multi-machine configs (`*fleet*`, gpu_list `192.168.0.1,192.168.0.2;0,1`) lint without errors and
come back byte for byte through import and init; a descriptor's `fleet:` section renders the model's fleet config
(gpu_list naming machines, the device at its CPU value) and is validated; `check_fleet.py` holds every rank's start,
rank 0's checkpoint against the one-process run's and, where every rank logs, the ranks' mean loss against the
one-process run's, naming the node, rank, parameter or step. The real chain: tests/chains/test_fleet_chain.py.
"""
from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np

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
from tipcgen.render import repository, shipped

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
    files = repository.render_repository([desc])
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


def _nodes(tmp_path: Path, losses: list[list[float]], procs: int = 2, world: int | None = None, skip: int | None = None,
           only: int | None = None):
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
            logged = losses[rank] if only is None or rank == only else []
            (folder / f"workerlog.{local}").write_text(f"rank {rank}\n" + "".join(
                f"global_step: {i + 1}, loss: {v}\n" for i, v in enumerate(logged)))
    return args


def _check(tmp_path, node_args, single: list[float], procs: int = 2, checkpoints: tuple = ()):
    (tmp_path / "single.log").write_text("".join(f"global_step: {i + 1}, loss: {v}\n" for i, v in enumerate(single)))
    extra = [f"--checkpoint={checkpoints[0]}", f"--single-checkpoint={checkpoints[1]}"] if checkpoints else []
    return subprocess.run([sys.executable, str(CHECK), *node_args, f"--procs={procs}", f"--single={tmp_path / 'single.log'}",
                           f"--out={tmp_path / 'out.json'}", *extra], capture_output=True, text=True)


def _save(path: Path, state) -> Path:
    """A .pdparams as paddle.save writes a state dict: a pickled dict of numpy arrays (protocol 4)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(state, protocol=4))
    return path


STATE = {"fc1.weight": np.linspace(-1, 1, 12, dtype="float32").reshape(3, 4), "fc1.bias": np.zeros(4, "float32"),
         "fc2.weight": np.ones((4, 2), "float32")}


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


def test_a_training_that_logs_on_rank_0_only_is_proved_by_its_checkpoint(tmp_path: Path) -> None:
    rank0 = _save(tmp_path / "out" / "model.pdparams", STATE)
    single = _save(tmp_path / "out" / "single" / "model.pdparams", {k: v + 1e-7 for k, v in STATE.items()})
    nodes = _nodes(tmp_path, RANKS, only=0)  # rank 0's own share's losses: not the one-process run's
    proc = _check(tmp_path, nodes, [1.0, 0.75], checkpoints=(tmp_path / "out" / "model", tmp_path / "out" / "single" / "model"))
    assert proc.returncode == 0, proc.stdout
    assert "losses: not compared: rank(s) 1, 2, 3 logged no loss" in proc.stdout
    assert f"checkpoints: rank 0's {rank0} and the one-process run's {single}: 3 parameters equal within" in proc.stdout
    # Without the checkpoints nothing proves it: it fails, saying what would.
    proc = _check(tmp_path, nodes, [1.0, 0.75])
    assert proc.returncode == 1 and "nothing proves the ranks trained as one" in proc.stdout, proc.stdout


def test_ranks_that_each_train_alone_fail_naming_the_parameter(tmp_path: Path) -> None:
    _save(tmp_path / "a" / "model.pdparams", {**STATE, "fc1.bias": np.full(4, 0.01, "float32")})
    _save(tmp_path / "b" / "model.pdparams", STATE)
    proc = _check(tmp_path, _nodes(tmp_path, RANKS, only=0), [1.0, 0.75], checkpoints=(tmp_path / "a", tmp_path / "b"))
    assert proc.returncode == 1
    assert "parameter fc1.bias [4] of rank 0's checkpoint" in proc.stdout and "4 of 4 values differ" in proc.stdout
    assert "are their gradients averaged" in proc.stdout


def test_a_checkpoint_that_asks_for_code_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    class Evil:
        def __reduce__(self):
            return (open, (str(tmp_path / "ran"), "w"))

    _save(tmp_path / "a" / "model.pdparams", {"fc1.weight": Evil()})
    _save(tmp_path / "b" / "model.pdparams", STATE)
    proc = _check(tmp_path, _nodes(tmp_path, RANKS), [1.0, 0.75], checkpoints=(tmp_path / "a", tmp_path / "b"))
    assert proc.returncode == 1 and "only numpy arrays in a dict are read" in proc.stdout, proc.stdout
    assert not (tmp_path / "ran").exists()


@settings(max_examples=fuzz_examples(80), deadline=None)
@given(data=st.data(), wrapped=st.booleans(), nested=st.booleans(), logs=st.sampled_from(["all", "rank 0", "none"]))
def test_the_checkpoint_and_loss_proofs_over_generated_trainings(tmp_path_factory, data, wrapped, nested, logs) -> None:
    """Any state dict (DataParallel's `_layers.` names or not, nested under a key or not), rank 0's either the
    one-process run's within the tolerance or off at one value; ranks logging all, rank 0 only, or none."""
    tmp_path = tmp_path_factory.mktemp("gen")
    shapes = data.draw(st.lists(st.lists(st.integers(1, 4), min_size=1, max_size=3), min_size=1, max_size=4))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    reference = {f"layer{i}.w": rng.standard_normal(shape).astype("float32") for i, shape in enumerate(shapes)}
    mine = {k: v + rng.uniform(-4e-6, 4e-6, v.shape).astype("float32") for k, v in reference.items()}
    off = data.draw(st.one_of(st.none(), st.sampled_from(sorted(reference))))
    if off is not None:
        mine[off].reshape(-1)[data.draw(st.integers(0, mine[off].size - 1))] += data.draw(st.floats(1e-3, 10.0))
    if wrapped:
        mine = {f"_layers.{k}": v for k, v in mine.items()}
    if nested:
        mine = {"epoch": 3, "state_dict": mine}
    _save(tmp_path / "multi" / "model.pdparams", mine)
    _save(tmp_path / "single" / "model.pdparams", {"epoch": 3, "state_dict": reference} if nested else reference)
    nodes = _nodes(tmp_path, RANKS, only={"all": None, "rank 0": 0, "none": -1}[logs])
    proc = _check(tmp_path, nodes, [1.0, 0.75], checkpoints=(tmp_path / "multi" / "model", tmp_path / "single" / "model"))
    if off is None:
        assert proc.returncode == 0, proc.stdout
        assert ("losses: 2 logged steps" in proc.stdout) == (logs == "all")
        assert f"{len(reference)} parameters equal within" in proc.stdout
    else:
        assert proc.returncode == 1 and f"parameter {'state_dict.' if nested else ''}{off} " in proc.stdout, proc.stdout


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
    text = repository.render_repository([desc])[paths.config_rel(desc.model_name, "fleet")]
    assert f"gpu_list:{entry}\n" in text


def _top_level(entry: str, section: str = ""):
    """The fixture's descriptor with its own gpu_list set to one entry, and no fleet section unless given."""
    text = (FIXTURE / "tipc.yaml").read_text(encoding="utf-8")
    text = text[: text.index("fleet:")].replace('gpu_list: ["-1"]', f"gpu_list: [{json.dumps(entry)}]")
    return descriptor.load_text(text + section, str(FIXTURE / "tipc.yaml"), FIXTURE)


def test_a_gpu_list_entry_naming_machines_renders_the_fleet_chain() -> None:
    # The form tipcgen's own hints offer: it renders the fleet chain, section or not.
    files = repository.render_repository([_top_level("127.0.0.2,127.0.0.3;-1,-1")])
    assert "gpu_list:127.0.0.2,127.0.0.3;-1,-1\n" in files[paths.config_rel("dy2static_mlp", "fleet")]
    assert paths.RUNNERS["fleet"] in files and paths.shipped_rel(paths.CHECK_FLEET) in files
    # A section without its own gpu_list takes the descriptor's; one with its own keeps it.
    assert _top_level("10.0.0.1,10.0.0.2;0,1", "fleet: {}\n").fleet.gpu_list == "10.0.0.1,10.0.0.2;0,1"
    assert _top_level("10.0.0.1,10.0.0.2;0,1", "fleet: {gpu_list: '127.0.0.2;-1'}\n").fleet.gpu_list == "127.0.0.2;-1"
    # Upstream's placeholders (3 corpus configs) stay the basic config's, for its cluster mode: no fleet chain.
    assert _top_level("xx.xx.xx.xx,yy.yy.yy.yy;0,1").fleet is None


@pytest.mark.parametrize("entry, what", [
    ("127.0.0.2,127.0.0.2;-1", "machine 127.0.0.2 is named twice"),
    ("127.0.0.2,1270.0.0.3;-1", "the fleet chain needs IPv4 addresses"),
    ("127.0.0.2;cpu", "is not a device entry"),
])
def test_a_gpu_list_entry_naming_machines_the_fleet_chain_cannot_run_is_refused_naming_fleet(entry: str, what: str) -> None:
    with pytest.raises(DescriptorError) as caught:
        _top_level(entry)
    text = str(caught.value)
    assert "tipc.yaml:5: gpu_list: entry" in text and what in text and "fleet: {gpu_list: '127.0.0.2,127.0.0.3;-1,-1'}" in text


@settings(max_examples=fuzz_examples(120), deadline=None)
@given(entry=st.lists(st.sampled_from(["127.0.0.2", "127.0.0.3", "192.168.0.1", "10.0.0.1", "", "a.b.c.d", "xx.xx.xx.xx",
                                       "1.2.3.4567"]), min_size=1, max_size=4).map(",".join).flatmap(
    lambda ips: st.sampled_from([";-1", ";-1,-1", ";0,1", ";", ";x", ""]).map(lambda d: ips + d)))
def test_any_gpu_list_entry_naming_machines_renders_the_fleet_chain_or_is_refused_naming_fleet(entry: str) -> None:
    try:
        desc = _top_level(entry)
    except DescriptorError as exc:
        assert "tipc.yaml:5: gpu_list: " in str(exc)
        assert ";" not in entry or "fleet: {gpu_list:" in str(exc)  # machines: the hint names the fleet section
        return
    ips = entry.split(";")[0].split(",")
    if desc.fleet is None:  # a device entry, or upstream's placeholder names (the basic config's cluster mode)
        assert ";" not in entry or not all(ip.replace(".", "").isdigit() for ip in ips)
        return
    assert desc.fleet.gpu_list == entry and len(set(ips)) == len(ips)
    assert f"gpu_list:{entry}\n" in repository.render_repository([desc])[paths.config_rel(desc.model_name, "fleet")]
