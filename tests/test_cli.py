"""Everyday CLI polish: an example in every command's help, shell completion, colour only on a terminal."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from tipcgen.cli import app as cli
from tipcgen.core.text import shown

from conftest import STUB, make_stub_repo


def _commands():
    group = get_command(cli.app)
    for name, command in group.commands.items():
        yield (name,), command
        for sub_name in getattr(command, "commands", {}):
            yield (name, sub_name), command.commands[sub_name]


COMMANDS = [path for path, _ in _commands()]


def test_the_command_list_has_the_new_commands():
    assert {("new",), ("update",), ("report",), ("align", "compare"), ("align", "report")} <= set(COMMANDS)


@pytest.mark.parametrize("path", [(), *COMMANDS], ids=lambda p: " ".join(p) or "tipcgen")
def test_every_help_has_an_example(path):
    result = CliRunner().invoke(cli.app, [*path, "--help"], env={"NO_COLOR": "1", "COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert "Example:" in result.output
    example = result.output.split("Example:", 1)[1]
    assert "tipcgen " + " ".join(path) in " ".join(example.split())  # the example uses the command itself


def test_version_is_the_installed_one():
    from importlib.metadata import version

    from conftest import tipcgen

    proc = tipcgen("--version", process=True)
    assert proc.returncode == 0 and proc.stdout == f"tipcgen {version('tipcgen')}\n", proc
    assert tipcgen("--version", "init").stdout == proc.stdout  # eager: before any command runs


def test_shell_completion_script(tmp_path: Path):
    exe = shutil.which("tipcgen", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the tipcgen entry point is not installed (pip install -e .)")
    # The shell is named, not detected from the parent processes (which differ under CI, xdist and `&`):
    # typer's own switch for that, used by its tests.
    proc = subprocess.run([exe, "--show-completion", "bash"], capture_output=True, text=True,
                          env={**os.environ, "SHELL": "/bin/bash", "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "complete -o default -F _tipcgen_completion tipcgen" in proc.stdout
    # and the script really completes: ask it as bash would for `tipcgen up<TAB>`
    proc = subprocess.run([exe], capture_output=True, text=True,
                          env={**os.environ, "_TIPCGEN_COMPLETE": "complete_bash", "COMP_WORDS": "tipcgen up",
                               "COMP_CWORD": "1"})
    assert proc.stdout.split() == ["update"]


def test_action_words_are_coloured_only_when_asked():
    assert cli._action("conflict", color=False) == "   conflict"
    painted = shown(cli._action("conflict", color=True))  # the colour is a marker until the CLI's echo prints it
    assert painted.startswith("\033[31m") and "conflict" in painted and painted.endswith("\033[0m")


def test_no_escape_codes_when_not_a_terminal(tmp_path: Path):
    make_stub_repo(tmp_path, init=False)
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}  # only "not a terminal" keeps colour off
    for args in (("init", "stub/tipc.yaml"), ("update", "--diff"), ("update",)):
        proc = subprocess.run([sys.executable, "-m", "tipcgen", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert "\033[" not in proc.stdout + proc.stderr, args


def test_one_name_for_the_repository_root(tmp_path: Path):
    """--root everywhere; init's/update's --output/-o and lint's --repo-root are hidden old names that still work."""
    from conftest import tipcgen

    for path in (("init",), ("update",), ("lint",), ("run",), ("report",), ("accept",), ("doctor",), ("golden",)):
        shown = CliRunner().invoke(cli.app, [*path, "--help"], env={"NO_COLOR": "1", "COLUMNS": "200"}).output
        assert "--root" in shown and "--repo-root" not in shown, path
    assert "--output" not in CliRunner().invoke(cli.app, ["init", "--help"], env={"COLUMNS": "200"}).output
    desc = str(STUB / "tipc.yaml")
    tipcgen("init", desc, "--root", str(tmp_path / "new"), check=True)
    tipcgen("init", desc, "-o", str(tmp_path / "old"), check=True)
    new_files = sorted(p.relative_to(tmp_path / "new") for p in (tmp_path / "new").rglob("*") if p.is_file())
    assert new_files and new_files == sorted(p.relative_to(tmp_path / "old") for p in (tmp_path / "old").rglob("*") if p.is_file())
    both = tipcgen("init", desc, "--root", str(tmp_path / "a"), "--output", str(tmp_path / "b"))
    assert both.returncode == 2 and "name different folders" in both.stderr and not (tmp_path / "a").exists()
    config = next((tmp_path / "new" / "test_tipc" / "configs").rglob("train_infer_python.txt"))
    empty = tmp_path / "empty"
    empty.mkdir()
    by_root = tipcgen("lint", str(config), "--root", str(empty))
    assert by_root.returncode == 1 and "missing-script" in by_root.stdout, by_root.stdout
    assert (by_root.returncode, by_root.stdout) == (lambda p: (p.returncode, p.stdout))(
        tipcgen("lint", str(config), "--repo-root", str(empty)))


def test_help_lists_the_commands_in_the_order_a_user_meets_them_each_with_its_whole_sentence():
    shown = CliRunner().invoke(cli.app, ["--help"], env={"NO_COLOR": "1", "COLUMNS": "80"}).output
    listed = shown.split("Commands:", 1)[1]
    names = [line.split()[0] for line in listed.splitlines() if line.startswith("  ") and not line.startswith("   ")]
    assert names == list(cli.ORDER), names
    assert "..." not in listed and all(
        get_command(cli.app).commands[name].get_short_help_str(1000).endswith(".") for name in names)


def test_init_help_names_every_built_in_sample():
    from tipcgen.descriptor.samples import sample_names

    assert cli.SAMPLES.split(", ") == sample_names()
    shown = " ".join(CliRunner().invoke(cli.app, ["init", "--help"], env={"NO_COLOR": "1", "COLUMNS": "200"}).output.split())
    assert all(name in shown for name in sample_names()) and len(sample_names()) >= 2


def test_the_next_command_init_prints_works_with_several_configs(tmp_path: Path):
    """After init of a second model, `tipcgen run --mode ...` alone is refused (several configs): init names the
    --config of each model it rendered, and each printed command finds its config."""
    import shlex

    from conftest import tipcgen
    from tipcgen.configs.locate import find_config
    from tipcgen.core.errors import TipcgenError

    first = tipcgen("init", str(STUB / "tipc.yaml"), "--root", str(tmp_path), check=True).stdout
    assert first.rstrip().endswith(f"tipcgen run --mode lite_train_lite_infer --root {tmp_path}")
    second = tipcgen("init", "bert-sst2", "--root", str(tmp_path), check=True).stdout
    commands = [shlex.split(line) for line in second.split("Next:", 1)[1].splitlines() if line.strip()]
    assert len(commands) == 1 and commands[0][:2] == ["tipcgen", "run"], second
    with pytest.raises(TipcgenError):
        find_config(None, tmp_path)  # what the old "Next:" line ran into
    args = commands[0]
    config, root = args[args.index("--config") + 1], Path(args[args.index("--root") + 1])
    assert find_config(config, root) == Path("test_tipc/configs/bert_sst2/train_infer_python.txt")
