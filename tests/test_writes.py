"""tipcgen.core.writes is the one writer: never through a link, never half a file, and nothing else writes.

The grep test reads every module's syntax tree (not its text: a message may say "np.save") and fails on
a call that writes a file anywhere but tipcgen/core/writes.py, except the commented allow-list below.
"""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from conftest import ROOT, nodes
from tipcgen.core.errors import TipcgenError
from tipcgen.core.writes import check_no_links, make_dirs, remove_tree, staged_path, write_file, write_tree

PACKAGE = Path(__file__).resolve().parents[1] / "tipcgen"
WRITER = "core/writes.py"

# (module, call) -> why it may write by itself. Keep it short: each entry is a place a link could be followed.
ALLOWED = {
    # The run's OS lock: filelock creates <run folder>.flock beside the folder (O_NOFOLLOW from filelock 4 on;
    # guard._refuse_odd refuses a link, FIFO or folder there first, as filelock 3.x follows a link with O_TRUNC).
    ("run/guard.py", "filelock.FileLock"): "<run folder>.flock, after refusing anything but a regular file there",
    # numpy writes a reprod_log file into io.BytesIO; write_file puts the bytes on disk.
    ("repro/align.py", "np.save"): "into io.BytesIO",
    ("repro/align.py", "np.savez"): "into io.BytesIO",
    # paddle.save writes by name only: into the private folder staged_path made, renamed into place after.
    ("repro/checkpoint_io.py", "paddle.save"): "into writes.staged_path's private folder",
    # A gzip stream into an in-memory buffer (no file): the work folder shipped to a Ray worker.
    ("suite/ray_tasks.py", "tarfile.open"): "writes into io.BytesIO, not a file",
    # The suite writes only under the output folder it owns (suite/owned.py refuses any other): working
    # copies and the chains' run folders copied there with links kept as links, never followed.
    ("suite/suite.py", "shutil.copytree"): "into the suite's own output folder, symlinks=True",
    # Each chain's suite.log is streamed while the chain runs: opened O_NOFOLLOW after removing a link.
    ("suite/suite.py", "os.open"): "suite.log in the suite's own runs folder, O_NOFOLLOW",
    ("suite/suite.py", "os.fdopen"): "writes into the descriptor os.open just opened",
    # Deletes and folders (each removes a link as a link, or creates in a folder checked from its root first):
    ("run/guard.py", "path.parent.mkdir"): "the run folder's parent: the run refused a link on the way before",
    ("suite/suite.py", "dest.mkdir"): "runs/<chain> in the suite's output folder, checked by owned.checked_links",
    ("suite/suite.py", "path.unlink"): "a link at suite.log in the suite's own runs folder: the link itself",
    ("suite/suite.py", "?.rmdir"): "the suite's empty work/ folder (rmdir never follows a link)",
    ("suite/ray_tasks.py", "dest.mkdir"): "a worker's private temporary folder, or runs/<chain> in the suite's folder",
    ("suite/ray_tasks.py", "shutil.rmtree"): "Ray's private temporary folder, a shipped copy and runs/<chain> in the "
                                             "suite's folder (rmtree removes a link inside, never its target)",
    ("suite/ray_tasks.py", "tempfile.mkdtemp"): "Ray's private temporary folder, created exclusively",
    ("suite/ray_tasks.py", "tempfile.TemporaryDirectory"): "a worker's private temporary folder",
    ("render/update.py", "tempfile.TemporaryDirectory"): "git merge-file's three inputs, in a private folder",
    ("repro/export_check.py", "tempfile.TemporaryDirectory"): "a private folder for the export's comparison",
    ("render/gitignore.py", "tempfile.TemporaryDirectory"): "git check-ignore's scratch repository, a private folder",
    ("run/doctor.py", "tempfile.TemporaryDirectory"): "the export probe's script, in a private folder",
    ("run/export_probe.py", "tempfile.TemporaryDirectory"): "a probe export of the repository's model, a private "
                                                            "folder (the only one its sandbox may write)",
}

# The scripts shipped into a user's test_tipc/ (check_inference.py, compare_results.py, ...) run inside the
# chain, where tipcgen is not importable; they write only into the chain's own output folder.
SHIPPED = ("render/shipped/",)

_WRITE_CALLS = {
    "np.save", "np.savez", "np.savez_compressed", "numpy.save", "numpy.savez", "paddle.save", "torch.save",
    "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree", "shutil.move", "os.replace", "os.rename",
    "os.link", "os.symlink", "os.mkfifo", "tempfile.mkstemp", "tempfile.NamedTemporaryFile", "json.dump",
    "pickle.dump", "yaml.dump", "yaml.safe_dump", "paddle.jit.save", "os.truncate", "filelock.FileLock",
}
_WRITE_METHODS = {"write_text", "write_bytes", "symlink_to", "hardlink_to", "touch", "rename"}
# Deleting and making folders follow a link on the way just as writing does (rmtree of output/x with
# output -> ~ empties ~/x): they go through writes.remove_tree, remove_file and make_dirs too.
_DELETE_CALLS = {"shutil.rmtree", "os.remove", "os.unlink", "os.rmdir", "os.removedirs", "os.mkdir", "os.makedirs",
                 "tempfile.mkdtemp", "tempfile.TemporaryDirectory"}
_DELETE_METHODS = {"unlink", "rmdir", "mkdir"}
_WRITE_MODE = set("wax+")


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def _mode(call: ast.Call, position: int) -> str:
    for keyword in call.keywords:
        if keyword.arg == "mode" and isinstance(keyword.value, ast.Constant):
            return str(keyword.value.value)
    if len(call.args) > position and isinstance(call.args[position], ast.Constant):
        return str(call.args[position].value)
    return ""


def _writes(call: ast.Call) -> bool:
    name = _dotted(call.func)
    method = name.rsplit(".", 1)[-1]
    if name in ("json.dump", "pickle.dump", "yaml.dump", "yaml.safe_dump"):  # to a stream; without one, a string
        return len(call.args) > 1 or any(k.arg == "stream" for k in call.keywords)
    if name in _WRITE_CALLS or method in _WRITE_METHODS:
        return True
    if name in _DELETE_CALLS or method in _DELETE_METHODS:
        return True
    if name in ("open", "os.fdopen", "io.open", "tarfile.open", "zipfile.ZipFile", "gzip.open", "bz2.open", "lzma.open"):
        return bool(_WRITE_MODE & set(_mode(call, 1)))
    if name == "os.open":
        flags = ast.dump(call.args[1]) if len(call.args) > 1 else ""
        return any(flag in flags for flag in ("O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"))
    if method == "open":  # Path.open(mode)
        return bool(_WRITE_MODE & set(_mode(call, 0)))
    if method == "replace":  # Path.replace(target) takes one argument, str.replace two
        return len(call.args) == 1 and not call.keywords
    return False


def write_calls() -> list[tuple[str, str, int]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(SHIPPED):
            continue
        for node in nodes(path):
            if isinstance(node, ast.Call) and _writes(node):
                found.append((rel, _dotted(node.func), node.lineno))
    return found


def test_nothing_but_the_writer_writes_a_file():
    calls = write_calls()
    assert any(rel == WRITER for rel, _, _ in calls), "the grep finds nothing at all: it is broken"
    stray = [f"tipcgen/{rel}:{line}: {name}" for rel, name, line in calls
             if rel != WRITER and (rel, name) not in ALLOWED]
    assert not stray, "write through tipcgen.core.writes (write_file, staged_path, write_tree):\n" + "\n".join(stray)


def test_the_grep_sees_each_kind_of_write():
    sample = ("open(p, 'w'); open(p, mode='ab'); p.open('w'); p.write_text(s); p.write_bytes(b); np.save(p, a); "
              "paddle.save(s, p); shutil.copy2(a, b); os.replace(a, b); p.replace(q); os.open(p, os.O_WRONLY | os.O_CREAT); "
              "json.dump(x, handle)")
    calls = [node for node in ast.walk(ast.parse(sample)) if isinstance(node, ast.Call)]
    assert sum(_writes(c) for c in calls) == 12
    harmless = "open(p); p.open(); s.replace('a', 'b'); os.open(p, os.O_RDONLY); p.read_text(); yaml.safe_dump(x)"
    assert not any(_writes(c) for c in ast.walk(ast.parse(harmless)) if isinstance(c, ast.Call))


def test_write_file_replaces_a_link_and_leaves_its_target_alone(tmp_path):
    victim = tmp_path / "bashrc"
    victim.write_text("original\n")
    link = tmp_path / "out" / "forward_diff.log"
    link.parent.mkdir()
    link.symlink_to(victim)
    write_file(link, "key; rm -rf ~\n")
    assert victim.read_text() == "original\n"
    assert not link.is_symlink() and link.read_text() == "key; rm -rf ~\n"
    assert [p.name for p in link.parent.iterdir()] == ["forward_diff.log"]  # no temporary left


def test_write_file_refuses_a_linked_folder_inside_the_owned_folder(tmp_path):
    elsewhere = tmp_path / "home"
    elsewhere.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "output").symlink_to(elsewhere)
    with pytest.raises(TipcgenError, match="symbolic link"):
        write_file(repo / "output" / "report.json", "{}", within=repo)
    assert list(elsewhere.iterdir()) == []


def test_write_file_refuses_a_folder_and_a_fifo(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(TipcgenError, match="is a folder"):
        write_file(tmp_path / "d", "x", within=tmp_path)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(TipcgenError, match="not a regular file"):
        write_file(tmp_path / "fifo", "x", within=tmp_path)


def test_staged_path_renames_on_success_and_removes_on_failure(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    target = tmp_path / "model.pdparams"
    target.symlink_to(victim)
    with pytest.raises(RuntimeError):
        with staged_path(target, within=tmp_path) as temp:
            temp.write_bytes(b"half")
            raise RuntimeError("the library failed")
    assert target.is_symlink() and victim.read_text() == "keep"
    with staged_path(target, within=tmp_path) as temp:
        temp.write_bytes(b"whole")
    assert not target.is_symlink() and target.read_bytes() == b"whole" and victim.read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pdparams", "victim"]


def test_write_tree_refuses_a_linked_folder_under_the_output(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "repo"
    (out / "test_tipc").mkdir(parents=True)
    (out / "test_tipc" / "results").symlink_to(elsewhere)
    with pytest.raises(TipcgenError, match="symbolic link"):
        write_tree({"test_tipc/results/golden.txt": "x"}, out, force=True)
    assert list(elsewhere.iterdir()) == []


def test_the_grep_sees_each_kind_of_delete_and_folder():
    sample = "shutil.rmtree(p); p.unlink(); os.remove(p); os.unlink(p); p.rmdir(); p.mkdir(); os.makedirs(p); tempfile.mkdtemp()"
    calls = [node for node in ast.walk(ast.parse(sample)) if isinstance(node, ast.Call)]
    assert sum(_writes(c) for c in calls) == 8


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): (p.read_text() if p.is_file() and not p.is_symlink() else "")
            for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("kind", ["outside", "file", "dangling", "chain", "inside", "self"])
def test_check_no_links_refuses_every_kind_of_link_on_the_way(tmp_path, kind):
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "test_tipc").mkdir(parents=True)
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    (repo / "real").mkdir()
    target = {"outside": outside, "file": outside / "keep.txt", "dangling": tmp_path / "nowhere",
              "chain": tmp_path / "hop", "inside": repo / "real", "self": repo / "test_tipc" / "output"}[kind]
    if kind == "chain":
        (tmp_path / "hop").symlink_to(outside)
    link = repo / "test_tipc" / "output"
    link.symlink_to(target)
    with pytest.raises(TipcgenError) as caught:
        check_no_links(repo, repo / "test_tipc" / "output" / "m" / "mode", "the run folder")
    message = str(caught.value)
    assert str(link) in message and os.readlink(link) in message and "rm " in message and message.count("\n") == 1
    with pytest.raises(TipcgenError):
        make_dirs(repo, repo / "test_tipc" / "output" / "m" / "mode")
    with pytest.raises(TipcgenError):
        remove_tree(repo, repo / "test_tipc" / "output" / "m")
    with pytest.raises(TipcgenError):
        write_file(repo / "test_tipc" / "output" / "m" / "summary.json", "{}", within=repo)
    with pytest.raises(TipcgenError):
        write_tree({"test_tipc/output/m/summary.json": "{}"}, repo)
    assert _tree(outside) == {"keep.txt": "keep"} and link.is_symlink() and list((repo / "real").iterdir()) == []


def test_check_no_links_walks_a_dotdot_through_the_link(tmp_path):
    repo, outside = tmp_path / "repo", tmp_path / "outside" / "deep"
    (repo / "test_tipc").mkdir(parents=True)
    outside.mkdir(parents=True)
    (repo / "test_tipc" / "output").symlink_to(outside)
    # os.path.abspath would make this repo/test_tipc/x, but the system goes through the link to outside/x
    with pytest.raises(TipcgenError, match="symbolic link"):
        check_no_links(repo, repo / "test_tipc" / "output" / ".." / "x")
    with pytest.raises(TipcgenError, match="leads out of"):
        check_no_links(repo, repo / "test_tipc" / ".." / ".." / "x", inside=True)
    # outside the root: the user's folder, from itself down
    assert check_no_links(repo, tmp_path / "outside" / "y") == tmp_path / "outside" / "y"


def test_make_dirs_refuses_a_link_planted_after_the_check(tmp_path, monkeypatch):
    from tipcgen.core import writes

    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    real_check = writes.check_no_links

    def racing(root, path, what="", inside=False):  # the check passes, then a link appears
        found = real_check(root, path, what, inside)
        (repo / "out").symlink_to(outside)
        return found

    monkeypatch.setattr(writes, "check_no_links", racing)
    with pytest.raises(TipcgenError, match="symbolic link"):
        writes.make_dirs(repo, repo / "out" / "run")
    assert list(outside.iterdir()) == []


def test_remove_tree_removes_a_link_inside_never_its_target(tmp_path):
    assert shutil.rmtree.avoids_symlink_attacks  # the descriptor-based walk, which unlinks a link it meets
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "out" / "run" / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    (repo / "out" / "run" / "to_folder").symlink_to(outside)
    (repo / "out" / "run" / "sub" / "to_file").symlink_to(outside / "keep.txt")
    remove_tree(repo, repo / "out" / "run")
    assert not (repo / "out" / "run").exists() and _tree(outside) == {"keep.txt": "keep"}
    remove_tree(repo, repo / "out" / "run")  # missing: nothing to do
    (repo / "out" / "run").symlink_to(outside)
    with pytest.raises(TipcgenError, match="symbolic link"):
        remove_tree(repo, repo / "out" / "run")
    assert _tree(outside) == {"keep.txt": "keep"}


def test_write_tree_refuses_a_linked_backup_folder_and_a_linked_file(tmp_path):
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (outside / "secret").write_text("secret")
    (repo / "a.txt").write_text("old")
    (repo / ".tipcgen").symlink_to(outside)
    with pytest.raises(TipcgenError, match="symbolic link"):
        write_tree({"a.txt": "new"}, repo, force=True)
    assert (repo / "a.txt").read_text() == "old" and _tree(outside) == {"secret": "secret"}
    (repo / ".tipcgen").unlink()
    (repo / "b.txt").symlink_to(outside / "secret")
    with pytest.raises(TipcgenError, match="symbolic link"):
        write_tree({"b.txt": "new"}, repo, force=True)
    assert _tree(outside) == {"secret": "secret"} and not (repo / ".tipcgen").exists()


# A rerun's last run folder moved aside (#57): tipcgen run's writes.move_aside and the runner's (tipc_preflight.py's
# keep_previous, run by tipc_start_run) keep the same files, on any tree a run could leave.

_NAMES = st.sampled_from(["a.log", "summary.json", "m.pdparams", "x.pdiparams", "w.pth", "w.pt", "w.pd", "s.safetensors",
                          "model_latest", "report.html", "n.txt", "é ü.log", "-dash", "sp ace", "*", "a.pdparams.bak"])
_CONTENT = st.sampled_from([b"", b"text\n", b"\x80\x04pickle", b"\x80", b"PK\x03\x04zip", b"\x00\x80"])
_TREE = st.recursive(st.dictionaries(_NAMES, _CONTENT, max_size=4),
                     lambda sub: st.dictionaries(st.sampled_from(["d", "norm_train_gpus_-1", "checkpoint", "x.pdparams"]),
                                                 sub, max_size=3).map(lambda d: {k + "_dir": v for k, v in d.items()}),
                     max_leaves=12)


def _plant(folder: Path, tree: dict, outside: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, value in tree.items():
        if isinstance(value, dict):
            _plant(folder / name, value, outside)
        else:
            (folder / name).write_bytes(value)
    (folder / "link").symlink_to(outside)  # a link in every folder: removed, its target kept
    os.mkfifo(folder / "fifo")


def _expected(tree: dict, suffixes: tuple[str, ...], prefix: str = "") -> dict:
    """What the previous folder keeps of a planted tree: every folder, every file that is no weight (by suffix or
    a pickle's first byte), with its bytes."""
    kept = {}
    for name, value in tree.items():
        if isinstance(value, dict):
            kept[prefix + name] = None
            kept.update(_expected(value, suffixes, f"{prefix}{name}/"))
        elif not name.endswith(suffixes) and value[:1] != b"\x80":
            kept[prefix + name] = value
    return dict(sorted(kept.items()))


def _kept(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None)
            for p in sorted(folder.rglob("*"))} if folder.exists() else {}


@settings(max_examples=25, deadline=None)
@given(tree=_TREE, older=st.booleans())
def test_the_previous_folder_keeps_every_file_but_weights_and_links_alike_in_tipcgen_and_the_runner(tmp_path_factory, tree,
                                                                                                  older):
    from tipcgen.core.writes import move_aside
    from tipcgen.format.paths import WEIGHT_SUFFIXES
    from tipcgen.run.pipeline import keep_previous

    work = tmp_path_factory.mktemp("aside")
    outside = work / "outside"
    outside.mkdir()
    (outside / "theirs.pdparams").write_bytes(b"\x80keep")
    results = []
    for side in ("python", "runner"):
        root = work / side
        run_dir = root / "test_tipc/output/m/lite_train_lite_infer"
        _plant(run_dir, tree, outside)
        if older:
            (root / "test_tipc/output/m/lite_train_lite_infer.previous/old").mkdir(parents=True)
        if side == "python":
            assert keep_previous(root, run_dir) == "test_tipc/output/m/lite_train_lite_infer.previous"
        else:
            proc = subprocess.run(["bash", "-c", f"source {ROOT / 'test_tipc/tipc_steps.sh'} && tipc_preflight start "
                                   f"./test_tipc/output/m/lite_train_lite_infer {sys.executable} c.txt m"], cwd=root,
                                  capture_output=True, text=True, env={**os.environ, "TIPC_PYTHON": sys.executable})
            assert proc.returncode == 0, proc.stderr
        assert not run_dir.exists()
        results.append(_kept(run_dir.with_name("lite_train_lite_infer.previous")))
    assert results[0] == results[1], "tipcgen run and the runner keep the same files"
    assert results[0] == _expected(tree, WEIGHT_SUFFIXES), "every folder, every file but a weight; no link, no FIFO"
    assert [p.name for p in outside.iterdir()] == ["theirs.pdparams"] and (outside / "theirs.pdparams").read_bytes() == b"\x80keep"
    assert move_aside(work, work / "none", work / "none.previous", bool) is False


def test_an_empty_run_folder_is_left_and_the_folder_kept_aside_stays(tmp_path: Path):
    from tipcgen.run.pipeline import keep_previous

    run_dir = tmp_path / "test_tipc/output/m/mode"
    run_dir.mkdir(parents=True)
    (tmp_path / "test_tipc/output/m/mode.previous").mkdir()
    (tmp_path / "test_tipc/output/m/mode.previous/report.html").write_text("kept")
    assert keep_previous(tmp_path, run_dir) == "" and run_dir.is_dir()
    proc = subprocess.run(["bash", "-c", f"source {ROOT / 'test_tipc/tipc_steps.sh'} && tipc_preflight start "
                           f"./test_tipc/output/m/mode {sys.executable} c.txt m"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "TIPC_PYTHON": sys.executable})
    assert proc.returncode == 0 and run_dir.is_dir(), proc.stderr
    assert (tmp_path / "test_tipc/output/m/mode.previous/report.html").read_text() == "kept"
