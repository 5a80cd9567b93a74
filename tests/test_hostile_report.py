"""Hostile summary.json for `report` and `accept --run` (issue 26, class 5): every field of a real run's
summary (the newer ones too: provenance, target, speed, check) mutated by a generator (wrong type,
missing, huge, path escapes); each mutation is read through the one validated reader and is either
shown or one clean error naming the field, never a traceback, and no file outside the run folder or the
repository (a step `name` or `log` climbing out, a link planted in the run folder) is ever read.
"""
from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import fuzz_sample, make_stub_repo, tipcgen
from tipcgen.core.errors import SummaryFileError, TipcgenError
from tipcgen.outputs import accept, report

MODE = "lite_train_lite_infer"
MARK = 0.424242  # the loss in the train.log planted outside: no report may show it
HUGE_TEXT = "x" * (2 << 20)


@pytest.fixture(scope="module")
def stub_run(tmp_path_factory) -> tuple[Path, Path, dict]:
    """A stub repository after one real run, and its summary.json enriched with every newer field."""
    repo = tmp_path_factory.mktemp("hostile_report")
    make_stub_repo(repo)
    tipcgen("run", "--mode", MODE, "--quiet", cwd=repo)
    run_dir = repo / "test_tipc" / "output" / "stub_model" / MODE
    data = json.loads((run_dir / "summary.json").read_text())
    data["target"] = {"mode": MODE, "reproduced": True, "note": "", "target": {
        "metrics": {"acc": 0.5}, "tolerance": 0.02, "relative": True, "lower_is_better": []},
        "metrics": [{"metric": "acc", "paper": 0.5, "measured": 0.6, "bound": 0.49, "difference": 0.1,
                     "relative_difference": 0.2, "reproduced": True, "step": "eval"}]}
    data["provenance"].setdefault("data", []).append({"path": "x.tsv", "method": "sha256", "sha256": "ab" * 32,
                                                      "size": 3})
    infer = next(s for s in data["steps"] if s["kind"] == "infer")
    infer["speed"] = {"device": "cpu", "batch_size": 1.0, "inference_ms": 1.5, "precision": "fp32"}
    data["steps"].append({**infer, "kind": "check", "name": "check_results", "speed": {}, "check": {
        "max_abs": {"logits": 1e-7}, "max_rel": {"logits": 1e-6}, "atol": 1e-5, "rtol": 1e-4, "logs": 2,
        "failures": 0, "latency_ms": {"cpu": {"mean_ms": 1.0, "p50_ms": 1.0, "runs": 3}}}})
    outside = repo.parent / f"{repo.name}_outside"
    (outside / "x").mkdir(parents=True, exist_ok=True)
    (outside / "x" / "train.log").write_text(f"global_step: 1, loss: {MARK}\n")
    return repo, run_dir, data


def _paths(value, prefix=()):
    """Every field of a summary, as a path of keys and indexes: all of the first step's, and of the other
    steps only what differs by kind (speed, check) and the paths (name, log); four items of other lists."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            if len(prefix) == 2 and prefix[0] == "steps" and prefix[1] > 0 and key not in STEP_VARIES:
                continue
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value if prefix == ("steps",) else value[:4]):
            yield from _paths(item, prefix + (index,))


STEP_VARIES = ("speed", "check", "name", "log", "status", "kind")
ESCAPES = ("../../../{outside}/x", "/etc", "a/../../..", "..\\..\\x", "C:/x", "x\x00y")
OTHER_TYPES = (None, True, 7, 2.5, "text", [], {}, [1, "a"], {"k": [None]})
# The text fields that are a path, or a name a path is made of (a run folder, a step folder, a log): every
# escape goes to each of them (mutations()).
PATH_KEYS = ("name", "log", "config", "model", "mode", "chain", "source", "path", "model_dir", "reference",
             "executable", "kind", "step", "training", "precision")


def mutations(data: dict):
    """(label, mutated summary) for every field: each other type, missing, huge, and path escapes.

    Every field gets every type it does not have (OTHER_TYPES), `missing`, and a long list or mapping where it is
    one. What is sampled: the mutations that only repeat a class on a field where it means nothing more:
    - the empty list and mapping go to the list and mapping fields; on a field of another type each is one more
      "found a list" ("found a mapping"), the class [1, "a"] ({"k": [None]}) already puts on that same field;
    - the extreme numbers (10**30, 1e308, inf, -1) go to the fields that hold a number or null (where a bound or
      the finite check reads them); on a text, list or mapping field each is one more "found a number", a class
      7 and 2.5 of OTHER_TYPES already put on that same field;
    - the 2 MiB text (past every maxLength of the schema) goes to the fields that hold a text or null; on any
      other field it is one more "found a text", which "text" of OTHER_TYPES already puts there (and each case
      writes, hashes and parses 2 MiB: a third of the test's time went to these repeats);
    - the six path escapes go, all six, to every text field whose name is a path or a name a path is made of
      (PATH_KEYS), and one of them, in turn, to each other text field (so each form still reaches about a
      dozen fields of every part of the summary)."""
    escape_turn = 0
    for path in _paths(data):
        if not path:
            continue
        *parents, leaf = path
        node = data
        for part in parents:
            node = node[part]
        original = node[leaf]
        values = [v for v in OTHER_TYPES if type(v) is not type(original)
                  and (v != [] and v != {} or isinstance(original, (list, dict)))]  # [], {}: list and mapping fields
        if original is None or (isinstance(original, (int, float)) and not isinstance(original, bool)):
            values += [10 ** 30, 1e308, float("inf"), -1]
        if original is None or isinstance(original, str):
            values.append(HUGE_TEXT)
        if isinstance(original, str):
            if leaf in PATH_KEYS:
                values += list(ESCAPES)
            else:
                values.append(ESCAPES[escape_turn % len(ESCAPES)])
                escape_turn += 1
        if isinstance(original, (list, dict)):
            values.append(original * (500 // len(original)) if isinstance(original, list) and original else original)
        for value in values:
            yield f"{'.'.join(map(str, path))} = {str(value)[:30]!r}", path, value
        if isinstance(node, dict):
            yield f"{'.'.join(map(str, path))} missing", path, ...


def _mutated(data: dict, path: tuple, value, outside: str) -> dict:
    data = copy.deepcopy(data)
    *parents, leaf = path
    node = data
    for part in parents:
        node = node[part]
    if value is ...:
        del node[leaf]
    else:
        node[leaf] = value.format(outside=outside) if isinstance(value, str) and "{outside}" in value else value
    return data


def test_every_mutated_field_is_shown_or_one_clean_error(stub_run):
    repo, run_dir, data = stub_run
    outside = f"{repo.name}_outside"
    original = (run_dir / "summary.json").read_text()
    cases = errors = 0
    everything = list(mutations(data))
    sample, which = fuzz_sample(everything)  # a quarter per run, taking turns; all in a full run
    try:
        for label, path, value in sample:
            label = f"{label} [{which}]"
            mutated = _mutated(data, path, value, outside)
            (run_dir / "summary.json").write_text(json.dumps(mutated))
            cases += 1
            try:
                built = report.build(run_dir, repo)
                docs = report.render_documents(built, {})
                accepted = accept.check(repo, run_dir)
            except TipcgenError as exc:
                errors += 1
                assert isinstance(exc, SummaryFileError) or "summary.json" in str(exc), (label, exc)
                assert "\n" not in exc.message and len(exc.message) < 2000, label
                continue
            except Exception as exc:  # noqa: BLE001 - the point of the test
                pytest.fail(f"{label}: {type(exc).__name__}: {exc}"[:500])
            assert str(MARK) not in docs["report.md"] + docs["report.html"], label
            assert all(str(MARK) not in item.detail for item in accepted.items), label
    finally:
        (run_dir / "summary.json").write_text(original)
    assert len(everything) > 1500 and cases == len(sample) > 300 and 0 < errors < cases, (which, errors)


def test_a_step_name_or_log_that_climbs_out_is_refused_naming_the_field(stub_run):
    repo, run_dir, data = stub_run
    train = next(i for i, s in enumerate(data["steps"]) if s["kind"] == "train")
    for key, value in (("name", f"../../../../../{repo.name}_outside/x"), ("log", "../outside/x/train.log"),
                       ("name", "/tmp"), ("log", "/etc/passwd")):
        mutated = _mutated(data, ("steps", train, key), value, "")
        (run_dir / "summary.json").write_text(json.dumps(mutated))
        try:
            for args in (["report", str(run_dir)], ["accept", "--root", str(repo), "--run", str(run_dir)]):
                proc = tipcgen(*args)
                assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
                assert f"steps[{train}].{key}: must" in proc.stderr and str(MARK) not in proc.stdout + proc.stderr
        finally:
            (run_dir / "summary.json").write_text(json.dumps(data))


def test_a_train_log_linked_out_of_the_run_folder_is_not_read(stub_run):
    repo, run_dir, data = stub_run
    (run_dir / "summary.json").write_text(json.dumps(data))
    step = next(s for s in data["steps"] if s["kind"] == "train" and s["status"] == "passed")
    folder = run_dir / step["name"]
    folder.mkdir(exist_ok=True)
    link = folder / "train.log"
    saved = link.read_bytes() if link.is_file() and not link.is_symlink() else None
    link.unlink(missing_ok=True)
    link.symlink_to(repo.parent / f"{repo.name}_outside" / "x" / "train.log")
    try:
        built = report.build(run_dir, repo)
        assert all(str(MARK) not in str(curve.points) for curve in built.curves)
        assert all(str(MARK) not in item.detail for item in accept.check(repo, run_dir).items)
    finally:
        link.unlink()
        if saved is not None:
            link.write_bytes(saved)


def test_an_autolog_field_cannot_inject_markdown(stub_run):
    repo, run_dir, data = stub_run
    mutated = copy.deepcopy(data)
    infer = next(s for s in mutated["steps"] if s["kind"] == "infer" and s["status"] == "passed")
    infer["speed"] = {"device": "cpu | [click](http://evil.example) <img src=x>\n# Forged", "inference_ms": 1.0,
                      "precision": "![x](http://evil.example/t.png)"}
    (run_dir / "summary.json").write_text(json.dumps(mutated))
    try:
        md = report.render_documents(report.build(run_dir, repo), {}, ("md",))["report.md"]
    finally:
        (run_dir / "summary.json").write_text(json.dumps(data))
    assert not re.search(r"(?<!\\)\]\(http|(?<!\\)<img", md) and "\n# Forged" not in md


def test_escapes_in_a_path_or_a_log_never_reach_the_terminal(stub_run, tmp_path):
    repo, run_dir, data = stub_run
    folder = tmp_path / "run\x1b]0;owned\x07\rPASSED"
    folder.mkdir()
    proc = tipcgen("report", str(folder))
    assert proc.returncode == 2 and proc.stderr.count("error:") == 1, proc.stderr
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr and "\r" not in proc.stderr, proc.stderr
    mutated = copy.deepcopy(data)
    step = next(s for s in mutated["steps"] if s["kind"] == "train" and s["status"] == "passed")
    step.update(status="failed", reason="\x1b[2J\x1b]8;;http://evil\x07click", tail=["\x1b]0;title\x07", "ok"])
    (run_dir / "summary.json").write_text(json.dumps(mutated))
    try:
        from tipcgen.results import summary, summary_text

        text = summary_text.terminal_text(summary.load_summary(run_dir / "summary.json"))
        accepted = tipcgen("accept", "--root", str(repo), "--run", str(run_dir))
    finally:
        (run_dir / "summary.json").write_text(json.dumps(data))
    for shown in (text, accepted.stdout, accepted.stderr):
        assert "\x1b" not in shown and "\x07" not in shown
    assert "\\x1b]8;;http://evil\\x07click" in text


def test_through_the_cli_each_mutation_is_one_error_line_and_its_hint(stub_run):
    repo, run_dir, data = stub_run
    outside = f"{repo.name}_outside"
    try:
        for number, (label, path, value) in enumerate(mutations(data)):
            if number % 80:
                continue
            (run_dir / "summary.json").write_text(json.dumps(_mutated(data, path, value, outside)))
            for args in (["report", str(run_dir), "--format", "md"], ["accept", "--root", str(repo), "--run", str(run_dir)]):
                proc = tipcgen(*args)
                assert "Traceback" not in proc.stderr, (label, proc.stderr)
                if proc.returncode == 2:
                    lines = proc.stderr.splitlines()
                    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].startswith("  hint: "), \
                        (label, proc.stderr)
    finally:
        (run_dir / "summary.json").write_text(json.dumps(data))


def test_hostile_speed_files_of_a_benchmark_run_are_left_out(stub_run):
    repo, run_dir, data = stub_run
    index = run_dir / "index"
    index.mkdir(exist_ok=True)
    bad = {"inf_speed": '{"ips": 1e400}', "huge_speed": '{"ips": ' + "9" * 400 + "}", "text_speed": '{"ips": "7"}',
           "list_speed": "[1]", "nested_speed": "[" * 100_000, "good_speed": '{"ips": 12.5, "device_num": "N1C1"}'}
    for name, text in bad.items():
        (index / name).write_text(text)
    (run_dir / "summary.json").write_text(json.dumps({**data, "chain": "benchmark_train"}))
    try:
        built = report.build(run_dir, repo)
        pictures = report.draw(built)
        docs = report.render_documents(built, pictures)
    finally:
        (run_dir / "summary.json").write_text(json.dumps(data))
        shutil.rmtree(index)
    assert [row.case for row in built.speeds if row.ips is not None] == ["good"], built.speeds
    assert "report.md" in docs


def test_names_that_matplotlib_would_read_as_mathtext_or_cannot_draw_are_drawn_literally(stub_run):
    """A step's name or kind from summary.json reaches the pictures' labels: `$}$` or `$^^$` made matplotlib
    raise while drawing (mathtext: a traceback from tipcgen report), a NUL had no glyph. Both are drawn as
    text (markup.plot_text)."""
    from tipcgen.outputs import markup

    repo, run_dir, data = stub_run
    hostile = dict(data, steps=[dict(step, name=f"{step['name']}$}}$ x$^^${i}", kind=step["kind"] + "\x00$_{$")
                                for i, step in enumerate(data["steps"])])
    (run_dir / "summary.json").write_text(json.dumps(hostile))
    try:
        built = report.build(run_dir, repo)
        pictures = report.draw(built)
        proc = tipcgen("report", str(run_dir), "--format", "md")
    finally:
        (run_dir / "summary.json").write_text(json.dumps(data))
    assert pictures and all(png.startswith(b"\x89PNG") for png in pictures.values()), sorted(pictures)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert markup.plot_text("a$\\x$\x00\n") == "a\\$\\x\\$\\x00\n"
