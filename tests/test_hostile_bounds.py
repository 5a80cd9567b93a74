"""Bounded everything and terminal text escaped at one place (issue 34, items 6 and 7 and "Smaller").

- every command prints through ``tipcgen/cli/echo.py`` (``core.text.shown``): no other module of the
  package prints, and a file name, a value or a path holding terminal escapes reaches ``lint`` and
  ``import`` output as ``\\x1b`` text;
- integers read from files are ASCII digits, counted before ``int`` (``lines[<5000 digits>]`` in a
  repository's runner, full-width or any other script's digits);
- the answers file's descriptor references stay inside the repository (no absolute path, no ``..`` to a
  file init did not render from, no link out), in bounded number and length;
- ``lint`` refuses exactly the model names ``init`` and ``run`` refuse (``descriptor.schema.is_model_name``);
- a quoted value is shortened in an error line (a 5,000-character ``gpu_list`` entry);
- a 422-byte ``.pt`` holding a stride-0 view of 2**28 floats is refused before the allocation; its peak
  memory is measured (``getrusage(RUSAGE_CHILDREN)`` of a small parent that runs the CLI).
"""
from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
import unicodedata
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, STUB, fuzz_examples, nodes, run_in_process, tipcgen
from tipcgen.core import inputs, text
from tipcgen.descriptor import answers
from tipcgen.descriptor.schema import MODEL_NAME_RE, is_model_name
from tipcgen.format import families

CONFIG = ROOT / "test_tipc" / "configs" / "bert_sst2" / "train_infer_python.txt"
# What a terminal acts on: ESC (CSI/OSC), BEL, CR, backspace, C1 controls (8-bit CSI), line separators, bidi.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
PAYLOAD = "\x1b]0;pwned\x07\x1b[2J\x9b31m\r\u202e"
SETTINGS = settings(max_examples=fuzz_examples(60), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
# Every decimal digit of every script but ASCII's (str.isdigit and int() take them; bash does not).
UNICODE_DIGITS = [chr(c) for c in range(0x80, sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Nd"]


def _raw(out: str) -> list[str]:
    return sorted({f"U+{ord(c):04X}" for c in RAW.findall(out)})


# ---------------------------------------------------------------- item 7: one escape for every command


def _printing_calls(path: Path) -> list[str]:
    """Calls in a module that write to the terminal themselves: typer.echo/secho, click.echo, print, sys.std*.write."""
    found = []
    for node in nodes(path):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = ast.unparse(func)
        if name in ("print", "typer.echo", "typer.secho", "click.echo", "click.secho", "sys.stdout.write",
                    "sys.stderr.write", "typer.style"):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    return found


def test_no_module_but_the_echo_helper_prints():
    """Every command's text reaches the terminal through tipcgen/cli/echo.py, the one place that escapes it
    (the shipped scripts are copied into test_tipc/ and run there: they print their own results)."""
    package = ROOT / "tipcgen"
    calls = [call for path in sorted(package.rglob("*.py"))
             if path.name != "echo.py" and "shipped" not in path.parts for call in _printing_calls(path)]
    assert not calls, "print through tipcgen.cli.echo.echo instead:\n" + "\n".join(calls)


def test_every_command_module_prints_through_echo():
    """The enumeration: every command of the Typer app is defined in a module that imports the echo helper."""
    from typer.main import get_command

    from tipcgen.cli.app import app

    modules = set()

    def walk(command) -> None:
        if hasattr(command, "commands"):
            for sub in command.commands.values():
                walk(sub)
        else:
            modules.add(sys.modules[command.callback.__module__])

    walk(get_command(app))
    assert len(modules) >= 4
    for module in modules:
        assert getattr(module, "echo", None) is not None and module.echo.__module__ == "tipcgen.cli.echo", module


@SETTINGS
@given(st.text(alphabet=st.sampled_from(list(PAYLOAD) + ["a", "\n", "\t", "é", "\u2069", "\x85", "\ue000"]),
               max_size=60))
def test_shown_leaves_no_raw_control_but_tipcgens_own_codes(value: str):
    out = text.shown(value + text.paint("PASSED", "green"))
    assert out.endswith("\033[32mPASSED\033[0m")
    assert not _raw(out[: -len("\033[32mPASSED\033[0m")]), out
    assert "\033" not in text.shown(value)


def test_a_forged_marker_stays_text():
    """tipcgen's own codes hold a key drawn by each process: a marker spelt in a file is not one."""
    fake = "\ue000" + "0" * 32 + "red\ue001"
    assert text.shown(fake) == fake
    assert text.shown(text.code("red")) == "\033[31m"


def _hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose config folder is named with terminal escapes, and a config lint has findings on."""
    folder = tmp_path / "repo" / "test_tipc" / "configs" / f"m{PAYLOAD}"
    folder.mkdir(parents=True)
    config = folder / "train_infer_python.txt"
    config.write_bytes(CONFIG.read_bytes().replace(b"\n", b"\r\n"))  # crlf: an error finding on every line
    return tmp_path / "repo", config


def test_lint_shows_a_hostile_folder_name_escaped(tmp_path: Path):
    repo, _ = _hostile_repo(tmp_path)
    for args in ((str(repo / "test_tipc" / "configs"),), (str(repo / "test_tipc" / "configs"), "--format", "json")):
        proc = run_in_process(["lint", *args], ROOT, dict(os.environ))
        out = proc.stdout + proc.stderr
        assert proc.returncode == 1 and "crlf" in out, out
        assert not _raw(out), _raw(out)
        assert "\\x1b]0;pwned\\x07" in out or "\\u001b]0;pwned\\u0007" in out
    json.loads(proc.stdout)  # the JSON stays JSON


def test_import_shows_a_hostile_output_name_escaped(tmp_path: Path):
    output = tmp_path / f"out{PAYLOAD}.yaml"
    proc = run_in_process(["import", str(CONFIG), "-o", str(output)], ROOT, dict(os.environ))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and output.is_file(), out
    assert not _raw(out), _raw(out)
    assert "\\x1b]0;pwned" in out


@SETTINGS
@given(st.text(alphabet=st.sampled_from(list(PAYLOAD) + ["x", "\x85", "\u2028", "\x00"]), min_size=1, max_size=12))
def test_lint_of_any_escaped_value_prints_no_raw_control(tmp_path_factory, value: str):
    value = value.replace("\x00", "") or "\x1b"
    path = tmp_path_factory.mktemp("cfg") / f"train{value}.txt"  # the file name lint prints with each finding
    lines = CONFIG.read_text(encoding="utf-8").split("\n")
    lines[1] = f"model_name:{value}"  # a model name lint refuses, quoted in the finding
    lines[3] = f"gpu_list:0|{value}"
    path.write_text("\n".join(lines), encoding="utf-8")
    proc = run_in_process(["lint", str(path)], ROOT, dict(os.environ))
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    assert not _raw(proc.stdout + proc.stderr)


# ---------------------------------------------------------------- integers parsed from files


def _runner(index: str) -> str:
    return (f'lines=(x)\nmodel_name=$(func_parser_value "${{lines[{index}]}}")\n'
            f'python=$(func_parser_value "${{lines[2]}}")\n')


def test_a_runner_reading_a_5000_digit_line_is_no_traceback(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "test_tipc" / "configs" / "m").mkdir(parents=True)
    (repo / "test_tipc" / "test_train_inference_python.sh").write_text(_runner("9" * 5000))
    config = repo / "test_tipc" / "configs" / "m" / "train_infer_python.txt"
    config.write_bytes(CONFIG.read_bytes())
    for args in (["lint", str(config), "--format", "json"], ["import", str(config), "-o", str(tmp_path / "t.yaml")]):
        proc = run_in_process(args, ROOT, dict(os.environ))
        assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr and "ValueError" not in proc.stderr, \
            proc.stderr[-2000:]
    assert families.runner_reads(_runner("9" * 5000)).reads == {(2, "value")}


@SETTINGS
@given(st.lists(st.sampled_from(UNICODE_DIGITS), min_size=1, max_size=4), st.sampled_from(["", "1", "12"]))
def test_digits_of_other_scripts_are_no_line_number(digits: list[str], ascii_head: str):
    index = ascii_head + "".join(digits)
    reads = families.runner_reads(_runner(index))
    assert reads is not None and reads.reads == {(2, "value")}, (index, reads)
    assert inputs.whole_number(index) is None


@SETTINGS
@given(st.one_of(st.integers(0, 10**9 - 1).map(str), st.text(min_size=1, max_size=20),
                 st.integers(1, 6000).map(lambda n: "7" * n)))
def test_whole_number_takes_only_bounded_ascii_digits(value: str):
    number = inputs.whole_number(value, 10**6)
    if re.fullmatch(r"[0-9]{1,7}", value, re.ASCII) and int(value) <= 10**6:
        assert number == int(value)
    else:
        assert number is None


def test_a_descriptor_text_line_index_of_5000_digits_or_fullwidth_is_a_field_error(tmp_path: Path):
    base = yaml.safe_load((STUB / "tipc.yaml").read_text())
    for index in ("9" * 5000, "\uff11\uff12", "\u0661"):
        desc = {**base, "text": {"lines": {index: "x"}}}
        path = tmp_path / "tipc.yaml"
        path.write_text(yaml.safe_dump(desc, allow_unicode=True))
        proc = tipcgen("init", str(path), "--output", str(tmp_path / "out"))
        assert proc.returncode == 2 and "text.lines" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert max(map(len, proc.stderr.splitlines())) < 400


# ---------------------------------------------------------------- the answers file's references


def _answers(descriptor: str, others: list[str] = ()) -> str:
    return yaml.safe_dump({"tipcgen_version": "0.1.0", "descriptor": descriptor, "descriptor_sha256": "0" * 64,
                           "devices": "all", "files": ["x"],
                           "others": [{"descriptor": o, "descriptor_sha256": "0" * 64, "devices": "all"} for o in others]})


REFERENCES = st.one_of(
    st.builds(lambda n: "../" * n + "outside/secret.yaml", st.integers(1, 6)),
    st.builds(lambda n, m: "a/" * m + "../" * (n + m) + "outside/secret.yaml", st.integers(1, 3), st.integers(0, 3)),
    st.just("ABSOLUTE"), st.just("link/secret.yaml"), st.just("linkdir/../../outside/secret.yaml"))


@SETTINGS
@given(REFERENCES, st.booleans())
def test_no_answers_reference_loads_a_descriptor_outside_the_repository(tmp_path_factory, reference: str,
                                                                       as_other: bool):
    tmp_path = tmp_path_factory.mktemp("answers")
    secret = tmp_path / "outside" / "secret.yaml"
    secret.parent.mkdir()
    secret.write_text((STUB / "tipc.yaml").read_text())
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "link").symlink_to(secret.parent)
    (repo / "linkdir").mkdir()
    reference = str(secret) if reference == "ABSOLUTE" else reference
    text = _answers("bert-sst2", [reference]) if as_other else _answers(reference)
    (repo / ".tipcgen-answers.yml").write_text(text)
    for args in (("update", "--root", str(repo), "--diff"), ("init", "bert-sst2", "--root", str(repo))):
        proc = tipcgen(*args)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (reference, proc.stdout, proc.stderr)
        assert "stub" not in proc.stdout, proc.stdout  # nothing of the outside descriptor was rendered


def test_the_answers_file_is_bounded(tmp_path: Path):
    with pytest.raises(Exception, match="at most"):
        answers.parse(_answers("bert-sst2", ["bert-sst2"] * (answers.MAX_MODELS + 1)), "a")
    with pytest.raises(Exception, match="characters long"):
        answers.parse(_answers("a" * 5000 + ".yaml"), "a")
    assert answers.parse(_answers("models/m/tipc.yaml", ["bert-sst2"]), "a").others[0][0] == "bert-sst2"


# ---------------------------------------------------------------- one model_name rule


@SETTINGS
@given(st.one_of(st.from_regex(MODEL_NAME_RE, fullmatch=True).filter(lambda s: s.strip() == s and len(s) < 80),
                 st.text(alphabet="ab1._-/ :\u00e9\uff11\n", min_size=1, max_size=12)))
def test_lint_refuses_exactly_the_model_names_run_refuses(tmp_path_factory, name: str):
    name = name.strip().replace("\n", "") or "."
    path = tmp_path_factory.mktemp("cfg") / "train_infer_python.txt"
    lines = CONFIG.read_text(encoding="utf-8").split("\n")
    lines[1] = f"model_name:{name}"
    path.write_text("\n".join(lines), encoding="utf-8")
    from tipcgen.configs.lint import lint_report

    flagged = any(f.rule == "model-name" for f in lint_report([str(path)]))
    bash = subprocess.run(["bash", "-c", f'[[ $1 =~ {MODEL_NAME_RE.pattern} ]] && [[ $1 != *..* ]]', "_", name])
    assert flagged == (not is_model_name(name)) == (bash.returncode != 0), name


# ---------------------------------------------------------------- quoted values are short


@pytest.mark.parametrize("length", [5000, 100_000])
def test_a_long_gpu_list_entry_is_a_short_error_line(tmp_path: Path, length: int):
    desc = yaml.safe_load((STUB / "tipc.yaml").read_text())
    desc["gpu_list"] = ["x" * length]
    path = tmp_path / "tipc.yaml"
    path.write_text(yaml.safe_dump(desc))
    proc = tipcgen("init", str(path), "--output", str(tmp_path / "out"))
    assert proc.returncode == 2 and "gpu_list" in proc.stderr, proc.stderr
    assert max(map(len, proc.stderr.splitlines())) < 400 and f"{length} characters" in proc.stderr


def test_a_long_value_is_a_short_lint_line(tmp_path: Path):
    path = tmp_path / "train_infer_python.txt"
    lines = CONFIG.read_text(encoding="utf-8").split("\n")
    lines[1] = "model_name:" + "/" * 5000
    lines[40] = lines[40].split(":")[0] + ":" + "q" * 5000
    path.write_text("\n".join(lines), encoding="utf-8")
    proc = run_in_process(["lint", str(path)], ROOT, dict(os.environ))
    assert "model-name" in proc.stdout, proc.stdout
    assert max(map(len, (proc.stdout + proc.stderr).splitlines())) < 600


@SETTINGS
@given(st.text(max_size=300), st.integers(5, 200))
def test_quoted_is_one_bounded_line(value: str, limit: int):
    out = text.quoted(value, limit)
    assert "\n" not in out and len(out) <= 4 * limit + 40
    if len(value) > limit:
        assert f"({len(value)} characters)" in out


# ---------------------------------------------------------------- the stride-0 expansion

MEASURE = textwrap.dedent("""
    import resource, subprocess, sys
    proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB, the CLI's own (this parent is small)
    print(peak, proc.returncode)
    sys.stderr.write(proc.stderr[-3000:])
""")


def test_a_stride0_view_of_2_28_floats_is_refused_by_its_storage_size(tmp_path: Path):
    from test_hostile_align import _tensor, torch_pickle, torch_zip

    source = torch_zip(tmp_path / "stride0.pt", torch_pickle({"w": _tensor("0", 1, (1 << 14, 1 << 14), (0, 0))}),
                       {"0": b"\0\0\0\0"})
    assert source.stat().st_size < 1024
    output = tmp_path / "out.pdparams"
    cli = [sys.executable, "-m", "tipcgen", "align", "convert", str(source), "--rules", "bn-cnn", "-o", str(output)]
    proc = subprocess.run([sys.executable, "-c", MEASURE, *cli], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600,
                          preexec_fn=lambda: __import__("resource").setrlimit(
                              __import__("resource").RLIMIT_AS, (3 << 30, 3 << 30)))  # the old 4.5 GB: a MemoryError
    peak_kib, code = map(int, proc.stdout.split())
    assert code == 2 and "expands its storage of 4 bytes" in proc.stderr, proc.stderr
    assert not output.exists()
    assert peak_kib < 400 * 1024, f"peak {peak_kib // 1024} MiB"


def test_an_honest_small_broadcast_still_converts(tmp_path: Path):
    from test_hostile_align import _tensor, torch_pickle, torch_zip

    source = torch_zip(tmp_path / "b.pt", torch_pickle({"w": _tensor("0", 4, (64, 4), (0, 1))}),
                       {"0": b"\0" * 16})
    proc = tipcgen("align", "convert", str(source), "--rules", "bn-cnn", "-o", str(tmp_path / "o.pdparams"))
    assert "expands" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    if importlib.util.find_spec("paddle") is not None:
        assert proc.returncode == 0 and (tmp_path / "o.pdparams").is_file(), proc.stdout + proc.stderr
    else:  # the paddle-free layer: one clear error before the write (it was a ModuleNotFoundError traceback)
        assert proc.returncode == 2 and "needs paddle, which is not installed" in proc.stderr, proc.stderr
        assert "pip install paddlepaddle==" in proc.stderr and not (tmp_path / "o.pdparams").exists()


def test_a_descriptor_kept_outside_is_rendered_by_name_once_edited(tmp_path: Path):
    """The user's own flow stays: init from a descriptor outside the repository, edit it, init it by name
    again. update, which only has the answers file's word for it, loads it only as init rendered it."""
    repo, mine = tmp_path / "repo", tmp_path / "mine" / "tipc.yaml"
    mine.parent.mkdir()
    mine.write_text((STUB / "tipc.yaml").read_text())
    tipcgen("init", str(mine), "--root", str(repo), check=True)
    assert tipcgen("update", "--root", str(repo), "--diff").returncode == 0
    mine.write_text(mine.read_text().replace("lite_train_lite_infer: 1,", "lite_train_lite_infer: 2,"))
    proc = tipcgen("update", "--root", str(repo))
    assert proc.returncode == 2 and "sha256 differs" in proc.stderr and "tipcgen init PATH" in proc.stderr, proc.stderr
    proc = tipcgen("init", str(mine), "--root", str(repo))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert tipcgen("update", "--root", str(repo), "--diff").returncode == 0
