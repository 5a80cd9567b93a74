"""Hypothesis fuzz of `tipcgen lint` and `tipcgen import` over mutated corpus configs (issue 12).

Byte flips, inserted and deleted lines, other encodings, tabs, full-width colons, numbers of
thousands of digits, NUL bytes and file names that are not UTF-8, with strict UTF-8 output: the CLI
(its own ``main``, in this process, for speed) answers every one with exit code 0, 1 or 2 and never
with a traceback.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CORPUS, ROOT, fuzz_examples, run_in_process

CONFIGS = [ROOT / "test_tipc" / "configs" / "bert_sst2" / "train_infer_python.txt",
           *sorted(CORPUS.rglob("*train_infer_python*.txt"))[::25]]
NASTY_LINES = ["", "\t", "python\tpython", "gpu_list：0|-1", "trainer:null", "python:", "model_name",
               "--epochs:" + "9" * 4400, "===========================train_params===========================",
               "<<<<<<< ours", "=======", ">>>>>>> theirs", "##", "null:null", "\x00", "\ufeff", "\u3000",
               "--a:b:c", "key:" + "\U0001F600" * 3, "\x1b[31mred", "a" * 5000, "\r"]
ENCODINGS = ["utf-8", "utf-8-sig", "utf-16", "utf-32", "latin-1", "crlf"]
NAMES = ["c.txt", "bad\udcffname.txt", "spaced name.txt"]


@st.composite
def mutated_config(draw) -> tuple[str, bytes]:
    path = draw(st.sampled_from([p for p in CONFIGS if p.is_file()]))
    lines = path.read_text(encoding="utf-8").split("\n")
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["insert", "delete", "fullwidth", "tab", "huge"]))
        index = draw(st.integers(0, max(len(lines) - 1, 0)))
        if kind == "insert":
            lines.insert(index, draw(st.sampled_from(NASTY_LINES)))
        elif kind == "delete" and lines:
            del lines[index]
        elif lines and ":" in lines[index]:
            key, _, value = lines[index].partition(":")
            lines[index] = {"fullwidth": f"{key}：{value}", "tab": f"{key}\t:{value}",
                            "huge": f"{key}:{'1' * 4301}"}.get(kind, lines[index])
    text = "\n".join(lines)
    encoding = draw(st.sampled_from(ENCODINGS))
    data = text.replace("\n", "\r\n").encode() if encoding == "crlf" else text.encode(encoding, errors="replace")
    data = bytearray(data)
    for _ in range(draw(st.integers(0, 3))):
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return draw(st.sampled_from(NAMES)), bytes(data)


def run_cli(*args: str) -> tuple[int, str]:
    """The command in this process with strict UTF-8 stdout/stderr (conftest.run_in_process): exit code, stderr."""
    proc = run_in_process(list(args), ROOT, dict(os.environ))
    return proc.returncode, proc.stderr


@pytest.fixture(scope="module")
def scratch():
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder)


@settings(max_examples=fuzz_examples(120), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=mutated_config())
def test_lint_and_import_never_show_a_traceback(scratch: Path, case: tuple[str, bytes]):
    name, data = case
    path = os.fsencode(scratch) + b"/" + os.fsencode(name)
    with open(path, "wb") as handle:
        handle.write(data)
    shown = os.fsdecode(path)
    for args in (("lint", shown), ("lint", "--format", "json", shown), ("import", shown)):
        code, stderr = run_cli(*args)
        assert code in (0, 1, 2) and "Traceback" not in stderr, (args, code, stderr)
        if code == 2:
            assert stderr.startswith("error: "), stderr
