"""doctor exports this repository's own model again (issue #56 item 4: before anyone advises or adds
FLAGS_enable_pir_api=0, tipcgen knows whether the export works with and without it): the export step the last lite
run recorded, run twice into a temporary folder, under PIR and under the old program IR, in the sandbox. And the
sandbox itself lets paddle.jit.to_static write its scratch (~/.cache/paddle/to_static_tmp/<pid>), without which
every to_static export failed under `run --sandbox`. Real paddle, a real bubblewrap sandbox, the session's lite run.
"""
from __future__ import annotations

import os
import shutil
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import tipcgen
from tipcgen.core import process, sandbox
from tipcgen.run import doctor, export_probe, sandboxed

needs_sandbox = pytest.mark.skipif(not sandbox.available()[0], reason="no bubblewrap sandbox here")
FLAG = export_probe.FLAG
OUT = "./test_tipc/output/m/lite_train_lite_infer/norm_train_gpus_-1_autocast_fp32"

_WORD = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20)


@settings(max_examples=300, deadline=None)
@given(words=st.lists(_WORD.filter(lambda w: "test_tipc" not in w), max_size=8), at=st.integers(0, 8),
       spelt=st.sampled_from(["=", " ", "/"]))
def test_only_the_output_folder_is_pointed_elsewhere(words, at, spelt):
    """The runner's output folder, as its own word or a flag's `=` value, goes to the probe's folder; the
    checkpoint's path, which starts with it, and every other word stay as they are."""
    ckpt = f"--params_path={OUT}/checkpoint"
    out_words, moved = {"=": ([f"--output_path={OUT}"], ["--output_path=/tmp/probe"]),
                        " ": (["--output_path", OUT], ["--output_path", "/tmp/probe"]),
                        "/": ([OUT + "/"], ["/tmp/probe"])}[spelt]
    argv = tuple(words[:at] + [ckpt] + out_words + words[at:])
    assert export_probe.retarget(argv, OUT, "/tmp/probe") == tuple(words[:at] + [ckpt] + moved + words[at:])


@pytest.mark.parametrize("argv, pir, old", [
    (("python", "export.py"), ("python", "export.py"), ("env", f"{FLAG}=0", "python", "export.py")),
    (("env", f"{FLAG}=0", "python", "export.py"), ("python", "export.py"), ("env", f"{FLAG}=0", "python", "export.py")),
    (("env", "CUDA_VISIBLE_DEVICES=0", f"{FLAG}=1", "python", "e.py", "--x=1"),
     ("env", "CUDA_VISIBLE_DEVICES=0", "python", "e.py", "--x=1"),
     ("env", "CUDA_VISIBLE_DEVICES=0", f"{FLAG}=0", "python", "e.py", "--x=1")),
])
def test_the_two_commands_differ_only_in_the_flag(argv, pir, old):
    assert export_probe.variants(argv) == (pir, old)


@needs_sandbox
@pytest.mark.paddle
def test_a_to_static_export_writes_its_scratch_in_the_sandbox(tmp_path):
    """paddle.jit.to_static writes the code it converts under ~/.cache/paddle/to_static_tmp/<pid>; the sandbox's
    home is read-only and its pids are its own, so that folder was missing there: a private tmpfs now."""
    pytest.importorskip("paddle")
    out = tmp_path / "out"
    out.mkdir()
    code = ("import paddle\nnet = paddle.nn.Linear(4, 2)\n"
            "static = paddle.jit.to_static(net, input_spec=[paddle.static.InputSpec([None, 4], 'float32')])\n"
            f"paddle.jit.save(static, {str(out / 'inference')!r})\nprint('SAVED')\n")
    script = tmp_path / "export.py"
    script.write_text(code)
    env = dict(os.environ)
    spec = sandboxed.spec(tmp_path, tmp_path / "run", env, shutil.which(sys.executable) or sys.executable)
    assert spec.scratch and spec.scratch[0].endswith("/.cache/paddle/to_static_tmp")
    outcome = process.run(process.Request([sys.executable, str(script)], cwd=tmp_path, env=env, sandbox=spec,
                                          timeout=300, stderr="separate"))
    assert outcome.exit_code == 0 and "SAVED" in outcome.output, outcome.errors[-2000:]
    assert (out / "inference.pdiparams").is_file()


@needs_sandbox
@pytest.mark.paddle
def test_doctor_exports_this_model_again_under_pir_and_the_old_ir(sample_lite_run, tmp_path):
    """bert-sst2 on Paddle 3.3.1: its export works under PIR and fails under FLAGS_enable_pir_api=0 (the matmul
    `must be Value, but got Variable` of issue #56): doctor says both, and never advises the flag; the repository
    is left as it was (the probe writes only its temporary folder)."""
    repo = tmp_path / "repo"
    shutil.copytree(sample_lite_run, repo, symlinks=True)
    before = sorted(str(p.relative_to(repo)) for p in repo.rglob("*"))
    checks = doctor.diagnose(repo, None)
    row = next(c for c in checks if c.name == "export of this model")
    assert row.status == "ok", row
    assert "under PIR (Paddle 3's default) it writes" in row.detail and "inference.pdiparams" in row.detail, row
    assert f"under {FLAG}=0 it fails: " in row.detail and f"never add {FLAG}=0 for this model" in row.detail, row
    assert not any(f'{FLAG}: "0"' in c.fix for c in checks), [c for c in checks if FLAG in c.fix]
    assert sorted(str(p.relative_to(repo)) for p in repo.rglob("*")) == before


def test_doctor_says_the_export_was_not_probed_before_a_lite_run(tmp_path):
    """No lite run recorded an export yet: a warning naming what to run, never a pass."""
    tipcgen("init", "bert-sst2", "--output", str(tmp_path), check=True)
    checks = doctor.diagnose(tmp_path, None)
    row = next(c for c in checks if c.name == "export of this model")
    assert row.status == "warn" and "not probed" in row.detail and "lite_train_lite_infer" in row.fix, row
