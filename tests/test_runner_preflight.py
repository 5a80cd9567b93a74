"""test_tipc/tipc_preflight.py, the checks every script makes before any step (#58 item 3): the config against its
layout and its model's keys, the run folder made safe to write. In process, on configs and run folders no honest
repository has (generated), and as the runner calls it: a refusal is one message and exit code 2, never a traceback,
never a hang, never a write through a link."""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, fuzz_examples
from tipcgen import descriptor
from tipcgen.format import paths, words
from tipcgen.render import repository
from tipcgen.render.shipped import tipc_preflight
from tipcgen.render.shipped.tipc_preflight import Refused

SAMPLE = ROOT / "sample_models" / "bert-sst2" / "tipc.yaml"


@functools.lru_cache(maxsize=1)
def _rendered() -> tuple[dict, str]:
    files = repository.render_repository([descriptor.load(SAMPLE)])
    return json.loads(files[paths.LAYOUTS_JSON]), files[paths.config_rel("bert_sst2")]


def _check(tmp_path: Path, text: str | bytes) -> str:
    config = tmp_path / "c.txt"
    config.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape"))
    return tipc_preflight.check(str(config), words.LITE_TRAIN_LITE_INFER, *words.MODES, known=_rendered()[0])


def _table(out: str) -> dict:
    """The table as the runner reads it (tipc_read_table): each line `what name value`."""
    table: dict = {"slot": {}, "section": {}, "line": {}}
    for line in out.split("\n"):  # bash's read ends a line at a newline alone
        what, name, value = (line.split(" ", 2) + [""])[:3]
        if what == "layout":
            table["layout"] = (name, int(value))
        else:
            table[what][name] = value
    return table


def test_the_rendered_config_is_read_with_its_tables_and_sections(tmp_path: Path):
    known, config = _rendered()
    table = _table(_check(tmp_path, config))
    assert table["layout"] == ("standard", 51) and table["slot"]["model_name"] == "1"
    assert table["slot"] == {name: str(index) for name, index in known["layouts"][0]["slots"].items()}
    assert table["section"]["result_check_params:compare"] == "test_tipc/compare_results.py"


@pytest.mark.parametrize("index", range(51))
@pytest.mark.parametrize("how", ["deleted", "doubled"])
def test_any_line_of_the_layout_deleted_or_doubled_is_refused_naming_a_line(tmp_path: Path, index: int, how: str):
    """Every later value would be read from the wrong line: the check must fire on each, naming the file (but for a
    doubled line at or after the last keyed one, bert-sst2's --benchmark: nothing after it is read from a wrong line
    but the null filler, infer_param, which then passes that flag again)."""
    known, text = _rendered()
    lines = text.splitlines()
    if how == "doubled" and index >= max(at for at, _ in known["models"]["bert_sst2"]):
        return
    lines[index:index + 1] = [] if how == "deleted" else [lines[index]] * 2
    with pytest.raises(Refused) as refused:
        _check(tmp_path, "\n".join(lines) + "\n")
    assert refused.value.what.startswith(str(tmp_path / "c.txt")) and refused.value.hint


def _mutations() -> st.SearchStrategy:
    line = st.one_of(st.text(max_size=40), st.sampled_from(["##", "===x===", "<<<<<<< ours", "=======", "a\r",
                                                            "key\uff1avalue", " --flag:1", "--flag: 1", "null:null"]))
    return st.lists(st.tuples(st.integers(0, 70), st.sampled_from(["insert", "delete", "replace"]), line), max_size=4)


@settings(max_examples=fuzz_examples(200), deadline=None)
@given(edits=_mutations(), raw=st.binary(max_size=30))
def test_any_config_is_read_or_refused_with_a_message_never_a_crash(tmp_path_factory, edits, raw):
    lines = _rendered()[1].splitlines()
    for at, how, text in edits:
        at %= len(lines) + 1
        if how == "insert":
            lines.insert(at, text)
        elif at < len(lines):
            lines[at:at + 1] = [] if how == "delete" else [text]
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape") + raw
    try:
        out = _check(tmp_path_factory.mktemp("c"), data)
    except Refused as refused:
        assert refused.what and refused.hint
        return
    table = _table(out)  # what the runner reads: one word for each name, a number for each index
    assert table["layout"][0] == "standard" and all(value.isdigit() for value in table["slot"].values())
    assert all(" " not in name and "\n" not in value for name, value in table["section"].items())


def test_an_untouched_config_with_honest_variations_is_read(tmp_path: Path):
    """What must not fire: blank lines anywhere, trailing whitespace, a null key or value where the layout allows it,
    values with ':' in them, a flag renamed consistently is not (it is a descriptor change)."""
    lines = _rendered()[1].splitlines()
    spaced = []
    for line in lines:
        spaced += [line + "  \t", ""]
    assert _table(_check(tmp_path, "\n".join(spaced)))["layout"] == ("standard", 51)
    lines[12] = lines[12].split(":", 1)[0] + ":http://host:8080/data"  # a value with ':' (the runner keeps it whole)
    assert _table(_check(tmp_path, "\n".join(lines) + "\n"))["slot"]["train_param"] == "12"


def _run(tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    script = tmp_path / "tipc_preflight.py"
    if not script.exists():
        script.write_text((ROOT / "test_tipc" / paths.TIPC_PREFLIGHT).read_text())
        (tmp_path / "tipc_layouts.json").write_text(json.dumps(_rendered()[0]))
    return subprocess.run([sys.executable, "-I", "-S", str(script), *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("args", [[], ["nope"], ["check"], ["check", "a"], ["open", "a"], ["lines", "c", "x"],
                                  ["sections", "c", "x"], ["sections", "c"], ["start", "r"], ["start", "r", "p", "c"],
                                  ["links", "a"], ["layout", "a", "b"]])
def test_a_wrong_call_prints_the_usage_and_exits_2(tmp_path: Path, args: list[str]):
    proc = _run(tmp_path, *args)
    assert proc.returncode == 2 and "usage" not in proc.stdout and "check CONFIG" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_tables_are_a_message_naming_the_fix(tmp_path: Path):
    _run(tmp_path, "links", "x", "y")
    (tmp_path / "tipc_layouts.json").write_text("{not json")
    proc = _run(tmp_path, "check", "c.txt", words.WHOLE_INFER, words.WHOLE_INFER)
    assert proc.returncode == 2 and "tipc_layouts.json" in proc.stderr and "tipcgen init" in proc.stderr
    assert "Traceback" not in proc.stderr


def _run_folder(tmp_path: Path) -> Path:
    run = tmp_path / "test_tipc/output/m/mode"
    run.mkdir(parents=True)
    (run / "summary.json").write_text("{}")
    (run / "model.pdparams").write_bytes(b"\x80weights")
    return run


@pytest.mark.parametrize("lock", ["garbage", "fifo", "zero", "huge", "folder", "ours", "dead"])
def test_a_lock_left_there_never_hangs_or_crashes_the_start(tmp_path: Path, lock: str):
    """A lock record in any state: read at most its first 64 KiB, a FIFO or device never opened; a record of this
    run (TIPC_RUN_ID) or of a dead process is no obstacle."""
    run = _run_folder(tmp_path)
    path = tmp_path / "test_tipc/output/m/mode.lock"
    if lock == "garbage":
        path.write_bytes(os.urandom(256))
    elif lock == "fifo":
        os.mkfifo(path)
    elif lock == "zero":
        path.symlink_to("/dev/zero")
    elif lock == "huge":
        path.write_text('{"pid": 4194304' + " " * 10_000_000 + "}")  # over pid_max: nobody
    elif lock == "folder":
        path.mkdir()
    elif lock == "ours":
        path.write_text(json.dumps({"pid": os.getpid(), "run_id": "r1"}))
    else:
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
        path.write_text(json.dumps({"pid": int(dead.stdout), "run_id": "r0"}))
    proc = _run(tmp_path, "start", "test_tipc/output/m/mode", sys.executable, "c.txt", "m", env={"TIPC_RUN_ID": "r1"})
    assert proc.returncode == 0, proc.stderr
    assert _records(proc.stdout)["gpus"].isdigit() and not run.exists()
    assert sorted(p.name for p in run.with_name("mode.previous").iterdir()) == ["summary.json"]


def test_a_live_run_holding_the_folder_stops_the_start_and_nothing_moves(tmp_path: Path):
    run = _run_folder(tmp_path)
    (tmp_path / "test_tipc/output/m/mode.lock").write_text(json.dumps({"pid": os.getpid(), "run_id": "other"}))
    proc = _run(tmp_path, "start", "test_tipc/output/m/mode", sys.executable, "c.txt", "m", env={"TIPC_RUN_ID": "mine"})
    assert proc.returncode == 2 and f"pid {os.getpid()}" in proc.stderr and f"kill {os.getpid()}" in proc.stderr
    assert (run / "model.pdparams").exists() and not run.with_name("mode.previous").exists()


@pytest.mark.parametrize("where", ["test_tipc", "test_tipc/output", "test_tipc/output/m", "test_tipc/output/m/mode",
                                   "test_tipc/output/m/mode.previous"])
def test_a_link_on_the_way_is_refused_and_its_target_untouched(tmp_path: Path, where: str):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "theirs.pdparams").write_bytes(b"\x80keep")
    if where.endswith(".previous"):
        _run_folder(tmp_path)
    link = tmp_path / where
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    proc = _run(tmp_path, "start", "test_tipc/output/m/mode", sys.executable, "c.txt", "m")
    assert proc.returncode == 2 and f"{where} is a symbolic link to {outside}" in proc.stderr, proc.stderr
    assert "write and delete through no link" in proc.stderr and "Traceback" not in proc.stderr
    assert [p.name for p in outside.iterdir()] == ["theirs.pdparams"]


def test_a_file_where_the_previous_run_goes_is_refused(tmp_path: Path):
    run = _run_folder(tmp_path)
    run.with_name("mode.previous").write_text("mine")
    proc = _run(tmp_path, "start", "test_tipc/output/m/mode", sys.executable, "c.txt", "m")
    assert proc.returncode == 2 and "is a file, where the scripts keep the previous run's folder" in proc.stderr
    assert run.with_name("mode.previous").read_text() == "mine" and (run / "model.pdparams").exists()


def _records(out: str) -> dict[str, str]:
    """start's records (`WHAT - VALUE`) by WHAT (env: its words, joined by spaces)."""
    records: dict[str, str] = {}
    assert out.splitlines()[-1] == "end - 0", out  # the last record: the scripts refuse an answer without it
    for line in out.splitlines()[:-1]:
        what, dash, value = line.split(" ", 2)
        assert dash == "-", line
        records[what] = f"{records[what]} {value}" if what in records else value
    return records


def test_the_cuda_count_is_the_override_or_none_without_nvidia_smi(tmp_path: Path):
    assert _records(_run(tmp_path, "start", "out", sys.executable, "c.txt", "m", env={"TIPC_GPU_COUNT": "3"}).stdout) == {
        "timeout": "600", "note": "", "gpus": "3"}
    bare = {"PATH": str(tmp_path / "empty"), "TIPC_GPU_COUNT": ""}
    assert _records(_run(tmp_path, "start", "out", sys.executable, "c.txt", "m", env=bare).stdout)["gpus"] == "0"


@pytest.mark.parametrize("values, bad", [("True|False", None), ("true", None), ("gpu|cpu", None), ("False", None),
                                         ("null", None), ("True|Flase", "Flase"), ("npu", "npu"), ("True|", None), ("|cpu", "")])
def test_an_inference_device_the_runner_cannot_run_is_refused_before_the_training(tmp_path: Path, values: str,
                                                                                  bad: str | None):
    """Upstream's runners skip such a value with a line of output; the runner used to fail its inference after the
    training, eval and export: it is refused first, naming the line (non-blank line 41 of the standard layout)."""
    lines = _rendered()[1].splitlines()
    assert lines[40].startswith("--use_gpu:")
    lines[40] = "--use_gpu:" + values
    if bad is None:
        assert _table(_check(tmp_path, "\n".join(lines) + "\n"))["layout"] == ("standard", 51)
        return
    with pytest.raises(Refused) as refused:
        _check(tmp_path, "\n".join(lines) + "\n")
    assert refused.value.what.endswith(f"inference device value '{bad}' on non-blank line 41 is neither True/gpu nor "
                                       "False/cpu") and "False or cpu" in refused.value.hint


@pytest.mark.parametrize("mode, words_said", [("lite_train_infer", ["legacy name", "use lite_train_lite_infer"]),
                                              ("infer", ["legacy name", "use whole_infer"]),
                                              ("nope", ["unknown mode 'nope'", "use one of: lite_train_lite_infer"]),
                                              ("", ["unknown mode ''"])])
def test_a_mode_the_script_does_not_run_is_refused_by_name_before_the_config_is_read(tmp_path: Path, mode: str,
                                                                                     words_said: list[str]):
    for command in ("open", "check"):
        with pytest.raises(Refused) as refused:
            getattr(tipc_preflight, "open_config" if command == "open" else command)(
                str(tmp_path / "missing.txt"), mode, *words.MODES, known=_rendered()[0])
        said = refused.value.what + " " + refused.value.hint
        assert all(word in said for word in words_said), said


@pytest.mark.parametrize("text, said", [(b"a:1\nb:2\r\nc:3\n", ":2: Windows line ending (CR)"),
                                        (b"a:1\n\nb:\x002\n", ":3: a NUL byte"),
                                        (b"a:1\r", ":1: Windows line ending (CR)")])
def test_a_config_no_shell_variable_could_hold_as_written_is_refused_naming_its_line(tmp_path: Path, text: bytes,
                                                                                      said: str):
    (tmp_path / "c.txt").write_bytes(text)
    with pytest.raises(Refused) as refused:
        tipc_preflight.open_config(str(tmp_path / "c.txt"), words.WHOLE_INFER, *words.MODES, known=_rendered()[0])
    assert refused.value.what == f"{tmp_path / 'c.txt'}{said}" and refused.value.hint


_READ_LINES = r"""source "$1/tipc_steps.sh"
shift
for file in "$@"; do
    tipc_read_table open "$file" whole_infer whole_infer
    printf '%s\0' "${#TIPC_LINES[@]}" "${TIPC_LINES[@]}" "${TIPC_LINENOS[@]}"
done
"""

_LINE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\x00"), max_size=30)


@settings(max_examples=fuzz_examples(25), deadline=None)
@given(configs=st.lists(st.lists(st.one_of(_LINE, st.sampled_from(["", "  ", "\t", " a: b ", "x:y:z", "line 3 x",
                                                                        "section a:b c", "-", "\x1f", "$(touch x)"])),
                                          max_size=12), min_size=1, max_size=4),
       raw=st.binary(max_size=12).filter(lambda b: b"\n" not in b and b"\r" not in b and b"\x00" not in b))
def test_the_runner_reads_every_line_of_a_config_exactly_as_the_checks_read_it(tmp_path_factory, configs, raw):
    """tipc_open's lines (TIPC_LINES, TIPC_LINENOS) come from tipc_preflight.py's records: for any text, bytes that are
    not UTF-8 included, the runner holds the same non-blank lines, byte for byte (leading whitespace kept, trailing
    dropped), with the same line numbers, and runs none of it."""
    folder = tmp_path_factory.mktemp("read")
    (folder / "tipc_steps.sh").write_text((ROOT / paths.STEPS_SH).read_text())
    (folder / paths.TIPC_PREFLIGHT).write_text((ROOT / "test_tipc" / paths.TIPC_PREFLIGHT).read_text())
    (folder / "tipc_layouts.json").write_text(json.dumps(_rendered()[0]))
    files, expected = [], []
    for i, lines in enumerate(configs):
        data = "\n".join(lines).encode("utf-8") + raw
        (folder / f"c{i}.txt").write_bytes(data)
        files.append(str(folder / f"c{i}.txt"))
        kept, numbers = tipc_preflight.non_blank(data.decode("utf-8", "surrogateescape"))
        expected += [str(len(kept)).encode()] + [k.encode("utf-8", "surrogateescape") for k in kept]
        expected += [str(n).encode() for n in numbers]
    proc = subprocess.run(["bash", "-c", _READ_LINES, "read", str(folder), *files], cwd=folder, capture_output=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split(b"\0")[:-1] == expected
    assert not (folder / "x").exists()


@settings(max_examples=fuzz_examples(200), deadline=None)
@given(name=st.one_of(st.text(max_size=12), st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,10}", fullmatch=True),
                      st.sampled_from(["..", "a..b", "../x", "-x", ".x", "a/b", "a\n", "a b", "ｍ", "x" * 200])))
def test_the_runner_refuses_exactly_the_model_names_init_refuses(name: str):
    """The model names the run folder (test_tipc/output/<model_name>/): the runner's rule is the descriptor's."""
    from tipcgen.descriptor.schema import is_model_name

    try:
        tipc_preflight.check_model("c.txt", name, _rendered()[0])
    except Refused as refused:
        assert not is_model_name(name) and refused.what == f"c.txt: model_name '{name}' cannot name a folder"
        return
    assert is_model_name(name)


def test_start_refuses_a_model_an_interpreter_or_a_step_limit_it_cannot_use_before_touching_the_folder(tmp_path: Path):
    run = _run_folder(tmp_path)
    for args, env, said in [
            (["../m", sys.executable], {}, "c.txt: model_name '../m' cannot name a folder"),
            (["m", "python3.7-nowhere"], {}, "the config's interpreter 'python3.7-nowhere' (line python:) is not on PATH"),
            (["m", sys.executable], {"TIPC_STEP_TIMEOUT": "0"}, "TIPC_STEP_TIMEOUT=0 is not a step time limit"),
            (["m", sys.executable], {"TIPC_STEP_TIMEOUT": "1e3"}, "TIPC_STEP_TIMEOUT=1e3 is not a step time limit"),
            (["m", sys.executable], {"TIPC_STEP_TIMEOUT": "５"}, "TIPC_STEP_TIMEOUT=５ is not a step time limit"),
            (["m", sys.executable], {"TIPC_STEP_TIMEOUT": "86401"}, "TIPC_STEP_TIMEOUT=86401 is not a step time limit")]:
        model, python = args
        proc = _run(tmp_path, "start", "test_tipc/output/m/mode", python, "c.txt", model, env=env)
        assert proc.returncode == 2 and f"tipc error: {said}" in proc.stderr and "hint: " in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and proc.stdout == ""
        assert (run / "model.pdparams").exists() and not run.with_name("mode.previous").exists()


@pytest.mark.parametrize("edit, said", [("model_name:../up", "model_name '../up' cannot name a folder"),
                                        ("model_name:", "model_name '' cannot name a folder"),
                                        ("python:python3.7-nowhere", "interpreter 'python3.7-nowhere' (line python:)")])
def test_the_check_of_the_config_refuses_a_model_or_an_interpreter_the_run_cannot_use(tmp_path: Path, edit: str,
                                                                                        said: str, monkeypatch):
    """tipcgen run's check of the config (the runner under TIPC_CHECK_ONLY=1, which stops before start) refuses
    what start would: the model's name and the interpreter (TIPC_PYTHON over the config's python: line)."""
    monkeypatch.delenv("TIPC_PYTHON", raising=False)
    lines = _rendered()[1].splitlines()
    key = edit.split(":", 1)[0]
    lines = [edit if line.split(":", 1)[0] == key else line for line in lines]
    with pytest.raises(Refused) as refused:
        _check(tmp_path, "\n".join(lines) + "\n")
    assert said in refused.value.what and refused.value.hint
    if key == "python":
        monkeypatch.setenv("TIPC_PYTHON", sys.executable)
        assert _table(_check(tmp_path, "\n".join(lines) + "\n"))["layout"] == ("standard", 51)


def test_a_models_own_limit_and_env_are_its_records_as_its_descriptor_rendered_them(tmp_path: Path, monkeypatch):
    """A model whose descriptor sets step_timeout and env: its limit (TIPC_STEP_TIMEOUT still overrides it), the env
    prefix of its export and inference steps, word by word, and the note its records carry; other models get none."""
    text = SAMPLE.read_text().replace("  step_timeout: 600", "  step_timeout: 900\nenv:\n  FLAGS_enable_pir_api: '0'\n"
                                      "  NAME: 'two words'", 1)
    (tmp_path / "tipc.yaml").write_text(text)
    desc = descriptor.load_text(text, source=str(tmp_path / "tipc.yaml"), base_dir=SAMPLE.parent)
    known = json.loads(repository.render_repository([desc])[paths.LAYOUTS_JSON])
    monkeypatch.delenv("TIPC_STEP_TIMEOUT", raising=False)
    out = _records("\n".join(tipc_preflight.settings("bert_sst2", known) + ["end - 0"]))
    assert out == {"timeout": "900", "env": "env FLAGS_enable_pir_api=0 NAME=two words",
                   "note": "ran with FLAGS_enable_pir_api=0 NAME=two words (descriptor env:)"}
    assert _records("\n".join(tipc_preflight.settings("other", known) + ["end - 0"])) == {"timeout": "600", "note": ""}


@pytest.mark.parametrize("value, refused", [("null", True), ("##", True), ("##|null", True), ("", True),
                                            ("./m1", False), ("null|./m1", False)])
def test_whole_infer_without_a_trained_model_is_refused_before_any_step(tmp_path: Path, value: str, refused: bool):
    lines = _rendered()[1].splitlines()
    index = _rendered()[0]["layouts"][0]["slots"]["infer_model"]
    lines[index] = "infer_model:" + value
    (tmp_path / "c.txt").write_text("\n".join(lines) + "\n")
    check = functools.partial(tipc_preflight.check, str(tmp_path / "c.txt"), known=_rendered()[0])
    assert check(words.LITE_TRAIN_LITE_INFER, *words.MODES)  # the train modes do not read the line
    if not refused:
        assert check(words.WHOLE_INFER, *words.MODES)
        return
    with pytest.raises(Refused) as said:
        check(words.WHOLE_INFER, *words.MODES)
    assert said.value.what == f"{tmp_path / 'c.txt'}: whole_infer needs trained models in the infer_model line"


@pytest.mark.parametrize("env", [["rm", "-rf"], ["env", "-i"], ["env", "A=1", "sh"], ["env", "A=1\nB"], ["env", "1A=2"],
                                 ["env", "=x"], ["nice", "A=1"]])
def test_a_step_env_that_would_run_a_program_is_refused_not_prefixed(env: list[str]):
    """The model's step env is read from tipc_layouts.json as words that prefix each export and inference step
    (TIPC_STEP_ENV): anything but `env NAME=VALUE...` would run a program of the table's choosing; refused, naming
    the fix. An honest env (what render writes) is read word for word."""
    known = {**_rendered()[0], "settings": {"m": {"timeout": 60, "env": env, "note": "n"}}}
    with pytest.raises(Refused) as refused:
        tipc_preflight.settings("m", known)
    assert "is not env NAME=VALUE" in refused.value.what and "tipcgen init" in refused.value.hint
    honest = {**known, "settings": {"m": {"timeout": 60, "env": ["env", "A=1", "B=two words", "C="], "note": "n"}}}
    assert tipc_preflight.settings("m", honest)[2:] == ["env - env", "env - A=1", "env - B=two words", "env - C="]
