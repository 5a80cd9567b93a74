"""Many CLI invocations in one real process: `tipcgen.cli.main` (the console script's entry point) runs
once per argument list, as a user would run it, without paying Python's and numpy's start-up each time."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT, chain_env

_DRIVER = """
import contextlib, io, json, sys
from tipcgen.cli import main
out = []
for argv in json.loads(sys.stdin.read()):
    sys.argv = ["tipcgen", *argv]
    err, out_text = io.StringIO(), io.StringIO()
    code = None
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out_text):
        try:
            main()
        except SystemExit as exc:
            code = exc.code
        except BaseException as exc:
            code = "raised " + type(exc).__name__
    out.append({"code": code, "stdout": out_text.getvalue(), "stderr": err.getvalue()})
print(json.dumps(out))
"""


def run_cli_cases(cases: list[list[str]]) -> list[dict]:
    """{code, stdout, stderr} per argument list; code is the exit code, or 'raised X' for an exception."""
    proc = subprocess.run([sys.executable, "-c", _DRIVER], input=json.dumps(cases), capture_output=True, text=True,
                          cwd=ROOT, env=chain_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


