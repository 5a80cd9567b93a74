"""docs/CLI.md is what tipcgen/cli/reference.py writes from the commands' own --help (issue #57 item 5), and the
help speaks in placeholders a user reads: `-h`, MODE, CONFIG (no `<str>`, `<list[str]>`, `<float range>`)."""
from __future__ import annotations

import re

from conftest import ROOT, tipcgen


def test_the_committed_cli_page_is_current():
    from tipcgen.cli.reference import markdown

    page = (ROOT / "docs" / "CLI.md").read_text(encoding="utf-8")
    assert page == markdown(), "docs/CLI.md is stale: python -m tipcgen.cli.reference > docs/CLI.md"


def test_every_command_has_minus_h_and_names_its_values_in_capitals():
    from tipcgen.cli.app import ORDER

    for name in ORDER:
        short, long = tipcgen(name, "-h"), tipcgen(name, "--help")
        assert short.returncode == 0 and short.stdout == long.stdout, name
        assert not re.search(r"<(str|int|float|path|list\[|float range|int range)", short.stdout), (name, short.stdout)
    run = tipcgen("run", "-h").stdout
    assert "--mode MODE" in run and "--config CONFIG" in run and "--color [auto|always|never]" in run or \
        "--color <auto|always|never>" in run, run


def completions(command: str, option: str, text: str) -> list[str]:
    """What the shell completes for `tipcgen COMMAND --OPTION TEXT<TAB>`."""
    from tipcgen.cli import app

    cmd = app._command().commands[command]
    ctx = cmd.make_context(command, [], resilient_parsing=True)
    param = next(p for p in cmd.params if p.name == option)
    return [getattr(item, "value", item) for item in param.shell_complete(ctx, text)]


def test_mode_chain_and_sample_values_complete():
    from tipcgen.cli import app
    from tipcgen.format.words import MODES

    assert completions("run", "mode", "") == list(MODES)
    assert completions("run", "mode", "whole_i") == ["whole_infer"]
    assert "paddle2onnx" in completions("run", "chain", "p") and completions("run", "chain", "zz") == []
    assert completions("suite", "mode", "lite_train_w") == ["lite_train_whole_infer"]
    assert completions("init", "targets", "") == app.SAMPLES.split(", ")
    assert completions("lint", "format", "j") == ["json"]


def test_suite_completes_the_chains_it_runs():
    from tipcgen.suite.suite import chain_of_name

    assert sorted(completions("suite", "chain", "")) == sorted(set(chain_of_name().values()))
    assert completions("suite", "chain", "") == ["basic", "paddle2onnx", "dy2static", "fleet"]


def test_ctrl_c_at_news_prompt_is_interrupted_130_not_aborted_1(tmp_path):
    """On a terminal `new` asks for what is missing; Ctrl-C there was `Aborted!` and exit 1, where run says
    `interrupted` and 130. A real pty (pty.fork: the child's controlling terminal turns ^C into SIGINT)."""
    import os
    import pty
    import signal
    import sys
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: a terminal's foreground job
        try:
            os.chdir(tmp_path)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execvp(sys.executable, [sys.executable, "-m", "tipcgen", "new"])
        finally:
            os._exit(127)
    import select

    def read(wait: float) -> bytes | None:
        """What the terminal shows within ``wait`` seconds: b"" when nothing, None once the child has closed it."""
        if not select.select([fd], [], [], wait)[0]:
            return b""
        try:
            return os.read(fd, 4096) or None
        except OSError:
            return None

    out, ceiling = b"", time.monotonic() + 300
    while b"(--train)" not in out and time.monotonic() < ceiling:
        chunk = read(1.0)
        if chunk is None:
            break
        out += chunk
    assert b"(--train)" in out, out
    # One ^C, and again only if the child is still at its prompt 30 s later (a ^C typed before the prompt's read
    # set the terminal up can be lost, as a person would press it again); a ^C while it exits would kill it.
    ended = False
    while not ended and time.monotonic() < ceiling:
        os.write(fd, b"\x03")
        quiet = time.monotonic() + 30
        while time.monotonic() < quiet:
            chunk = read(1.0)
            if chunk is None:
                ended = True
                break
            if chunk:
                out, quiet = out + chunk, time.monotonic() + 30
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 130, out
    assert b"interrupted: nothing was written" in out and b"Aborted!" not in out
    assert not list(tmp_path.iterdir()), "nothing written"
