"""What tipcgen reads back and writes out stays honest (issue 12): a malformed summary.json is one
clear error (exit 2) in `report` and `golden`; junit.xml is well-formed whatever a log holds;
`golden` never writes into the installed package; `report -o` never overwrites without --force;
Markdown reports fence log text; `report` and `align` without matplotlib / numpy.
"""
from __future__ import annotations

import html as html_lib
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import ROOT, fuzz_examples, tipcgen
from tipcgen.results import summary_text
from tipcgen.descriptor import samples_dir
from tipcgen.core.errors import TipcgenError
from tipcgen.results.summary import Step, Summary, load_summary, read_records, write_json

MODE = "lite_train_lite_infer"
SECRET = "SECRET-7f3a"  # put into the bad files: no error message may echo it
GOOD = {"model": "bert_sst2", "mode": MODE, "config": "test_tipc/configs/bert_sst2/train_infer_python.txt",
        "chain": "basic", "wall_seconds": 3.5, "runner_exit_code": 0, "interrupted": False, "problems": [],
        "environment": {"python": "3.11"},
        "steps": [{"kind": "train", "name": "norm_train", "status": "passed", "exit_code": 0, "seconds": 1.0,
                   "log": "./t.log", "reason": "", "note": SECRET, "command": "python train.py", "tail": [],
                   "metrics": {}, "check": {}}]}


def _with(path: str, value) -> dict:
    """GOOD with one field (a dotted path; steps.0 for the first step) replaced, or deleted for ...."""
    data = json.loads(json.dumps(GOOD))
    *parents, leaf = path.split(".")
    node = data
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    key = int(leaf) if isinstance(node, list) else leaf
    if value is ...:
        del node[key]
    else:
        node[key] = value
    return data


_GOOD_TEXT = json.dumps(GOOD)
MALFORMED: dict[str, bytes] = {
    "truncated": _GOOD_TEXT[: len(_GOOD_TEXT) // 2].encode(),
    "empty file": b"",
    "a list, not an object": b"[1, 2]",
    "a string, not an object": json.dumps(SECRET).encode(),
    "steps is an object": json.dumps(_with("steps", {"a": 1})).encode(),
    "a step is a number": json.dumps(_with("steps", [1])).encode(),
    "a step without status": json.dumps(_with("steps.0.status", ...)).encode(),
    "an unknown status": json.dumps(_with("steps.0.status", "ok")).encode(),
    "seconds as text": json.dumps(_with("steps.0.seconds", "1.5")).encode(),
    "seconds infinite": json.dumps(GOOD).replace('"seconds": 1.0', '"seconds": 1e999').encode(),
    "a 5000-digit number": json.dumps(_with("wall_seconds", 0)).replace('"wall_seconds": 0', '"wall_seconds": '
                                                                         + "9" * 5000).encode(),
    "model is null": json.dumps(_with("model", None)).encode(),
    "no steps key": json.dumps(_with("steps", ...)).encode(),
    "environment is a list": json.dumps(_with("environment", [SECRET])).encode(),
    "tail is a text": json.dumps(_with("steps.0.tail", SECRET)).encode(),
    "a metric as text": json.dumps(_with("steps.0.metrics", {"acc": SECRET})).encode(),
    "check.max_abs is a list": json.dumps(_with("steps.0.check", {"max_abs": [1], "atol": 1, "rtol": 1})).encode(),
    "wall_seconds NaN": json.dumps(_with("wall_seconds", float("nan"))).encode(),
    "exit_code 1.5": json.dumps(_with("steps.0.exit_code", 1.5)).encode(),
    "exit_code true": json.dumps(_with("runner_exit_code", True)).encode(),
    "problems is an object": json.dumps(_with("problems", {"a": SECRET})).encode(),
    "interrupted is a text": json.dumps(_with("interrupted", "no")).encode(),
    "log outside the repository": json.dumps(_with("steps.0.log", "/etc/shadow")).encode(),
    "log climbing out": json.dumps(_with("steps.0.log", "./a/../../../etc/passwd")).encode(),
        "invalid UTF-8": b'{"model": "\xff\xfe' + SECRET.encode() + b'"}',
    "nested 100000 deep": b"[" * 100_000 + b"]" * 100_000,
}

def test_a_malformed_summary_is_one_clear_error_in_report_and_golden(tmp_path: Path):
    assert len(MALFORMED) >= 13
    cases, paths = [], []
    for number, (name, data) in enumerate(MALFORMED.items()):
        root = tmp_path / f"case{number}"
        run_dir = root / "test_tipc" / "output" / "bert_sst2" / MODE
        run_dir.mkdir(parents=True)
        (run_dir / "summary.json").write_bytes(data)
        paths.append(run_dir / "summary.json")
        cases += [["report", str(run_dir)], ["golden", "bert-sst2", "--root", str(root)]]
    outcomes = [tipcgen(*case) for case in cases]
    for number, name in enumerate(MALFORMED):
        for command, outcome in zip(("report", "golden"), outcomes[2 * number: 2 * number + 2]):
            err = outcome.stderr
            assert outcome.returncode == 2, (name, command, outcome)
            assert err.startswith(f"error: {paths[number]}: ") and "Traceback" not in err, (name, command, err)
            assert SECRET not in err and len(err.splitlines()) == 2 and "hint: " in err, (name, command, err)
    assert not list(tmp_path.rglob("report.*")) and not list(tmp_path.rglob("results/*.txt"))


def test_a_malformed_alignment_json_is_one_clear_error_in_report(tmp_path: Path):
    run_dir = tmp_path / "test_tipc" / "output" / "bert_sst2" / MODE
    run_dir.mkdir(parents=True)
    (run_dir / "summary.json").write_text(json.dumps(GOOD))
    good = {"folder": "align", "passed": True, "pass": 1, "fail": 0, "missing": 0,
            "rows": [{"checkpoint": "forward", "status": "pass", "worst": 1e-8, "threshold": 1e-6, "detail": "ok"}]}
    bad = {"rows is a number": {**good, "rows": 1}, "a row is a list": {**good, "rows": [[SECRET]]},
           "checkpoint null": {**good, "rows": [{**good["rows"][0], "checkpoint": None}]},
           "threshold as text": {**good, "rows": [{**good["rows"][0], "threshold": SECRET}]},
           "passed as text": {**good, "passed": SECRET}, "pass is null": {**good, "pass": None}}
    cases = []
    for number, data in enumerate(bad.values()):
        (tmp_path / f"a{number}.json").write_text(json.dumps(data))
        cases.append(["report", str(run_dir), "--format", "md", "--align", str(tmp_path / f"a{number}.json")])
    (tmp_path / "deep.json").write_text("[" * 100_000)
    os.mkfifo(tmp_path / "fifo.json")  # reading it would block for ever
    for name in ("deep.json", "fifo.json", "missing.json"):
        cases.append(["report", str(run_dir), "--format", "md", "--align", str(tmp_path / name)])
    for name, outcome in zip([*bad, "deep", "fifo", "missing"], [tipcgen(*case) for case in cases]):
        err = outcome.stderr
        assert outcome.returncode == 2 and err.startswith("error: --align ") and "Traceback" not in err, (name, outcome)
        assert SECRET not in err and len(err.splitlines()) == 2, (name, err)
    assert not (run_dir / "report.md").exists()


def test_a_good_summary_round_trips_through_load_summary(tmp_path: Path):
    (tmp_path / "summary.json").write_text(json.dumps(GOOD))
    summary = load_summary(tmp_path / "summary.json")
    assert summary.steps[0].note == SECRET and summary.ok and summary.wall_seconds == 3.5


# ---------------------------------------------------------------- JUnit: well-formed whatever a log holds

FAILING_LOGS = {
    "ansi": b"\x1b[31mERROR\x1b[0m \x1b[1;33mwarning\x1b[0m paddlenlp [2026-11-30 11:49:26,123] \x1b[32mINFO\x1b[0m\n",
    "nul": b"before\x00after\n",
    "vertical tab and form feed": b"a\x0bb\x0cc\x01\x1f\x7f\n",
    "invalid utf-8": b"caf\xc3 \xff\xfe \xed\xa0\x80 (an encoded surrogate)\n",
    "cdata end": b"]]> <![CDATA[ x ]]> & < > \" '\n",
    "carriage returns": b"progress 10%\rprogress 100%\r\n",
}


def _junit_of_failing_logs(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    run_dir = tmp_path / "test_tipc" / "output" / "m" / MODE
    run_dir.mkdir(parents=True)
    records = []
    for number, (name, data) in enumerate(FAILING_LOGS.items()):
        log = run_dir / f"step{number}.log"
        log.write_bytes(b"Traceback (most recent call last):\n" + data)
        records.append({"kind": "train", "name": f"step{number}\x1b[0m\x00", "status": "failed", "exit_code": 1,
                        "seconds": 0.5, "log": "./" + log.relative_to(tmp_path).as_posix(),
                        "reason": f"exit code 1 \x1b[31m{name}\x0b", "command": "python t.py --x='\x00]]>'"})
    (run_dir / "steps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    steps, problems = read_records(run_dir, tmp_path)
    summary = Summary("m", MODE, "c\x1b[0m.txt", steps=steps, problems=problems + ["lone \ud800 surrogate \x00"],
                      environment={"python": "3.11\x00", "x\x01": "\udcff"})
    summary.steps.append(Step("check", "golden", "failed", 1, 0.1, reason="bad", note="a\x1b[1mnote\x08",
                              tail=["\ud83d lone high surrogate", "\x1b]0;title\x07 osc"]))
    path = tmp_path / "junit.xml"
    summary_text.write_junit(summary, path)
    return path, {name: data.decode("utf-8", "replace") for name, data in FAILING_LOGS.items()}


def test_junit_is_well_formed_for_every_failing_log(tmp_path: Path):
    path, _ = _junit_of_failing_logs(tmp_path)
    tree = ET.parse(path)  # raises on any character XML cannot hold
    failures = tree.getroot().findall(".//failure")
    assert len(failures) == len(FAILING_LOGS) + 1
    text = "\n".join((f.text or "") + f.get("message", "") for f in failures)
    assert "\x1b" not in path.read_text(encoding="utf-8") and "[31m" not in text
    assert "ERROR warning paddlenlp [2026" in text and "before#x00after" in text and "c#x01#x1F" in text
    assert "exit code 1 ansi#x0B" in text and "title#x07 osc" not in text  # an OSC title sequence, dropped
    assert "]]> <![CDATA[ x ]]> & < > \" '" in text  # escaped in the file, the same text once parsed
    assert "#xD800" in path.read_text(encoding="utf-8")  # the lone surrogate of `problems`
    assert [t.get("name") for t in tree.getroot().iter("testcase")][0] == "step0#x00"


def test_a_suite_junit_with_control_characters_in_every_failing_log_parses(tmp_path: Path):
    """run and suite share one JUnit writer: the suite's file is as well-formed as the run's (its own template
    escaped with Jinja's `e`, which lets ANSI and NUL through, before)."""
    from tipcgen.suite.report import SuiteResult, write_junit
    from tipcgen.suite.suite import Chain, ChainResult, Refused

    _junit_of_failing_logs(tmp_path)  # its run folder and step records
    steps, problems = read_records(tmp_path / "test_tipc" / "output" / "m" / MODE, tmp_path)
    summary = Summary("m\x1b[0m", MODE, "c.txt", steps=steps, problems=["\x00 problem \ud800"])
    chain = Chain(str(tmp_path), "c.txt", "basic", MODE, "m\x1b[31m\x00")
    suite = SuiteResult(results=[ChainResult(chain, "failed", 1, 1.0, "runs/\x1b]0;t\x07", summary=summary),
                                 ChainResult(chain, "timeout", None, 2.0, log="x\x0b.log", message="\x1b[1mslow\x00")],
                        refused=[Refused("bad\x00.txt", ["line 3: \x1b[31mshifted\x0c"])])
    path = tmp_path / "suite-junit.xml"
    write_junit(suite, path)
    root = ET.parse(path).getroot()  # raises on any character XML cannot hold
    assert "\x1b" not in path.read_text(encoding="utf-8")
    assert len(root.findall(".//failure")) == len(FAILING_LOGS) and len(root.findall(".//error")) == 3
    assert int(root.get("tests")) == sum(int(s.get("tests")) for s in root)  # the totals are the suites' sums
    text = "\n".join((f.text or "") for f in root.iter("failure"))
    assert all(words in text for words in ("ERROR warning paddlenlp [2026", "before#x00after"))


def test_junit_is_built_by_elementtree_and_keeps_a_message_whole(tmp_path: Path):
    """ElementTree escapes an attribute's newline and tab (`&#10;`), so a two-line reason reads back as two lines
    (the Jinja template wrote them raw, and an XML parser reads a raw newline in an attribute as a space)."""
    from tipcgen.results import junit

    case = junit.Case("m.train", "train", 1.0, "failed", "exit code 1\n\tsee the log & <tail>", "tail\x00")
    text = junit.junit_text("tipc", [junit.Suite("tipc.m", [case], 1.0, [("k\x1b[1m", "v")])], 1.0)
    root = ET.fromstring(text.encode("utf-8"))
    assert root.find(".//failure").get("message") == "exit code 1\n\tsee the log & <tail>"
    assert root.find(".//failure").text == "tail#x00" and root.find(".//property").get("name") == "k"
    assert not (ROOT / "templates" / "report" / "junit.xml.j2").exists()


def test_xml_safe_replaces_exactly_the_characters_xml_1_0_cannot_hold():
    """Every code point: xml_safe writes `#xNN` for exactly those outside XML 1.0's Char production (its pattern
    names what that production leaves out, which compiles 40 times faster than the negated production)."""
    from tipcgen.results import junit

    chars = [(0x9, 0xA), (0xD, 0xD), (0x20, 0xD7FF), (0xE000, 0xFFFD), (0x10000, 0x10FFFF)]  # XML 1.0's Char
    outside = sorted(set(range(0x110000)).difference(*(range(a, b + 1) for a, b in chars)))
    every = "".join(map(chr, range(0x110000)))
    safe = junit.xml_safe(every)
    assert safe == every.translate({c: f"#x{c:02X}" for c in outside})
    assert junit.xml_safe("a\x00b\udfffc\U0010ffff") == "a#x00b#xDFFFc\U0010ffff"


def test_junit_of_a_real_run_whose_step_prints_control_characters(stub_repo: Path):
    proc = tipcgen("run", "--mode", MODE, cwd=stub_repo, env={"STUB_NOISE": "train"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    path = stub_repo / "test_tipc" / "output" / "stub_model" / MODE / "junit.xml"
    failure = ET.parse(path).getroot().find(".//failure")
    assert "ERROR nul#x00 vt" in failure.text and "]]> <![CDATA[ & <x>" in failure.text
    assert "\x1b" not in path.read_text(encoding="utf-8")


# ---------------------------------------------------------------- golden never writes into the package

def _passing_run(root: Path, logits: float) -> None:
    run_dir = root / "test_tipc" / "output" / "bert_sst2" / MODE
    run_dir.mkdir(parents=True)
    log = run_dir / "python_infer_cpu_gpus_-1_usemkldnn_False_threads_1_precision_fp32_batchsize_1.log"
    log.write_text(f'sst2_0\t{{"label": 0, "logits": [{logits}, 0.5]}}\n')
    step = Step.flat("infer", log.stem, "passed", 0, 1.0, log="./" + log.relative_to(root).as_posix(), device="cpu",
                use_gpu="False", training="gpus_-1", precision="fp32")
    write_json(Summary("bert_sst2", MODE, "c.txt", steps=[step]), run_dir / "summary.json")


def test_golden_of_a_built_in_sample_writes_under_the_repository_only(tmp_path: Path):
    package_golden = samples_dir() / "bert-sst2" / "golden"
    before = {p.name: p.read_bytes() for p in package_golden.iterdir()}
    name = f"python_bert_sst2_{MODE}_gpus_-1_results_fp32.txt"
    _passing_run(tmp_path, 0.125)
    proc = tipcgen("golden", "bert-sst2", "--root", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "test_tipc" / "results" / name).read_text() == 'sst2_0\t{"label": 0, "logits": [0.125, 0.5]}\n'
    assert {p.name: p.read_bytes() for p in package_golden.iterdir()} == before
    # with the sample's rendered copy under the root, its golden folder is updated too
    copy = tmp_path / "sample_models" / "bert-sst2"
    (copy / "golden").mkdir(parents=True)
    (copy / "tipc.yaml").write_bytes((samples_dir() / "bert-sst2" / "tipc.yaml").read_bytes())
    proc = tipcgen("golden", "bert-sst2", "--root", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "0.125" in (copy / "golden" / name).read_text()
    assert {p.name: p.read_bytes() for p in package_golden.iterdir()} == before
    # a descriptor of the user's own: its checks.golden folder, next to it
    own = tmp_path / "mine" / "tipc.yaml"
    own.parent.mkdir()
    own.write_bytes((samples_dir() / "bert-sst2" / "tipc.yaml").read_bytes())
    proc = tipcgen("golden", str(own), "--root", str(tmp_path))
    assert proc.returncode == 0 and "0.125" in (own.parent / "golden" / name).read_text(), proc.stderr


# ---------------------------------------------------------------- report: Markdown, --output, no matplotlib

HOSTILE_TAIL = ["```", "</code></pre><script>alert(1)</script>", "| a | b |", "# not a heading", "````` five",
                "[click](javascript:alert(1)) <img src=x onerror=alert(2)> *bold* _it_ &amp;"]


def _hostile_run(root: Path) -> Path:
    run_dir = root / "test_tipc" / "output" / "toy" / MODE
    run_dir.mkdir(parents=True)
    summary = Summary("toy", MODE, "c`fg`.txt", wall_seconds=1.0, problems=["<b>bold</b> | pipe", "1. not a list", "- not a list either"])
    summary.steps = [
        Step("train", "gpus_`-1`_<i>x</i>", "failed", 1, 0.5, reason="exit code 1 <script>x</script> | y",
             command="python t.py --a='```' <script>", log="./t.log", tail=HOSTILE_TAIL),
        Step("infer", "infer|one", "passed", 0, 0.2, command="python i.py"),
    ]
    write_json(summary, run_dir / "summary.json")
    return run_dir


def test_markdown_report_keeps_log_text_as_text(tmp_path: Path):
    markdown_it = pytest.importorskip("markdown_it")
    from tipcgen.outputs import report

    run_dir = _hostile_run(tmp_path)
    report.write(run_dir, formats=("md",))
    text = (run_dir / "report.md").read_text()
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(text)
    assert "<script" not in html and "<img src=x" not in html and "<i>" not in html and "<b>" not in html
    assert "<h1>not a heading" not in html.replace("\n", "") and 'href="javascript' not in html
    assert "<li>1. not a list</li>" in html and "<li>- not a list either</li>" in html
    block = html[html.index("<pre><code class=\"language-text\">"):]
    block = block[len("<pre><code class=\"language-text\">"):]
    block = block[: block.index("</code></pre>")]
    assert html_lib.unescape(block) == "\n".join(HOSTILE_TAIL) + "\n"  # the whole tail, verbatim
    assert "<td><code>infer|one</code></td>" in html  # a '|' in a name does not split the table row
    assert "<code>gpus_`-1`_&lt;i&gt;x&lt;/i&gt;</code>" in html


def _shim(tmp_path: Path, module: str) -> dict:
    """An environment in which `import module` raises ImportError, as where it is not installed."""
    shim = tmp_path / f"no-{module}"
    (shim / module).mkdir(parents=True)
    (shim / module / "__init__.py").write_text(f"raise ImportError('no module named {module} (test shim)')\n")
    return {"PYTHONPATH": f"{shim}{os.pathsep}{ROOT}"}


def _without(monkeypatch, module: str) -> None:
    """`import module` (and of any of its submodules) raises ImportError in this process from now on, as
    where it is not installed: for a test that is not about the missing module (those use _shim's process)."""
    import sys

    for name in [n for n in sys.modules if n == module or n.startswith(module + ".")] + [module]:
        monkeypatch.setitem(sys.modules, name, None)


def test_report_output_never_overwrites_without_force(tmp_path: Path, monkeypatch):
    run_dir = _hostile_run(tmp_path)
    out = tmp_path / "pr"
    out.mkdir()
    (out / "report.md").write_text("my own notes\n")
    _without(monkeypatch, "matplotlib")  # no pictures: quicker, and the rule is the same
    proc = tipcgen("report", str(run_dir), "-o", str(out), "--format", "md")
    assert proc.returncode == 2 and "report.md" in proc.stderr and "--force" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and (out / "report.md").read_text() == "my own notes\n"
    assert sorted(p.name for p in out.iterdir()) == ["report.md"]  # nothing was written
    proc = tipcgen("report", str(run_dir), "-o", str(out), "--format", "md", "--force")
    assert proc.returncode == 0, proc.stderr
    assert "matplotlib is not installed" in proc.stderr  # the module is hidden indeed
    backups = list((out / ".tipcgen" / "backup").rglob("report.md"))
    assert [b.read_text() for b in backups] == ["my own notes\n"] and "TIPC report" in (out / "report.md").read_text()
    proc = tipcgen("report", str(run_dir), "-o", str(out), "--format", "md")
    assert proc.returncode == 0, proc.stderr  # the same report again: unchanged, nothing to refuse


def test_report_without_matplotlib_is_written_without_pictures_and_says_so(tmp_path: Path):
    run_dir = _hostile_run(tmp_path)
    proc = tipcgen("report", str(run_dir), env=_shim(tmp_path, "matplotlib"))
    assert proc.returncode == 0, proc.stderr
    assert "matplotlib is not installed" in proc.stderr and "Traceback" not in proc.stderr
    assert (run_dir / "report.md").is_file() and (run_dir / "report.html").is_file()
    assert not list(run_dir.glob("*.png")) and "no pictures" in (run_dir / "report.md").read_text()


def test_align_without_numpy_names_the_pip_line(tmp_path: Path):
    env = _shim(tmp_path, "numpy")
    for args in (["align", "compare", "a.npy", "b.npy"], ["align", "report", str(tmp_path)]):
        proc = tipcgen(*args, env=env)
        assert proc.returncode == 2 and "needs numpy" in proc.stderr and "pip install numpy" in proc.stderr
        assert "Traceback" not in proc.stderr
    proc = tipcgen("report", str(_hostile_run(tmp_path)), "--align", str(tmp_path), env=env)
    assert proc.returncode == 2 and "needs numpy" in proc.stderr and "Traceback" not in proc.stderr


# ---------------------------------------------------------------- property: any summary, no traceback

def _full_summary() -> dict:
    data = json.loads(json.dumps(GOOD))
    data.update(interrupted_by="", required_kinds=["train", "infer"])  # the run's newer fields
    data["steps"].append({"kind": "check", "name": "golden_gpus_-1", "status": "failed", "exit_code": 1,
                          "seconds": 0.1, "reason": "exit code 1", "tail": ["x"], "metrics": {"acc": 0.5},
                          "check": {"passed": False, "atol": 1e-3, "rtol": 1e-3, "max_abs": {"logits": 0.1},
                                    "max_rel": {"logits": 0.2}, "failures": 2, "logs": 1}})
    data["steps"].append({"kind": "infer", "name": "python_infer_cpu_gpus_-1_usemkldnn_False_precision_fp32_x",
                          "status": "skipped", "reason": "no CUDA device"})
    return data


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, prefix + (index,))


def _report_everything(run_dir: Path, root: Path) -> None:
    """What report, golden and the JUnit writer do with a summary.json: either all of it works, or
    load_summary refuses the file (SummaryFileError); any other exception fails the test."""
    from tipcgen.outputs import golden
    from tipcgen.outputs import report
    from tipcgen.results.summary_check import SummaryFileError

    try:
        built = report.build(run_dir, root)
    except SummaryFileError:
        return
    report.render_documents(built, {})
    summary_text.write_junit(built.summary, root / "junit.xml")
    ET.parse(root / "junit.xml")
    try:
        golden.collect(run_dir, "bert_sst2", MODE)
    except TipcgenError:
        pass  # a run that did not pass, or no result lines: a message, not a traceback


WRONG_VALUES = [None, True, "text", -1, 1.5, 10**30, float("nan"), float("inf"), [], ["x"], {}, {"k": "v"}, ...]


def test_every_field_of_a_summary_with_every_wrong_type(tmp_path: Path):
    base = _full_summary()
    run_dir = tmp_path / "test_tipc" / "output" / "bert_sst2" / MODE
    run_dir.mkdir(parents=True)
    paths = [p for p in _paths(base) if p]
    for path in paths:
        for value in WRONG_VALUES:
            data = json.loads(json.dumps(base))
            node = data
            for part in path[:-1]:
                node = node[part]
            if value is ...:
                del node[path[-1]]
            else:
                node[path[-1]] = value
            (run_dir / "summary.json").write_text(json.dumps(data))
            try:
                _report_everything(run_dir, tmp_path)
            except Exception as exc:  # noqa: BLE001
                raise AssertionError(f"{'.'.join(map(str, path))} = {value!r}: {type(exc).__name__}: {exc}") from exc
    assert len(paths) * len(WRONG_VALUES) > 500


def test_any_mutated_summary_reports_or_fails_clearly(tmp_path_factory):
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    base = _full_summary()
    paths = [p for p in _paths(base) if p]
    leaves = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                       st.text(max_size=20), st.sampled_from(["passed", "failed", "skipped", "/etc/x", "../x"]))
    values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5),
                                                                                             inner, max_size=3),
                          max_leaves=6)
    root = tmp_path_factory.mktemp("fuzz")
    run_dir = root / "test_tipc" / "output" / "bert_sst2" / MODE
    run_dir.mkdir(parents=True)

    @hypothesis.settings(max_examples=fuzz_examples(100), deadline=None, database=None)
    @hypothesis.given(st.lists(st.tuples(st.sampled_from(paths), values | st.just(...)), min_size=1, max_size=3))
    def check(mutations):
        data = json.loads(json.dumps(base))
        for path, value in mutations:
            node = data
            try:
                for part in path[:-1]:
                    node = node[part]
                if value is ...:
                    del node[path[-1]]
                else:
                    node[path[-1]] = value
            except (KeyError, IndexError, TypeError):
                continue  # an earlier mutation removed this path
        (run_dir / "summary.json").write_text(json.dumps(data))
        _report_everything(run_dir, root)

    check()
