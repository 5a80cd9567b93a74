"""docs/CLI.md, generated: the exit codes, then every command's --help as the CLI prints it (at a fixed width).

tests/test_cli_reference.py checks that the committed page is what this writes; regenerate it with
``python -m tipcgen.cli.reference > docs/CLI.md``. The README's command table stays short and links here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:  # typer vendors click (typer._click): its Command, as typer.main.get_command builds them
    from typer._click import Command

WIDTH = 100  # columns of the help text on the page

EXIT_CODES = """| code | meaning |
| --- | --- |
| 0 | done: every step passed (`run`, `suite`), no error finding (`lint`), no failed check (`doctor`, `accept`), no conflict (`update`) |
| 1 | the command ran and something it checks failed: a step (`run`, `suite`), an error finding (`lint`), a check (`doctor`), an item (`accept`), a conflict (`update`) |
| 2 | a mistake to fix before anything runs: an unknown option or value, a missing file or folder (`--root` included), a config or descriptor that cannot be read, a refused run; one message naming what, where and how to fix it, never a traceback |
| 128 + N | stopped by signal N while it ran: 130 for Ctrl-C (SIGINT), 143 for SIGTERM, 129 for SIGHUP; `run` and `suite` still write their summary, a step cut short with the status `interrupted` (JUnit: an `<error>`), the verdict INTERRUPTED |
"""


def markdown() -> str:
    """The whole page."""
    from tipcgen.cli.app import ORDER, _command

    group = _command()
    parts = ["# The command line\n",
             "Generated from the commands' own `--help` by `tipcgen/cli/reference.py` (regenerate: "
             "`python -m tipcgen.cli.reference > docs/CLI.md`; tests/test_cli_reference.py checks it is current).\n",
             "## Exit codes\n", EXIT_CODES,
             "## tipcgen\n", _help(group, [], "tipcgen")]
    for name in ORDER:
        command = group.commands[name]
        parts += [f"## tipcgen {name}\n", _help(command, [], f"tipcgen {name}")]
        subs: dict[str, Command] = getattr(command, "commands", {})  # a group's (align's, repro's); none for the others
        for sub in sorted(subs):
            parts += [f"### tipcgen {name} {sub}\n", _help(subs[sub], [], f"tipcgen {name} {sub}")]
    return "\n".join(parts)


def _help(command: Command, args: list[str], prog: str) -> str:
    # help_option_names as the app's context gives them: click keeps a command's help option once made
    ctx = typer.Context(command, info_name=prog, terminal_width=WIDTH, max_content_width=WIDTH,
                        help_option_names=["-h", "--help"])
    text = command.get_help(ctx)
    return "```text\n" + "\n".join(line.rstrip() for line in text.splitlines()) + "\n```\n"


if __name__ == "__main__":
    from tipcgen.cli.echo import echo

    echo(markdown(), nl=False)
