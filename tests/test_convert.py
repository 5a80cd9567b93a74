"""tipcgen align convert: PyTorch state dicts to .pdparams by rule sets, pickle-safe, every key accounted for."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tipcgen.repro.checkpoint_io import CheckpointError, read_paddle_state, read_torch_state
from tipcgen.repro.convert import ConvertError, convert_state, load_rules, rules_from_mapping

from conftest import ROOT, chain_env, tipcgen

MODELS = ROOT / "tests" / "fixtures" / "repro" / "models.py"


@pytest.fixture(scope="session")
def weights(tmp_path_factory) -> Path:
    """torch and Paddle weights of the BN CNN and the sample's BERT, written once (~10 s, one process)."""
    for module in ("torch", "transformers", "paddle"):
        pytest.importorskip(module)
    out = tmp_path_factory.mktemp("repro_weights")
    subprocess.run([sys.executable, str(MODELS), str(out)], check=True, env=chain_env(), capture_output=True,
                   timeout=300)
    return out


@pytest.mark.paddle
def test_sample_bert_reference_converts_with_the_bert_rules_and_zero_unmatched_keys(weights, tmp_path):
    out = tmp_path / "bert.pdparams"
    proc = tipcgen("align", "convert", str(weights / "bert.bin"), "--rules", "bert",
                   "--check", str(weights / "bert_target.pdparams"), "-o", str(out), "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    import json

    report = json.loads(proc.stdout)
    assert report["unmatched"] == report["missing"] == report["shape_mismatch"] == [] and report["tensors"] == 41
    assert len(report["transposed"]) == 14  # q, k, v, out, linear1, linear2 per layer; pooler; classifier
    converted, torch_state = read_paddle_state(out), read_torch_state(weights / "bert.bin")
    assert set(converted) == set(read_paddle_state(weights / "bert_target.pdparams"))
    np.testing.assert_array_equal(converted["classifier.weight"], torch_state["classifier.weight"].T)
    np.testing.assert_array_equal(converted["bert.encoder.layers.1.norm2.weight"],
                                  torch_state["bert.encoder.layer.1.output.LayerNorm.weight"])
    np.testing.assert_array_equal(converted["bert.embeddings.word_embeddings.weight"],
                                  torch_state["bert.embeddings.word_embeddings.weight"])  # embeddings stay as they are


@pytest.mark.paddle
@pytest.mark.parametrize("source", ["cnn.pt", "cnn_legacy.pth"])
def test_batchnorm_cnn_converts_with_the_bn_cnn_rules(weights, tmp_path, source):
    out = tmp_path / "cnn.pdparams"
    proc = tipcgen("align", "convert", str(weights / source), "--rules", "bn-cnn",
                   "--check", str(weights / "cnn_target.pdparams"), "-o", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 dropped" in proc.stdout and "dropped bn.num_batches_tracked" in proc.stdout
    converted, torch_state = read_paddle_state(out), read_torch_state(weights / "cnn.pt")
    np.testing.assert_array_equal(converted["bn._variance"], torch_state["bn.running_var"])
    np.testing.assert_array_equal(converted["fc2.weight"], torch_state["fc2.weight"].T)
    np.testing.assert_array_equal(converted["conv.weight"], torch_state["conv.weight"])  # 4-D: not transposed


@pytest.mark.paddle
def test_a_renamed_key_fails_naming_it_and_writes_nothing(weights, tmp_path):
    out = tmp_path / "bert.pdparams"
    proc = tipcgen("align", "convert", str(weights / "bert_renamed.bin"), "--rules", "bert",
                   "--check", str(weights / "bert_target.pdparams"), "-o", str(out))
    assert proc.returncode == 1
    assert "unmatched: classifier.kernel" in proc.stdout and "missing: classifier.weight" in proc.stdout
    assert not out.exists()
    allowed = tipcgen("align", "convert", str(weights / "bert_renamed.bin"), "--rules", "bert", "--check",
                      str(weights / "bert_target.pdparams"), "-o", str(out), "--allow", "classifier.*")
    assert allowed.returncode == 0 and "allowed unmatched: classifier.kernel" in allowed.stdout


@pytest.mark.paddle
def test_a_missing_key_fails_naming_it_checked_against_a_model_factory(weights, tmp_path):
    proc = tipcgen("align", "convert", str(weights / "cnn_missing.pt"), "--rules", "bn-cnn", "--check",
                   "models:paddle_cnn", "-o", str(tmp_path / "x.pdparams"), cwd=MODELS.parent)
    assert proc.returncode == 1, proc.stderr
    assert "missing: bn._variance" in proc.stdout and "unmatched" not in proc.stdout


def _payload(marker: Path) -> bytes:
    return f"cos\nsystem\n(S'touch {marker}'\ntR.".encode()


def test_a_pt_file_that_would_run_code_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "pwned"
    zipped = tmp_path / "evil.pt"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("evil/data.pkl", _payload(marker))
        archive.writestr("evil/version", "3\n")
    legacy = tmp_path / "evil_legacy.pth"
    legacy.write_bytes(_payload(marker))
    for path in (zipped, legacy):
        proc = tipcgen("align", "convert", str(path), "--rules", "bn-cnn", "-o", str(tmp_path / "out.pdparams"))
        assert proc.returncode == 2, proc.stderr
        assert "refused to load" in proc.stderr and "os.system" in proc.stderr and "Traceback" not in proc.stderr
        assert not marker.exists() and not (tmp_path / "out.pdparams").exists()


def test_a_pdparams_that_would_run_code_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pdparams"
    path.write_bytes(_payload(marker))
    with pytest.raises(CheckpointError, match="refused to load"):
        read_paddle_state(path)
    assert not marker.exists()


def test_rules_transpose_cast_drop_and_allow_in_process():
    rules = load_rules("bn-cnn")
    source = {"fc.weight": np.arange(6, dtype="float64").reshape(2, 3), "fc.bias": np.zeros(2, "float16"),
              "embed.weight": np.ones((4, 2), "float32"), "bn.num_batches_tracked": np.array(3)}
    result = convert_state(source, rules, {"fc.weight": (3, 2), "fc.bias": (2,), "embed.weight": (4, 2)})
    assert result.passed and result.dropped == ["bn.num_batches_tracked"]
    assert result.state["fc.weight"].shape == (3, 2) and result.state["fc.weight"].dtype == np.float32
    assert result.state["embed.weight"].shape == (4, 2)  # embeddings are not transposed
    wrong = convert_state(source, rules, {"fc.weight": (2, 3), "fc.bias": (2,), "embed.weight": (4, 2)})
    assert wrong.shape_mismatch == ["fc.weight: converted [3, 2], the target expects [2, 3] (transposed?) (from fc.weight)"]


@pytest.mark.parametrize("data, field", [({"renames": []}, "renames"), ({"rename": [["(", "x"]]}, "rename[0]"),
                                          ({"dtype": "int8"}, "dtype"), ({"base": "gpt"}, "base")])
def test_bad_rule_files_name_the_field(data, field):
    with pytest.raises(ConvertError, match=field.replace("[", r"\[")):
        rules_from_mapping(data, "rules.yaml")


def test_a_rule_file_builds_on_a_builtin_set(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text("base: bn-cnn\nrename:\n  - ['^backbone\\.', '']\nallow: ['head.*']\n")
    rules = load_rules(str(path))
    assert rules.target_name("backbone.bn.running_mean") == "bn._mean" and rules.allow == ["head.*"]



@pytest.fixture(scope="session")
def cnn_inputs(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "x.npz"
    np.savez(path, np.random.RandomState(0).randn(2, 3, 6, 6).astype("float32"))
    return path


_TRACES = """
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
import models
from tipcgen.repro import convert, trace
x = [np.load(sys.argv[1])["arr_0"]]
out = {"ok": trace.compare(models.paddle_cnn_converted(), models.torch_cnn(), x, "bn-cnn"),
       "nan": trace.compare(models.paddle_cnn_nan(), models.torch_cnn(), x, "bn-cnn"),
       "nan_alone": trace.scan(models.paddle_cnn_nan(), x)}
torch_bert, paddle_bert = models.torch_bert(), models.paddle_bert()
paddle_bert.set_state_dict(convert.convert_state({k: v.numpy() for k, v in torch_bert.state_dict().items()},
                                                 convert.load_rules("bert")).state)
ids = {"input_ids": np.random.RandomState(0).randint(1, 100, size=(2, 16)).astype("int64")}
out["bert"] = trace.compare(paddle_bert, torch_bert, ids, "bert")
print(json.dumps({k: v.to_dict() for k, v in out.items()}))
"""


@pytest.fixture(scope="session")
def traces(cnn_inputs) -> dict:
    """The Python API: the BN CNN converted right, with an injected NaN (both modes), and the sample's BERT
    against its PyTorch reference; one process (~12 s)."""
    import json

    for module in ("torch", "transformers", "paddle"):
        pytest.importorskip(module)

    proc = subprocess.run([sys.executable, "-c", _TRACES, str(cnn_inputs)], cwd=MODELS.parent, env=chain_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.paddle
def test_trace_of_a_correct_conversion_passes_every_layer(traces):
    report = traces["ok"]
    assert report["passed"] and report["first_bad"] is None
    names = [row["name"] for row in report["rows"]]
    assert names[:3] == ["conv", "bn", "relu"] and names[-1] == "(model)"
    assert all(row["max_abs"] < 1e-5 for row in report["rows"])


@pytest.mark.paddle
def test_trace_matches_the_sample_bert_layer_by_layer_through_the_bert_rules(traces):
    report = traces["bert"]
    assert report["passed"], [r for r in report["rows"] if r["status"] != "ok"]
    rows = {row["name"]: row for row in report["rows"]}
    assert rows["bert.encoder.layers.1.self_attn.q_proj"]["reference"] == "bert.encoder.layer.1.attention.self.query"
    assert rows["bert.encoder.layers.0"]["reference"] == "bert.encoder.layer.0" and len(rows) > 30


@pytest.mark.paddle
def test_trace_cli_names_a_wrongly_transposed_layer_first(cnn_inputs):
    import json

    pytest.importorskip("torch")
    pytest.importorskip("paddle")

    proc = tipcgen("align", "trace", "--paddle", "models:paddle_cnn_wrong_transpose", "--torch", "models:torch_cnn",
                   "--inputs", str(cnn_inputs), "--rules", "bn-cnn", "--format", "json", cwd=MODELS.parent)
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["first_bad"] == "fc2"
    rows = {row["name"]: row for row in report["rows"]}
    assert rows["fc1"]["status"] == "ok" and rows["fc2"]["status"] == "diverged" and rows["fc2"]["max_abs"] > 1e-3


@pytest.mark.paddle
def test_trace_names_the_layer_that_injects_a_nan_first_in_both_modes(traces):
    assert traces["nan"]["first_bad"] == "fc1"
    alone = traces["nan_alone"]
    assert not alone["passed"] and alone["first_bad"] == "fc1" and alone["rows"][0]["name"] == "conv"
    assert next(r for r in alone["rows"] if r["name"] == "fc1")["nan"] == 2  # one feature, both rows of the batch


@pytest.mark.paddle
def test_trace_inputs_must_be_a_pickle_free_npz_that_fits_the_model(tmp_path):
    pytest.importorskip("paddle")
    bad = tmp_path / "x.npy"
    bad.write_bytes(b"")
    proc = tipcgen("align", "trace", "--paddle", "models:paddle_cnn", "--inputs", str(bad), cwd=MODELS.parent)
    assert proc.returncode == 2 and "not a .npz file" in proc.stderr and "Traceback" not in proc.stderr
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, np.zeros((2, 5), "float32"))  # a CNN wants (N, 3, H, W)
    proc = tipcgen("align", "trace", "--paddle", "models:paddle_cnn", "--inputs", str(wrong), cwd=MODELS.parent)
    assert proc.returncode == 2 and "raised" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_safetensors_are_read_without_any_library(tmp_path):
    import json
    import struct

    weight = np.arange(6, dtype="<f4").reshape(2, 3)
    bf16 = (np.array([1.5, -2.0], dtype="<f4").view("<u4") >> 16).astype("<u2")  # bfloat16: a float32's upper half
    header = {"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
              "h": {"dtype": "BF16", "shape": [2], "data_offsets": [24, 28]}, "__metadata__": {"format": "pt"}}
    raw = json.dumps(header).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + weight.tobytes() + bf16.tobytes())
    state = read_torch_state(path)
    np.testing.assert_array_equal(state["w"], weight)
    np.testing.assert_array_equal(state["h"], np.array([1.5, -2.0], dtype="float32"))
