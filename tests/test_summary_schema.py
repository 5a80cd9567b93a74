"""summary.json has a published JSON Schema (tipcgen/summary.schema.json, #37 item 4): the shipped file is a fresh
generation of results/summary_schema.py, what `Summary.to_dict` writes fits it under any Draft 2020-12 validator,
`Summary.from_dict` reads it back, and tipcgen's reader refuses what does not fit, naming the field."""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from tipcgen.core.errors import SummaryFileError
from tipcgen.format.paths import STEP_FIELDS
from tipcgen.format.words import FAILED, PASSED, SKIPPED, STATUSES
from tipcgen.results import summary_check, summary_schema
from tipcgen.results.summary import Step, Summary

jsonschema = pytest.importorskip("jsonschema")


def _summary() -> Summary:
    steps = [Step.flat("train", "norm_train", PASSED, 0, 1.5, "./test_tipc/output/m/x/train.log", gpu="-1", training="gpus_-1"),
             Step("infer", "infer_cpu", FAILED, 1, 0.5, "./l.log", reason="exit code 1", tail=["a", "b"],
                  speed={"inference_ms": 1.5, "precision": "fp32", "device": None}),
             Step.flat("check", "check_results", PASSED, 0, 0.1, "./c.log", metrics={"loss": float("nan")},
                  check={"max_abs": {"logits": 1e-7}, "atol": 1e-5, "rtol": 1e-4, "logs": 2}),
             Step("speed", "N1C1", SKIPPED, None, 0.0, "./s.log", speed={"ips": 12.5, "speed_unit": "samples/s"})]
    return Summary("m", "lite_train_lite_infer", "test_tipc/configs/m/c.txt", steps=steps, wall_seconds=3.0,
                   runner_exit_code=1, required_kinds=["train"], environment={"python": "3.11"},
                   provenance={"git": {"commit": None, "dirty": False}, "data": [{"path": "d", "method": "size"}]},
                   target={"reproduced": False, "metrics": [{"metric": "acc", "paper": 0.9, "measured": None,
                                                             "bound": 0.88, "reproduced": False}]},
                   notes=["a note"])


def test_the_shipped_schema_is_a_fresh_generation_and_a_valid_schema():
    assert summary_check.SCHEMA_FILE.read_text(encoding="utf-8") == summary_schema.json_text(), \
        "regenerate: python -c 'from tipcgen.results import summary_schema as s; print(s.json_text(), end=\"\")' " \
        "> tipcgen/summary.schema.json"
    jsonschema.Draft202012Validator.check_schema(summary_schema.SCHEMA)
    assert summary_schema.SCHEMA["$defs"]["step"]["properties"]["status"]["enum"] == list(STATUSES)


def test_what_to_dict_writes_fits_any_validator_and_from_dict_reads_it_back():
    summary = _summary()
    data = json.loads(json.dumps(summary.to_dict()))
    jsonschema.Draft202012Validator(summary_schema.SCHEMA).validate(data)  # a plain validator: the file is usable
    summary_check.check_summary_data(data, "summary.json")
    again = Summary.from_dict(data)
    assert again.to_dict().keys() == summary.to_dict().keys() and again.ok == summary.ok
    assert [s.to_dict() for s in again.steps][:2] == [s.to_dict() for s in summary.steps][:2]
    assert math.isnan(again.steps[2].metrics["loss"]) and Step.from_dict({**data["steps"][0], "new": 1}).kind == "train"


@pytest.mark.parametrize("change, field, words", [
    (lambda d: d["steps"][1].update(exit_code=1.0), "steps[1].exit_code", "expected null or a whole number"),
    (lambda d: d["steps"][0].update(seconds=float("nan")), "steps[0].seconds", "expected a finite number, found nan"),
    (lambda d: d["steps"][3].update(speed={"speed_unit": "x"}), "steps[3].speed.ips", "is missing"),
    (lambda d: d["steps"][2]["check"].pop("atol"), "steps[2].check.atol", "is missing"),
    (lambda d: d["steps"][0].update(status="ok"), "steps[0].status", "expected one of"),
    (lambda d: d["target"]["metrics"][0].update(paper=float("inf")), "target.metrics[0].paper", "finite"),
    (lambda d: d["provenance"]["data"][0].update(method="sha256"), "provenance.data[0].sha256", "is missing"),
    (lambda d: d["steps"][0].update(metrics={"loss": 10 ** 400}), "steps[0].metrics.loss", "too large"),
    (lambda d: d.update(runner_exit_code=1 << 40), "runner_exit_code", "outside"),
    (lambda d: d.update(wall_seconds=True), "wall_seconds", "expected a number, found a boolean"),
    (lambda d: d["steps"][0].update(training="../x"), "steps[0].training", "must be a plain name"),
    (lambda d: d["steps"][0].update(name="/etc"), "steps[0].name", "must name a folder inside the run folder"),
])
def test_what_does_not_fit_is_one_error_naming_the_field(change, field, words):
    data = json.loads(json.dumps(_summary().to_dict()))
    change(data)
    with pytest.raises(SummaryFileError) as info:
        summary_check.check_summary_data(data, "s.json")
    assert info.value.message.startswith(f"s.json: {field}: ") and words in info.value.message, info.value.message


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                    max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["model", "config", "steps", "target", "provenance", "environment", "notes", "wall_seconds"]),
       JSON, st.integers(0, 3), st.sampled_from(["kind", "speed", "check", "metrics", "tail", "seconds", "gpu"]))
def test_any_value_anywhere_is_read_or_one_summary_error(top, value, number, key):
    in_step = _summary().to_dict()
    in_step["steps"][number][key] = value
    for data in (dict(_summary().to_dict(), **{top: value}), in_step):
        try:
            summary_check.check_summary_data(json.loads(json.dumps(data)), "s.json")
        except SummaryFileError as exc:
            assert "\n" not in exc.message and len(exc.message) < 600


def test_a_summary_that_passed_is_checked_again_once_its_bytes_change(tmp_path, monkeypatch):
    """report, accept and golden read one summary several times: its check runs once per content (sha256), and a
    file rewritten with a field tipcgen never writes is refused on the next read."""
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(_summary().to_dict()), encoding="utf-8")
    calls = []
    check = summary_check.check_summary_data
    monkeypatch.setattr(summary_check, "check_summary_data", lambda data, source: calls.append(source) or check(data, source))
    first = summary_check.read_summary_data(path)
    assert summary_check.read_summary_data(path) == first and len(calls) == 1
    first["steps"][0]["status"] = "maybe"
    path.write_text(json.dumps(first), encoding="utf-8")
    with pytest.raises(SummaryFileError, match=r"steps\[0\]\.status"):
        summary_check.read_summary_data(path)
    assert len(calls) == 2


def test_a_step_the_runner_cut_short_is_interrupted_and_the_run_never_passes(tmp_path):
    """The runner alone stopped (a SIGTERM to it, not to tipcgen run): its record says failed, reason interrupted,
    and its status log "Run failed" (upstream's line); the summary reads the step as interrupted, the verdict is
    INTERRUPTED and the exit 130 although tipcgen run itself received no signal (#57)."""
    from tipcgen.results import junit
    from tipcgen.results.summary import check_status_lines, read_records

    run_dir = tmp_path / "test_tipc/output/m/lite_train_lite_infer"
    run_dir.mkdir(parents=True)
    records = [{"kind": "train", "name": "norm_train", "status": "passed", "exit_code": 0, "seconds": 1.0,
                "log": "", "command": "python train.py"},
               {"kind": "infer", "name": "infer_cpu", "status": "failed", "exit_code": 143, "seconds": 2.0,
                "log": "", "reason": "interrupted", "command": "python infer.py"},
               {"kind": "check", "name": "check_results", "status": "failed", "exit_code": 1, "seconds": 0.1,
                "log": "", "reason": "exit code 1", "command": "python compare.py"}]
    (run_dir / "steps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (run_dir / "results_python.log").write_text("Run successfully with command - m - a - l\n"
                                                 "Run failed with command - m - b - l\nRun failed with command - m - c - l\n")
    steps, problems = read_records(run_dir, tmp_path)
    assert problems == [] and [s.status for s in steps] == [PASSED, "interrupted", FAILED]
    assert check_status_lines(run_dir, steps) == [], "an interrupted step's status line is a failure line"
    summary = Summary("m", "lite_train_lite_infer", "c.txt", steps=steps, runner_exit_code=130, required_kinds=["train"])
    assert not summary.interrupted and summary.was_interrupted and not summary.ok
    assert (summary.verdict, summary.exit_code) == ("INTERRUPTED", 130)
    data = json.loads(json.dumps(summary.to_dict()))
    summary_check.check_summary_data(data, "summary.json")
    assert (data["passed"], data["failed"], data["interrupted_steps"]) == (1, 1, 1)
    assert Summary.from_dict(data).verdict == "INTERRUPTED"
    xml = junit.junit_text("tipc", [junit.summary_suite(summary)], 1.0)
    assert 'errors="1"' in xml and 'failures="1"' in xml and 'message="interrupted: the run was stopped' in xml
    # Only the runners' exact reason is read so: a step that failed with any other reason stays failed.
    for reason in ("Interrupted", "interrupted by the user", " interrupted"):
        (run_dir / "steps.jsonl").write_text(json.dumps({**records[1], "reason": reason}) + "\n")
        assert [s.status for s in read_records(run_dir, tmp_path)[0]] == [FAILED]


def test_a_step_is_typed_in_memory_and_flat_on_disk():
    """Step's chain-specific fields are sub-records (the training it belongs to, the case it ran in, the proof it
    checked); its record on disk stays flat: steps.jsonl's keys (paths.STEP_FIELDS, what tipc_record writes) and
    summary.json's are the sub-records' fields, and the schema's step properties are derived from the classes."""
    from tipcgen.results.summary import StepCase, StepCheck, StepTraining, flat_fields

    keys = [key for key, _, _ in flat_fields()]
    assert len(keys) == len(set(keys)), "two fields spell one flat key"
    shell = {key for key, annotation, holder in flat_fields() if holder in ("training", "case", "check")
             and annotation == "str | None"}
    assert shell == set(STEP_FIELDS), "the runner's record fields and the sub-records' text fields differ"
    props = summary_schema.SCHEMA["$defs"]["step"]["properties"]
    assert set(props) == set(keys) - {"speed"} and props["training"] == props["gpu"] == {"anyOf": [{"type": "null"},
                                                                                                   {"type": "string"}]}
    flat = {"kind": "check", "name": "golden_gpus_-1", "status": PASSED, "gpu": "-1", "training": "gpus_-1",
            "device": "cpu", "precision": "fp32", "model_dir": "out/m", "device_num": "N1C1", "reference": "golden",
            "check": {"logs": 2}}
    step = Step.from_dict(flat)
    assert step.training == StepTraining(gpu="-1", name="gpus_-1")
    assert step.case == StepCase(device="cpu", precision="fp32", model_dir="out/m", device_num="N1C1")
    assert step.check == StepCheck("golden", {"logs": 2})
    written = step.to_dict()
    assert list(written) == keys and {k: written[k] for k in flat} == flat
    assert Step.from_dict(written) == step == Step.flat("check", "golden_gpus_-1", PASSED, **{
        k: v for k, v in flat.items() if k not in ("kind", "name", "status")})
    written["check"]["logs"] = 3  # to_dict copies: the summary written is not the step in memory
    assert step.check.differences == {"logs": 2}
    with pytest.raises(TypeError, match="no key model"):
        Step.flat("infer", "c", PASSED, model="out/m")  # a misspelt key is an error, not a field left empty


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(STEP_FIELDS)),
                       st.none() | st.text(max_size=6)))
def test_any_record_fields_survive_the_round_trip(fields):
    """Whatever record fields a runner wrote, to_dict gives back each one under its own key, and the rest None."""
    step = Step.flat("infer", "c", PASSED, **fields)
    written = step.to_dict()
    assert all(written[key] == value for key, value in fields.items())
    assert Step.from_dict(written) == step
