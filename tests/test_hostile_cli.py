"""Every CLI command that reads a file or folder is in a hostile-input battery (issue 26).

The commands are enumerated from the Typer app (cli/app.py and its sub-apps), not listed by hand: a
command whose parameters name a path (a `Path` annotation, or a text parameter in FILE_TEXT_PARAMS) must
have an entry in BATTERIES, each battery file must exist and run that command, and an entry for a
command that no longer exists fails too. A new command that reads files therefore fails here until it
has a battery.
"""
from __future__ import annotations

import typing

import pytest
from typer.main import get_command

from conftest import ROOT
from tipcgen.cli.app import app

# Text parameters that name a file or folder (the others that are `str` are modes, names, flags...).
FILE_TEXT_PARAMS = {"paths", "config", "data_dir", "model_dir", "target", "train", "eval_", "export", "infer",
                    "rules", "check", "paddle", "torch", "train_data", "eval_data", "infer_data"}

# command -> (battery files, each of which runs it). Part A of issue 26 writes test_hostile_align.py.
BATTERIES = {
    "accept": ("tests/test_hostile_accept.py", "tests/test_hostile_report.py"),
    "report": ("tests/test_hostile_report.py", "tests/test_integrity_reports.py"),
    "suite": ("tests/test_hostile_suite.py",),
    "doctor": ("tests/test_hostile_doctor.py",),
    "run": ("tests/test_hostile_doctor.py", "tests/test_integrity_runs.py"),
    "init": ("tests/test_hostile_init.py", "tests/test_integrity_errors.py", "tests/test_fuzz_descriptor.py",
             "tests/test_hostile_bounds.py"),
    "update": ("tests/test_integrity_runs.py", "tests/test_integrity_errors.py", "tests/test_hostile_bounds.py"),
    "lint": ("tests/test_fuzz_lint_import.py", "tests/test_integrity_errors.py", "tests/test_hostile_bounds.py"),
    "import": ("tests/test_fuzz_lint_import.py", "tests/test_integrity_errors.py", "tests/test_hostile_bounds.py"),
    "golden": ("tests/test_integrity_reports.py", "tests/test_integrity_errors.py"),
    "new": ("tests/test_integrity_errors.py",),
    "align compare": ("tests/test_hostile_align.py",),
    "align report": ("tests/test_hostile_align.py",),
    "align convert": ("tests/test_hostile_align.py", "tests/test_hostile_bounds.py"),
    "align trace": ("tests/test_hostile_align.py",),
}
# Commands with a path parameter that read no file: what they write is the writer battery's.
READS_NOTHING = {"schema": "writes tipc.schema.json (--output) and reads nothing"}
PART_A = {"tests/test_hostile_align.py"}  # issue 26 part A's branch: present once both are merged


def _commands() -> dict[str, set[str]]:
    """Every command of the app (`align compare` for a sub-app's) -> its parameters that name paths."""
    found: dict[str, set[str]] = {}

    def walk(command, prefix: str) -> None:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                walk(sub, f"{prefix} {name}".strip())
            return
        hints = typing.get_type_hints(command.callback)
        found[prefix] = {name for name, hint in hints.items() if "Path" in str(hint)} | \
            {name for name, hint in hints.items() if name in FILE_TEXT_PARAMS and "str" in str(hint)}

    walk(get_command(app), "")
    return found


def test_the_enumeration_sees_every_command_and_its_path_parameters():
    commands = _commands()
    assert {"report", "accept", "suite", "doctor", "run", "align convert", "align trace"} <= set(commands)
    assert {"run_dir", "align", "output"} <= commands["report"] and "paths" in commands["suite"]


def test_every_command_that_reads_a_file_has_a_battery():
    commands = _commands()
    reading = {name for name, params in commands.items() if params} - set(READS_NOTHING)
    assert not reading - set(BATTERIES), f"commands without a hostile battery: {sorted(reading - set(BATTERIES))}"
    assert not set(BATTERIES) - set(commands), f"batteries for commands that are gone: {set(BATTERIES) - set(commands)}"
    assert set(READS_NOTHING) <= set(commands)


@pytest.mark.parametrize("command, path", [(c, p) for c, paths in BATTERIES.items() for p in paths])
def test_each_battery_runs_its_command(command: str, path: str):
    file = ROOT / path
    if path in PART_A and not file.exists():
        pytest.skip(f"{path} is issue 26 part A's battery, in its own branch until both are merged")
    assert file.is_file(), f"{path} is missing"
    text = file.read_text(encoding="utf-8")
    word = command.split()[-1]
    assert f'"{word}"' in text or f"'{word}'" in text or f"{word}." in text, f"{path} never runs `tipcgen {command}`"


def test_part_a_is_the_only_battery_allowed_to_be_absent():
    missing = {p for paths in BATTERIES.values() for p in paths if not (ROOT / p).is_file()}
    assert missing <= PART_A, missing
