"""Hostile descriptors for `init` (issue 26, class 8): the descriptor's env: refuses every class of
variable that makes a program load or run code (the dynamic loader's, Python's start-up ones, bash's,
other interpreters', the C library's) and the runner's own TIPC_*, naming the variable and why, exit 2,
nothing written; variables that only tune a run pass. (init's other inputs: tests/test_integrity_errors.py.)
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conftest import STUB, tipcgen

DENIED = ("LD_AUDIT", "LD_PRELOAD", "LD_LIBRARY_PATH", "DYLD_INSERT_LIBRARIES", "PYTHONHOME", "PYTHONSTARTUP",
          "PYTHONPATH", "PYTHONWARNINGS", "PYTHONBREAKPOINT", "PYTHONUSERBASE", "BASH_ENV", "ENV", "BASH_FUNC_ls",
          "PS4", "SHELLOPTS", "NODE_OPTIONS", "PERL5OPT", "GCONV_PATH", "GLIBC_TUNABLES", "OPENSSL_CONF", "PATH",
          "HOME", "TIPC_RUN_ID", "TIPC_DATA_DIR")
ALLOWED = ("FLAGS_enable_pir_api", "PYTHONHASHSEED", "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "MY_SETTING")


def _descriptor(tmp_path: Path, env: dict) -> Path:
    doc = yaml.safe_load((STUB / "tipc.yaml").read_text())
    doc["env"] = env
    path = tmp_path / "tipc.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("name", DENIED)
def test_env_refuses_each_class_of_code_loading_variable(tmp_path: Path, name: str):
    out = tmp_path / "out"
    proc = tipcgen("init", str(_descriptor(tmp_path, {name: "/tmp/evil.so"})), "--output", str(out))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"env.{name}: {name} may not be set here: " in proc.stderr, proc.stderr
    assert proc.stderr.count("error:") == 1 and not out.exists()


def test_env_keeps_variables_that_only_tune_a_run(tmp_path: Path):
    proc = tipcgen("init", str(_descriptor(tmp_path, {name: "1" for name in ALLOWED})), "--output",
                   str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr


def test_a_variable_name_with_escapes_never_reaches_the_terminal(tmp_path: Path):
    for env in ({"A\x1b]0;x\x07": "1"}, {5: "x"}, {"A B": "1"}):
        proc = tipcgen("init", str(_descriptor(tmp_path, env)), "--output", str(tmp_path / "out"))
        assert proc.returncode == 2 and "\x1b" not in proc.stderr and "\x07" not in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists()
