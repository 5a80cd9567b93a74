"""The dy2static configs and their loss check, without paddle (docs/CHAINS.md, "The dy2static chain").

The corpus's PaddleClas ``*_train_dy2static_python.txt`` files lint without errors, import into a
``dy2static:`` section and render back byte for byte; the other suites' dy2static layouts get one warning and
are not imported. A descriptor's section is validated (its tolerance like checks.*_tolerance, its lines, the
to_static switch it renders from). ``check_dy2static.py`` names the first step where two trainings' losses part,
for fixed and generated loss curves. The real chain: tests/chains/test_dy2static_chain.py.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, fuzz_examples
from tipcgen import descriptor
from tipcgen.configs.import_dy2static import import_dy2static
from tipcgen.configs.lint import lint_text
from tipcgen.core.errors import ConfigImportError, DescriptorError
from tipcgen.format import dy2static, paths
from tipcgen.format.config import TipcConfig
from tipcgen.render import repository, shipped

SHARED = ROOT.parent / "shared"
ALL = sorted(p for corpus in ("tipc-corpus", "tipc-corpus-2") if (SHARED / corpus).is_dir()
             for p in (SHARED / corpus).rglob("*train_dy2static_python.txt"))
CLAS = [p for p in ALL if "PaddleClas" in p.parts]
OTHER = [p for p in ALL if "PaddleClas" not in p.parts]
needs_corpus = pytest.mark.skipif(len(CLAS) != 9, reason=f"the corpus not found under {SHARED}")
FIXTURE = ROOT / "tests" / "fixtures" / "dy2static_mlp"
CHECK = shipped.HERE / paths.CHECK_DY2STATIC


def _descriptor(section: str = "dy2static: {}\n", base: str = "tipc.yaml", path: Path | None = None):
    text = (FIXTURE / base).read_text(encoding="utf-8")
    text = text[: text.index("dy2static:")] + section
    return descriptor.load_text(text, str(path or FIXTURE / base), FIXTURE)


@needs_corpus
@pytest.mark.parametrize("path", CLAS, ids=lambda p: p.name.split("__")[-1])
def test_a_corpus_config_lints_imports_and_renders_back_byte_for_byte(path: Path) -> None:
    text = path.read_bytes().decode("utf-8")
    assert [f for f in lint_text(text, str(path)) if f.severity == "error"] == []
    desc = _descriptor(import_dy2static(text, str(path)))
    files = repository.render_repository([desc])
    assert files[paths.config_rel(desc.model_name, "dy2static")] == text
    assert paths.RUNNERS["dy2static"] in files and paths.shipped_rel(paths.CHECK_DY2STATIC) in files


@needs_corpus
@pytest.mark.parametrize("path", OTHER, ids=lambda p: p.name.split("__")[-1])
def test_another_suites_dy2static_layout_is_one_warning_and_not_imported(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    findings = lint_text(text, str(path))
    assert [f.rule for f in findings if f.severity == "error"] == []
    assert any(f.rule == "unknown-layout" and "PaddleClas" in f.message for f in findings)
    with pytest.raises(ConfigImportError, match="another layout than PaddleClas"):
        import_dy2static(text, str(path))


def test_the_sample_layout_renders_from_the_basic_config() -> None:
    desc = _descriptor()
    files = repository.render_repository([desc])
    text = files[paths.config_rel(desc.model_name, "dy2static")]
    basic = TipcConfig.parse(files[paths.config_rel(desc.model_name)]).logical_lines()
    lines = text.splitlines()
    assert lines[0] == dy2static.HEADER and lines[1:] == [line.text for line in basic[1:dy2static.LINES]]
    assert lines[19] == "to_static_train:--to_static=True"
    assert dy2static.shift(TipcConfig.parse(text)) is None
    runner = files[paths.RUNNERS["dy2static"]]
    assert "dy2static_mlp) check_args=(\"--atol=1e-05\" \"--rtol=1e-05\")" in runner


def test_a_missing_line_is_a_slot_shift_error() -> None:
    config = repository.render_repository([_descriptor()])[paths.config_rel("dy2static_mlp", "dy2static")]
    lines = config.splitlines()
    del lines[16]  # pact_train
    findings = lint_text("\n".join(lines) + "\n", "x.txt")
    assert [(f.rule, f.line) for f in findings if f.severity == "error"] == [("slot-shift", 17)], findings


@pytest.mark.parametrize("section, field, message", [
    ("dy2static: {tolerance: {atol: -1}}\n", "dy2static.tolerance.atol", "tolerance"),
    ("dy2static: {tolerance: {rtol: .nan}}\n", "dy2static.tolerance.rtol", "tolerance"),
    ("dy2static: {tolerance: 0.1}\n", "dy2static.tolerance", "mapping"),
    ("dy2static: {lines: [model_name:x]}\n", "dy2static.lines", "not a dy2static config"),
    ("dy2static: {lines: []}\n", "dy2static.lines", "list"),
    ("dy2static: {final_newline: false}\n", "dy2static.final_newline", "lines only"),
    ("dy2static: {loss: 1}\n", "dy2static.loss", "unknown field"),
    ("dy2static: [1]\n", "dy2static", "mapping"),
])
def test_a_bad_section_names_its_field(section: str, field: str, message: str) -> None:
    with pytest.raises(DescriptorError) as caught:
        _descriptor(section)
    assert field in str(caught.value) and message in str(caught.value)


def test_rendering_from_the_basic_config_needs_the_to_static_switch() -> None:
    text = (FIXTURE / "tipc.yaml").read_text(encoding="utf-8").replace(
        "  to_static: {key: to_static_train, value: --to_static=True}\n", "")
    with pytest.raises(DescriptorError, match="train.to_static"):
        descriptor.load_text(text, str(FIXTURE / "tipc.yaml"), FIXTURE)


# ---- check_dy2static.py -----------------------------------------------------------------------------

# What paddle 3.3.1 logs under TRANSLATOR_VERBOSITY=1 (the runner sets it), cut from real trainings of the fixture
# MLP: through to_static(full_graph=True) (the source, the conversions, the forward and backward programs), the same
# under the old IR (FLAGS_enable_pir_api=0: the conversions only), and a to_static Linear called under no_grad.
LOGS = ROOT / "tests" / "fixtures" / "dy2static_logs"
PIR, OLD_IR, NO_GRAD = ((LOGS / name).read_text() for name in ("to_static_pir.log", "to_static_old_ir.log", "no_grad_pir.log"))


def _check(tmp_path: Path, dygraph: list[float], static: list[float], *args: str, dumps: tuple[str, str] = ("", PIR)
           ) -> subprocess.CompletedProcess:
    records = []
    for trainer, values, dump in (("norm_train", dygraph, dumps[0]), ("to_static_train", static, dumps[1])):
        log = tmp_path / f"{trainer}.log"
        log.write_text("rank 0 of world size 1\n" + dump
                       + "".join(f"epoch: 0, global_step: {i + 1}, loss: {v!r}, lr: 0.1\n" for i, v in enumerate(values)))
        records.append({"kind": "train", "name": trainer, "exit_code": 0, "log": str(log), "trainer": trainer,
                        "gpu": "-1", "autocast": "null"})
    (tmp_path / "steps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return subprocess.run([sys.executable, str(CHECK), f"--records={tmp_path / 'steps.jsonl'}",
                           f"--out={tmp_path / 'curves.json'}", *args], capture_output=True, text=True)


def test_equal_losses_pass_and_the_curves_are_written(tmp_path: Path) -> None:
    proc = _check(tmp_path, [1.1, 0.9, 0.7], [1.1, 0.9, 0.7 + 1e-7])
    assert proc.returncode == 0, proc.stdout
    assert "3 logged losses agree" in proc.stdout
    curves = json.loads((tmp_path / "curves.json").read_text())
    assert curves["gpus -1, autocast null"]["to_static"][2][0] == 3


@pytest.mark.parametrize("dygraph, static, expected", [
    ([1.0, 0.9, 0.8, 0.7], [1.0, 0.9, 0.85, 0.7], "diverge first at step 3 (logged loss 3 of 4)"),
    ([1.0, 0.9], [1.0, float("nan")], "diverge first at step 2"),
    ([1.0, 0.9, 0.8], [1.0, 0.9], "the dygraph training logged 3 losses, the to_static one 2"),
    ([1.0], [], "prints no `loss: X`"),
])
def test_a_divergence_is_named_by_its_step(tmp_path: Path, dygraph, static, expected) -> None:
    proc = _check(tmp_path, dygraph, static)
    assert proc.returncode == 1 and expected in proc.stdout, proc.stdout


@pytest.mark.parametrize("dumps, expected", [
    # to_static never called (the reported bug: two dygraph runs, equal losses): paddle logged nothing.
    (("", ""), "the to_static training did not go through paddle.jit.to_static: its log ("),
    (("", NO_GRAD), "every backward program is empty: the training's gradients never went through"),
    ((PIR, PIR), "the dygraph training's gradients went through 1 program(s) paddle.jit.to_static built"),
])
def test_a_static_training_without_paddles_evidence_fails_naming_what_is_missing(tmp_path: Path, dumps, expected) -> None:
    proc = _check(tmp_path, [1.1, 0.9], [1.1, 0.9], dumps=dumps)
    assert proc.returncode == 1 and expected in proc.stdout, proc.stdout
    if not dumps[1]:
        assert "shows no program paddle.jit.to_static built" in proc.stdout and "TRANSLATOR_VERBOSITY=1" in proc.stdout


@pytest.mark.parametrize("dumps, shown", [
    (("", PIR), "paddle built 1 program(s) from the converted code, 1 with a backward program holding ops"),
    (("", OLD_IR), "paddle's AST translator converted 3 function(s) (the old IR"),
    ((NO_GRAD, PIR), "paddle built 1 program(s)"),  # a dygraph training may convert what has no gradients
])
def test_an_honest_static_training_passes_naming_paddles_evidence(tmp_path: Path, dumps, shown) -> None:
    proc = _check(tmp_path, [1.1, 0.9], [1.1, 0.9], dumps=dumps)
    assert proc.returncode == 0 and f"the to_static training went through paddle.jit.to_static: {shown}" in proc.stdout, proc.stdout


SOURCE = ("Sun Dec 06 10:38:59 Dynamic-to-Static INFO: (Level 1) Source code: \n"
          "def forward(self, x):\n    loss = 0.5 * x\n\n    step = 3\n    return loss\n")


@settings(max_examples=fuzz_examples(60), deadline=None)
@given(losses=st.lists(st.floats(0.01, 10.0), max_size=12),
       dumps=st.lists(st.tuples(st.integers(0, 12), st.sampled_from(["pir", "old", "no_grad", "source"])), max_size=5))
def test_paddles_dumps_anywhere_in_a_log_are_evidence_never_losses(tmp_path_factory, losses, dumps) -> None:
    from tipcgen.render.shipped import check_dy2static

    texts = {"pir": PIR, "old": OLD_IR, "no_grad": NO_GRAD, "source": SOURCE}
    lines = [f"epoch: 0, global_step: {i + 1}, loss: {v!r}\n" for i, v in enumerate(losses)]
    for at, name in sorted(dumps, reverse=True):
        lines.insert(min(at, len(lines)), texts[name])
    log = tmp_path_factory.mktemp("log") / "train.log"
    log.write_text("".join(lines))
    read, seen = check_dy2static.read_log(log)
    assert read == [(i + 1, v) for i, v in enumerate(losses)]  # a dumped `loss = 0.5 * x` is not a logged loss
    names = [name for _, name in dumps]
    assert seen["forward"] == names.count("pir") + names.count("no_grad") and seen["backward"] == names.count("pir")
    problem, _ = check_dy2static.static_problem(seen, str(log))
    # The translator's source dump is a conversion too (the old IR logs nothing more).
    assert (problem is None) == ("pir" in names or (bool({"old", "source"} & set(names)) and "no_grad" not in names))


def test_a_missing_training_fails(tmp_path: Path) -> None:
    (tmp_path / "steps.jsonl").write_text(json.dumps({"kind": "train", "trainer": "norm_train", "exit_code": 0,
                                                      "log": "x", "gpu": "-1", "autocast": "null"}) + "\n")
    proc = subprocess.run([sys.executable, str(CHECK), f"--records={tmp_path / 'steps.jsonl'}"], capture_output=True, text=True)
    assert proc.returncode == 1 and "no passed to_static_train training" in proc.stdout


@settings(max_examples=fuzz_examples(60), deadline=None)
@given(losses=st.lists(st.floats(0.01, 10.0), min_size=1, max_size=30), data=st.data())
def test_the_first_step_beyond_the_tolerance_is_the_one_named(tmp_path_factory, losses, data) -> None:
    from tipcgen.render.shipped import check_dy2static

    at = data.draw(st.integers(0, len(losses) - 1))
    bump = data.draw(st.floats(1e-3, 1.0))
    static = [(v + bump if i >= at else v) for i, v in enumerate(losses)]
    dygraph = [(i + 1, v) for i, v in enumerate(losses)]
    problem, _ = check_dy2static.compare(dygraph, [(i + 1, v) for i, v in enumerate(static)], 1e-5, 1e-5)
    assert problem is not None and f"diverge first at step {at + 1} " in problem
    assert check_dy2static.compare(dygraph, dygraph, 0.0, 0.0)[0] is None
    assert not math.isnan(check_dy2static.compare(dygraph, dygraph, 0.0, 0.0)[1])


def test_accept_names_the_runner_of_the_run_it_judges() -> None:
    from tipcgen.outputs import accept
    from tipcgen.results.summary import Summary

    item = accept.run_item(ROOT, ROOT, Summary(model="m", mode="lite_train_lite_infer", config="c", chain="dy2static"))
    assert item.title == "the chain passes (prepare.sh + test_train_dy2static_python.sh)"
