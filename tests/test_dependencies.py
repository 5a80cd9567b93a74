"""A base install (`pip install tipcgen`: the dependencies pyproject.toml declares and theirs, no extra) runs every
command: the CLI imports nothing it does not declare. Found by installing it alone: typer 0.29 vendors click, and the
CLI's `import click` crashed every command where no ray or paddlenlp had brought click along; `tipcgen run` ended in
a traceback where nothing had brought numpy, which its export check reads arrays with.

The check runs in a process of its own whose importer refuses every top-level module that is neither the standard
library's nor a base install's (walked from the installed metadata), and records each refusal: a command that
tries one fails here as it would fail there, and an optional one it handles (matplotlib for the report's pictures)
is still named, so that every optional import is one the test knows."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import metadata

import pytest
from pathlib import Path

from packaging.requirements import Requirement

from conftest import ROOT, chain_env, make_stub_repo

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

# What a command may try and do without (it says so, or works without it): the report's pictures.
OPTIONAL = {"matplotlib"}

_REFUSING = r'''
import importlib, importlib.abc, json, os, sys
allowed = set(json.loads(sys.argv[1]))
refused = []

def importer():
    """The module whose import statement is being run (the first frame outside the import machinery)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(("<frozen importlib", os.path.dirname(importlib.__file__))):
        frame = frame.f_back
    return frame.f_globals.get("__name__", "") if frame is not None else ""

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in allowed or top in sys.stdlib_module_names or top.startswith("_sysconfigdata"):  # the stdlib's, per platform
            return None
        if importer().partition(".")[0] == "tipcgen":  # a library's own optional imports (jsonschema's formats) are its own
            refused.append(top)
        raise ModuleNotFoundError(f"No module named {name!r} (not in a base install)", name=name)

sys.meta_path.insert(0, Refuse())
from tipcgen.cli.app import main

codes = []
for argv in json.loads(sys.argv[2]):
    try:
        main(argv, prog_name="tipcgen")
        codes.append(0)
    except SystemExit as exc:
        codes.append(exc.code if isinstance(exc.code, int) else 1)
print("RESULT " + json.dumps({"codes": codes, "refused": sorted(set(refused))}))
'''


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def base_modules() -> set[str]:
    """The top-level modules of the dependencies pyproject.toml declares and theirs (from the installed metadata,
    markers evaluated, no extra)."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    seen, todo = set(), [None]
    while todo:
        name = todo.pop()
        for text in declared if name is None else metadata.requires(name) or []:
            requirement = Requirement(text)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            if _canonical(requirement.name) not in seen:
                seen.add(_canonical(requirement.name))
                todo.append(requirement.name)
    return {module for module, dists in metadata.packages_distributions().items()
            if any(_canonical(d) in seen for d in dists)} | {"tipcgen"}


def test_the_base_dependencies_are_walked_from_the_metadata():
    modules = base_modules()
    assert {"typer", "jinja2", "yaml", "jsonschema", "numpy", "tipcgen"} <= modules
    assert {"paddle", "ray", "matplotlib", "pytest"}.isdisjoint(modules)


def test_every_command_runs_on_a_base_install(tmp_path: Path):
    """--help of every command, then init, lint, run (the stub chain: its steps are processes of their own), report
    and accept on what it wrote, all in one process that refuses what a base install lacks."""
    from typer.main import get_command

    from tipcgen.cli.app import app

    group = get_command(app)
    helps = [[name, "--help"] for name in group.commands] + [["--help"]]
    helps += [[name, sub, "--help"] for name, command in group.commands.items() for sub in getattr(command, "commands", {})]
    repo = make_stub_repo(tmp_path / "repo", init=False)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    config = "test_tipc/configs/stub_model/train_infer_python.txt"
    work = [["init", "stub/tipc.yaml", "--root", str(repo)], ["lint", str(repo / config)],
            ["run", "--root", str(repo), "--quiet"], ["report", "--root", str(repo)], ["accept", "--root", str(repo)]]
    proc = subprocess.run([sys.executable, "-c", _REFUSING, json.dumps(sorted(base_modules())),
                           json.dumps(helps + work)],
                          cwd=repo, env=chain_env(TIPC_NO_PADDLE="1"), capture_output=True, text=True, timeout=600)
    line = next((s for s in proc.stdout.splitlines() if s.startswith("RESULT ")), None)
    assert line is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(line[len("RESULT "):])
    help_codes, (init, lint, run, report, accept) = result["codes"][:len(helps)], result["codes"][len(helps):]
    assert help_codes == [0] * len(helps), dict(zip(map(" ".join, helps), help_codes))
    # run passes its stand-in chain; accept may find what a stub project lacks (exit 1), but never crashes (2+)
    assert (init, lint, run, report) == (0, 0, 0, 0), (result["codes"][len(helps):], proc.stdout[-3000:], proc.stderr[-3000:])
    assert accept in (0, 1), (accept, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert set(result["refused"]) <= OPTIONAL, result["refused"]
