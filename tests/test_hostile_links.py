"""A repository can commit a symbolic link where tipcgen writes or deletes (issue 34: `test_tipc/output -> ~`,
`.tipcgen -> ~/x`): every command refuses it, naming the link and where it points, exit 2, before anything
runs or is written, and nothing outside the repository is created, changed or deleted.

One repository (the stub project, rendered and run once: the stub chain needs no paddle) serves every case:
each case swaps one component of a path a command writes under for a link (to a folder outside, to a file,
dangling, a chain of links, a folder inside the repository), runs the command, and puts the component back.
A generator (hypothesis) draws the command, the component and the kind of link; fixed cases name the ones
the hostile probe found.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import STUB, chain_env, fuzz_examples, make_stub_repo, tipcgen

MODEL, MODE = "stub_model", "lite_train_lite_infer"
RUN = f"test_tipc/output/{MODEL}/{MODE}"
KINDS = ("outside", "file", "dangling", "chain", "inside")

# command -> (the components one case may turn into a link, the command line, extra environment)
CASES = {
    "run": (["test_tipc", "test_tipc/output", f"test_tipc/output/{MODEL}", RUN],
            ["run", "--mode", MODE, "--quiet"], {}),
    "suite": (["test_tipc", "test_tipc/output", "test_tipc/output/suite"],
              ["suite", ".", "--root", ".", "--timeout", "120"], {}),
    "lint": ([".tipcgen", ".tipcgen/cache", ".tipcgen/cache/flags"],
             ["lint", "--root", ".", f"test_tipc/configs/{MODEL}/train_infer_python.txt"], {"TIPCGEN_CACHE_DIR": ""}),
    "doctor": ([".tipcgen", ".tipcgen/cache", ".tipcgen/cache/flags"], ["doctor"], {"TIPCGEN_CACHE_DIR": ""}),
    "run-cache": ([".tipcgen", ".tipcgen/cache", ".tipcgen/cache/flags"], ["run", "--mode", MODE, "--quiet"],
                  {"TIPCGEN_CACHE_DIR": ""}),
    "init": ([".tipcgen", ".tipcgen/backup", ".tipcgen/base", ".tipcgen-answers.yml", "test_tipc", "test_tipc/configs"],
             ["init", str(STUB / "tipc.yaml"), "--output", ".", "--force"], {}),
    "update": ([".tipcgen", ".tipcgen/base"], ["update"], {}),
    "report": (["reports", "reports/stub"], ["report", RUN, "-o", "reports/stub/html", "--format", "md"], {}),
    "report-in-run": (["test_tipc/output", f"test_tipc/output/{MODEL}", RUN], ["report", RUN, "--format", "md"], {}),
    "accept": ([".tipcgen", ".tipcgen/backup"], ["accept", "--root", ".", "--write-docs"], {}),
}
# The components that hold what a command reads (its config, scripts, run folder, merge base): a link there
# to a file or to nowhere takes its input away, and the command may say that first.
READS = {"run": ["test_tipc"], "suite": ["test_tipc"], "update": [".tipcgen", ".tipcgen/base"],
         "report-in-run": CASES["report-in-run"][0], "report": [], "init": ["test_tipc", ".tipcgen-answers.yml"],
         "accept": []}
EDITED = "test_tipc/README.md"  # edited before each init --force, so that init backs its old content up


@pytest.fixture(autouse=True)
def _probe_each_interpreter_once(doctor_probes_once):
    """doctor's probe of the interpreter itself (tipcgen's fixed code, which imports paddle in a child: ~1.8 s of
    CPU, most of this file's time when every doctor case paid it) runs once per worker (conftest.doctor_probes_once):
    it neither writes nor reads a link; what doctor writes (the flag cache) and refuses is checked each time."""


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    """tmp/repo: the stub project, rendered, with one lite run and a report folder; tmp/outside: a user's
    folder with a file in it; repo/elsewhere: a folder of the repository a link may lead to."""
    base = tmp_path_factory.mktemp("links")
    repo = base / "repo"
    make_stub_repo(repo)
    proc = tipcgen("run", "--mode", MODE, "--quiet", cwd=repo)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    (repo / "reports" / "stub").mkdir(parents=True)
    (repo / "elsewhere").mkdir()
    (base / "outside").mkdir()
    return repo


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry under folder: a file's sha256, a link's target, a folder."""
    found = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            found[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[rel] = "/"
    return found


@contextmanager
def linked(repo: Path, component: str, kind: str):
    """Replace repo/component by a link of this kind (its content, if it had any, copied where the link
    leads, as a hostile repository would commit it); put everything back after. Yields the link."""
    outside = repo.parent / "outside"
    path = repo / component
    stash = repo.parent / "stash"
    had = path.exists()
    if had:
        shutil.move(path, stash)
    place = {"outside": outside / "victim", "file": outside / "victim.txt", "dangling": outside / "nowhere",
             "chain": outside / "victim", "inside": repo / "elsewhere" / "victim"}[kind]
    if kind == "file":
        place.write_text("a user's file\n")
    elif kind != "dangling":
        if had and stash.is_dir():
            shutil.copytree(stash, place, symlinks=True)
        elif had:
            place.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(stash, place)
        else:
            place.mkdir(parents=True)
        if place.is_dir():
            (place / "users-own.txt").write_text("keep me\n")
    if kind == "chain":
        hop = outside / "hop"
        hop.symlink_to(place)
        place = hop
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(place)
    try:
        yield path
    finally:
        path.unlink()
        if had:
            shutil.move(stash, path)
        for entry in [*outside.iterdir(), *(repo / "elsewhere").iterdir()]:
            if entry.is_symlink() or entry.is_file():
                entry.unlink()
            else:
                shutil.rmtree(entry)


def check_refused(repo: Path, command: str, component: str, kind: str) -> None:
    _, argv, env = CASES[command]
    readme = (repo / EDITED).read_bytes()
    if command == "init":
        (repo / EDITED).write_bytes(readme + b"\nmy own note\n")
    try:
        with linked(repo, component, kind) as link:
            watched = {"outside": repo.parent / "outside", "elsewhere": repo / "elsewhere"}
            before = {name: snapshot(folder) for name, folder in watched.items()}
            proc = tipcgen(*argv, cwd=repo, env=env)
            out = proc.stdout + proc.stderr
            after = {name: snapshot(folder) for name, folder in watched.items()}
            assert after == before, f"tipcgen {command} changed what {link} leads to:\n{out[-2000:]}"
            assert "Traceback" not in out, out[-3000:]
            if kind in ("file", "dangling") and component in READS.get(command, ()):
                return  # what the command reads is gone: it says so, or finds nothing to do (and writes nothing outside)
            if expects_refusal(repo, command, component):
                assert proc.returncode == 2, (command, component, kind, out[-2000:])
                errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
                assert len(errors) == 1, proc.stderr
                assert str(link) in errors[0] and "symbolic link" in errors[0], proc.stderr
                assert os.readlink(link) in errors[0] and "rm " in proc.stderr, proc.stderr
    finally:
        (repo / EDITED).write_bytes(readme)


def expects_refusal(repo: Path, command: str, component: str) -> bool:
    """lint and doctor write only the flag cache (and run writes it before prepare.sh): a link on the way to it is refused where the cache lies in the
    repository (TIPCGEN_CACHE_DIR empty, today's default); a cache in the user's folder is not reached through it."""
    if command not in ("lint", "doctor", "run-cache"):
        return True
    from tipcgen.configs import flag_cache

    saved = os.environ.get("TIPCGEN_CACHE_DIR")
    os.environ["TIPCGEN_CACHE_DIR"] = ""
    try:
        cache = Path(os.path.abspath(flag_cache.cache_dir(repo)))
    except TypeError:  # the cache's place no longer depends on the repository
        return False
    finally:
        if saved is None:
            os.environ.pop("TIPCGEN_CACHE_DIR", None)
        else:
            os.environ["TIPCGEN_CACHE_DIR"] = saved
    return repo / component == cache or repo / component in cache.parents


# ---------------------------------------------------------------- the cases the hostile probe found

@pytest.mark.parametrize("command,component", [
    ("run", "test_tipc/output"), ("run", f"test_tipc/output/{MODEL}"), ("run", RUN),
    ("suite", "test_tipc/output/suite"), ("lint", ".tipcgen"), ("lint", ".tipcgen/cache"),
    ("doctor", ".tipcgen/cache"), ("run-cache", ".tipcgen/cache/flags"), ("init", ".tipcgen/backup"), ("update", ".tipcgen"), ("report", "reports"),
    ("report-in-run", "test_tipc/output"), ("accept", ".tipcgen/backup"),
])
def test_a_committed_link_to_a_folder_outside_is_refused(world: Path, command: str, component: str):
    check_refused(world, command, component, "outside")


def test_run_deletes_nothing_through_a_linked_output_and_starts_no_script(world: Path):
    """The probe's case: test_tipc/output -> a user's folder that holds a run folder of this model: the old run
    emptied it (prepare.sh failed: rmtree) or filled it (the runner's logs), and prepare.sh had run."""
    with linked(world, "test_tipc/output", "outside") as link:
        victim = Path(os.readlink(link))
        assert (victim / MODEL / MODE / "summary.json").is_file()
        before = snapshot(victim)
        proc = tipcgen("run", "--mode", MODE, cwd=world)
        assert proc.returncode == 2 and snapshot(victim) == before, proc.stdout[-2000:] + proc.stderr
        assert "[prepare]" not in proc.stdout and "prepare.sh" not in proc.stdout, proc.stdout[-2000:]


def test_suite_leaves_a_linked_output_folders_runs_alone(world: Path):
    """test_tipc/output/suite -> a folder with the suite's marker and a runs/ of the user's: the old suite
    replaced that runs/."""
    with linked(world, "test_tipc/output/suite", "outside") as link:
        victim = Path(os.readlink(link))
        (victim / ".tipcgen-suite").write_text("x\n")
        (victim / "runs").mkdir()
        (victim / "runs" / "mine.txt").write_text("mine\n")
        before = snapshot(victim)
        proc = tipcgen("suite", ".", "--root", ".", cwd=world)
        assert proc.returncode == 2 and snapshot(victim) == before, proc.stdout[-2000:] + proc.stderr
        assert str(link) in proc.stderr and "[suite] start" not in proc.stdout


@pytest.mark.parametrize("component", ["test_tipc/output", f"test_tipc/output/{MODEL}", RUN])
def test_the_generated_runner_run_by_hand_refuses_a_linked_run_folder(world: Path, component: str):
    """A reviewer runs `bash test_tipc/test_train_inference_python.sh CONFIG MODE` without tipcgen: the runner
    checks its run folder's path itself (tipc_no_links) before its rm -rf and its first log."""
    config = f"test_tipc/configs/{MODEL}/train_infer_python.txt"
    with linked(world, component, "outside") as link:
        victim = world.parent / "outside"
        before = snapshot(victim)
        proc = subprocess.run(["bash", "test_tipc/test_train_inference_python.sh", config, MODE], cwd=world,
                              env=chain_env(), capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert proc.returncode == 2 and snapshot(victim) == before, proc.stdout[-2000:] + proc.stderr
        rel = str(link.relative_to(world))
        assert f"tipc error: {rel} is a symbolic link to {os.readlink(link)}" in proc.stderr, proc.stderr
        assert f"rm {rel}" in proc.stderr


@pytest.mark.parametrize("component", ["train_data", "train_data/bert_sst2"])
def test_prepare_deletes_nothing_through_a_linked_data_folder(tmp_path: Path, component: str):
    """prepare.sh replaces each data file it names in data.dir (rm -rf, then a copy or a link): through a committed
    train_data -> ~/data that deleted the user's own train.tsv. Refused, by hand and under tipcgen run."""
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    tipcgen("init", "bert-sst2", "--output", str(repo), check=True)
    outside.mkdir()
    (outside / "train.tsv").write_text("the user's whole data\n")
    (outside / "bert_sst2").mkdir()
    (outside / "bert_sst2" / "train.tsv").write_text("the user's whole data\n")
    (repo / component).parent.mkdir(parents=True, exist_ok=True)
    (repo / component).symlink_to(outside)
    before = snapshot(outside)
    config = "test_tipc/configs/bert_sst2/train_infer_python.txt"
    proc = subprocess.run(["bash", "test_tipc/prepare.sh", config, MODE], cwd=repo, env=chain_env(),
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and snapshot(outside) == before, proc.stdout[-2000:] + proc.stderr
    assert f"tipc error: {component} is a symbolic link to {outside}" in proc.stderr, proc.stderr
    proc = tipcgen("run", "--mode", MODE, "--quiet", cwd=repo)
    assert proc.returncode == 2 and snapshot(outside) == before, proc.stdout[-2000:] + proc.stderr
    assert f"{component} is a symbolic link to {outside}" in proc.stderr and "Traceback" not in proc.stderr


# ---------------------------------------------------------------- generated: any command, component and kind

_DRAWS = st.sampled_from(sorted(CASES)).flatmap(
    lambda command: st.tuples(st.just(command), st.sampled_from(CASES[command][0]), st.sampled_from(KINDS)))


@settings(max_examples=fuzz_examples(120), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(_DRAWS)
def test_generated_links_on_every_written_path_are_refused(world: Path, draw: tuple[str, str, str]):
    command, component, kind = draw
    check_refused(world, command, component, kind)
