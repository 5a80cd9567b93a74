"""`tipcgen new`: probe scripts' --help, map their flags to TIPC slots, write a descriptor that renders.

Unit tests use small argparse scripts written here (real subprocesses, no paddle); the chain test runs
`tipcgen new` on the bert-sst2 scripts and then the chain its descriptor renders.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from tipcgen import descriptor
from tipcgen.new import new
from tipcgen.render import repository
from tipcgen.descriptor import schema
from tipcgen.configs import script_help
from tipcgen.core.errors import TipcgenError

from conftest import read_records, tipcgen

OCR_LIKE = {
    "tools/train.py": """
        p.add_argument("-c", "--config", required=True, help="config file")
        p.add_argument("--use_gpu", type=str, default="True", help="run on a GPU")
        p.add_argument("--epoch_num", type=int, default=500)
        p.add_argument("--save_dir", default="./output")
        p.add_argument("--batch_size", type=int, default=16)
        p.add_argument("--pretrained", default=None,
                       help="a very long help text that argparse wraps onto a second line because it goes on and on")
        p.add_argument("--image_dir", default="./data")
        p.add_argument("--use_amp", action="store_true", help="a switch: TIPC cannot pass it")
    """,
    "tools/eval.py": """
        p.add_argument("-c", "--config", required=True)
        p.add_argument("--use_gpu", default="True")
        p.add_argument("--pretrained", required=True)
    """,
    "tools/export_model.py": """
        p.add_argument("-c", "--config", required=True)
        p.add_argument("--pretrained", required=True)
        p.add_argument("--save_inference_dir", required=True)
    """,
    "tools/infer/predict.py": """
        p.add_argument("--use_gpu", default="True")
        p.add_argument("--enable_mkldnn", default="False")
        p.add_argument("--cpu_threads", type=int, default=10)
        p.add_argument("--rec_batch_num", type=int, default=6)
        p.add_argument("--use_tensorrt", default="False")
        p.add_argument("--precision", choices=["fp32", "fp16", "int8"], default="fp32")
        p.add_argument("--model_dir", required=True)
        p.add_argument("--image_dir", default="./doc/imgs")
        p.add_argument("--benchmark", default="False")
    """,
}


def write_scripts(root: Path, scripts: dict[str, str]) -> Path:
    for rel, body in scripts.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("import argparse\np = argparse.ArgumentParser()\n" + textwrap.dedent(body)
                        + "p.parse_args()\n")
    return root


def ocr_options(**extra) -> new.Options:
    scripts = {"train": "tools/train.py -c configs/rec.yml", "eval": "tools/eval.py -c configs/rec.yml",
               "export": "tools/export_model.py -c configs/rec.yml", "infer": "tools/infer/predict.py"}
    return new.Options(model_name="ocr_rec", scripts=scripts, checkpoint="latest", **extra)


def slot_lines(text: str) -> dict[str, str]:
    desc = descriptor.load_text(text)
    return {name: slot.line for name, slot in desc.slots.items()}


# ---------------------------------------------------------------- probing

def test_parse_help_of_a_real_argparse_script(tmp_path: Path):
    write_scripts(tmp_path, {"t.py": """
        p.add_argument("-c", "--config", required=True, help="config file")
        p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
        p.add_argument("--ids", nargs="+", type=int)
        p.add_argument("--verbose", action="store_true")
        p.add_argument("--out-dir", dest="out_dir", required=True,
                       help="a long help that wraps: " + "words " * 20)
    """})
    flags = script_help.probe(script_help.Script("train", "t.py"), tmp_path, "python")
    by_name = {f.name: f for f in flags}
    assert sorted(by_name) == ["--config", "--device", "--ids", "--out-dir", "--verbose"]
    assert by_name["--config"].names == ("-c", "--config") and by_name["--config"].required
    assert by_name["--device"].choices == ("cpu", "gpu") and not by_name["--device"].required
    assert not by_name["--verbose"].takes_value and by_name["--ids"].takes_value
    assert by_name["--out-dir"].required and by_name["--out-dir"].help.endswith("words")


@pytest.mark.waits
def test_a_script_whose_help_fails_or_hangs_is_an_error(tmp_path: Path):
    (tmp_path / "broken.py").write_text("import no_such_module_here\n")
    (tmp_path / "slow.py").write_text("import time\ntime.sleep(30)\n")
    with pytest.raises(TipcgenError, match="exited 1: .*no_such_module_here"):
        script_help.probe(script_help.Script("train", "broken.py"), tmp_path, "python")
    with pytest.raises(TipcgenError, match="did not finish in 1 s"):
        script_help.probe(script_help.Script("train", "slow.py"), tmp_path, "python", timeout=1)


def test_new_probes_through_the_flag_cache_and_the_run_after_it_probes_nothing(tmp_path: Path, monkeypatch):
    """new's --help probes are written to the flag cache with every field new reads (a required flag, choices,
    help), read back the same by a second new, and the flag check of the rendered config (what `tipcgen run`
    and `lint --root` do before the chain) finds every script there: no --help runs twice."""
    from tipcgen.configs import flag_check

    monkeypatch.setenv("TIPCGEN_CACHE_DIR", str(tmp_path / "cache"))
    repo = tmp_path / "repo"
    write_scripts(repo, OCR_LIKE)
    probed = []
    real = flag_check.probe
    monkeypatch.setattr(flag_check, "probe", lambda script, *a, **k: probed.append(script.path) or real(script, *a, **k))
    options = ocr_options()
    first = new.propose(options, repo)
    assert sorted(probed) == sorted({"tools/train.py", "tools/eval.py", "tools/export_model.py", "tools/infer/predict.py"})
    probed.clear()
    assert new.propose(options, repo).text == first.text and probed == []  # the same flags, from the cache
    options.scripts["train"] = "tools/train.py"  # without -c: its required --config comes back from the cache too
    with pytest.raises(TipcgenError, match=r"the required flag --config fills no TIPC slot"):
        new.propose(options, repo)
    files = repository.render_files(descriptor.load_text(first.text, base_dir=repo))
    [config] = [text for path, text in files.items() if path.endswith("train_infer_python.txt")]
    python = flag_check.probe_interpreter(config, dict(os.environ))[1]
    found = flag_check.survey(repo, config, python, unsandboxed=True)
    assert probed == [] and found.scripts == found.cached == 4 and found.keys > 0, found
    assert not [p for p in found.problems if p.severity == "error"], found.problems


# ---------------------------------------------------------------- mapping

def test_ocr_style_scripts_map_to_the_tipc_slots(tmp_path: Path):
    write_scripts(tmp_path, OCR_LIKE)
    proposal = new.propose(ocr_options(), tmp_path)
    lines = slot_lines(proposal.text)
    assert lines["train_use_gpu"] == "--use_gpu:True|False"
    assert lines["epoch"] == "--epoch_num:lite_train_lite_infer=1|lite_train_whole_infer=1"
    assert lines["save_model"] == "--save_dir:./output/"
    assert lines["pretrain"] == "--pretrained:null" and lines["train_model_name"] == "train_model_name:latest"
    assert lines["autocast"] == "null:null"  # --use_amp is a switch
    assert lines["norm_train"] == "norm_train:tools/train.py -c configs/rec.yml"
    assert lines["eval"] == "eval:tools/eval.py -c configs/rec.yml"
    assert lines["save_infer"] == "--save_inference_dir:./output/" and lines["export_weight"] == "--pretrained:null"
    assert lines["infer_use_gpu"] == "--use_gpu:True|False" and lines["enable_mkldnn"] == "--enable_mkldnn:False|True"
    assert lines["precision"] == "--precision:fp32" and lines["infer_model_dir"] == "--model_dir:null"
    assert lines["infer_batch_size"] == "null:null"  # --rec_batch_num is not a batch-size name tipcgen knows
    assert any("--use_amp is a switch" in note for note in proposal.notes)
    assert ("train.epochs", "--epoch_num (tools/train.py)", "probed") in proposal.mapping
    repository.render_files(descriptor.load_text(proposal.text))


def test_options_override_probing(tmp_path: Path):
    write_scripts(tmp_path, OCR_LIKE)
    options = ocr_options(flags={"inference.batch_size": "--rec_batch_num", "inference.benchmark": "null"},
                          values={"inference.cpu_threads": "[1, 6]", "train.epochs": "{lite_train_lite_infer: 2}"})
    proposal = new.propose(options, tmp_path)
    lines = slot_lines(proposal.text)
    assert lines["infer_batch_size"] == "--rec_batch_num:1" and lines["benchmark"] == "null:null"
    assert lines["cpu_threads"] == "--cpu_threads:1|6" and lines["epoch"] == "--epoch_num:lite_train_lite_infer=2"
    assert ("inference.batch_size", "--rec_batch_num (tools/infer/predict.py)", "option") in proposal.mapping


def test_lite_data_and_setup_become_the_data_section(tmp_path: Path):
    write_scripts(tmp_path, OCR_LIKE)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "lite.txt").write_text("x\n")
    options = ocr_options(data={"train": "data/lite.txt", "infer": "data/lite.txt"},
                          setup=["tools/make_dict.py --out {data_dir}/dict.txt"])
    desc = descriptor.load_text(new.propose(options, tmp_path).text)
    assert desc.slots["train_param"].line == "--image_dir:./train_data/ocr_rec/train.txt"
    assert desc.slots["infer_data"].line == "--image_dir:./train_data/ocr_rec/infer.txt"
    assert desc.slots["train_infer_data"].value == "./train_data/ocr_rec/infer.txt"
    assert [(f.name, f.role, f.lite) for f in desc.data.files] == [("train.txt", "train", "data/lite.txt"),
                                                                   ("infer.txt", "infer", "data/lite.txt")]
    assert desc.data.setup == (("tools/make_dict.py", "--out", "./train_data/ocr_rec/dict.txt"),)


def test_a_required_flag_no_slot_fills_is_an_error_unless_given(tmp_path: Path):
    write_scripts(tmp_path, OCR_LIKE)
    options = ocr_options()
    options.scripts["train"] = "tools/train.py"  # without -c configs/rec.yml
    with pytest.raises(TipcgenError, match=r"tools/train.py: the required flag --config fills no TIPC slot") as info:
        new.propose(options, tmp_path)
    assert '--train "tools/train.py --config VALUE"' in str(info.value)


def test_a_required_data_flag_needs_data(tmp_path: Path):
    scripts = dict(OCR_LIKE)
    scripts["tools/infer/predict.py"] = OCR_LIKE["tools/infer/predict.py"].replace(
        'p.add_argument("--image_dir", default="./doc/imgs")', 'p.add_argument("--image_dir", required=True)')
    write_scripts(tmp_path, scripts)
    with pytest.raises(TipcgenError, match=r"required flag --image_dir \(inference.data\) gets no value; ship lite "
                                           r"data with --infer-data FILE"):
        new.propose(ocr_options(), tmp_path)
    lines = slot_lines(new.propose(ocr_options(values={"inference.data": "./doc/imgs/1.jpg"}), tmp_path).text)
    assert lines["infer_data"] == "--image_dir:./doc/imgs/1.jpg"
    assert lines["train_infer_data"] == "train_infer_img_dir:./doc/imgs/1.jpg"  # what inference reads after training


def test_eval_must_accept_what_the_runner_passes_it(tmp_path: Path):
    scripts = dict(OCR_LIKE)
    scripts["tools/eval.py"] = """
        p.add_argument("-c", "--config", required=True)
        p.add_argument("--checkpoints", required=True)
    """
    write_scripts(tmp_path, scripts)
    with pytest.raises(TipcgenError) as info:
        new.propose(ocr_options(), tmp_path)
    message = str(info.value)
    assert "tools/eval.py has no --pretrained" in message
    # the device flag eval lacks is left out of tipc.yaml with a note, never a refusal (tests/test_new_repos.py)
    assert "has no --use_gpu" not in message
    assert "the required flag --checkpoints fills no TIPC slot" in message


def test_missing_values_are_asked_for_on_a_terminal(tmp_path: Path):
    write_scripts(tmp_path, OCR_LIKE)
    asked = []

    def ask(option: str, question: str, default: str) -> str:
        asked.append((option, default))
        return {"--export": "tools/export_model.py -c configs/rec.yml", "--model-name": default,
                "--checkpoint": "."}[option]

    options = new.Options(scripts={"train": "tools/train.py -c configs/rec.yml", "infer": "tools/infer/predict.py"})
    proposal = new.propose(options, tmp_path, ask)
    assert asked == [("--export", ""), ("--model-name", "tools"), ("--checkpoint", "")]
    assert slot_lines(proposal.text)["train_model_name"] == "train_model_name:"


def test_cli_without_a_terminal_names_every_missing_option(tmp_path: Path):
    write_scripts(tmp_path, OCR_LIKE)
    proc = subprocess.run([sys.executable, "-m", "tipcgen", "new", "--train", "tools/train.py", "--root", str(tmp_path)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    for option in ("--export", "--infer", "--model-name", "--checkpoint"):
        assert f"  {option}: " in proc.stderr
    assert not (tmp_path / "tipc.yaml").exists()


def test_cli_writes_a_descriptor_that_init_renders(tmp_path: Path):
    write_scripts(tmp_path, OCR_LIKE)
    args = ["new", "--root", str(tmp_path), "--model-name", "ocr_rec", "--checkpoint", "latest",
            "--train", "tools/train.py -c configs/rec.yml", "--eval", "tools/eval.py -c configs/rec.yml",
            "--export", "tools/export_model.py -c configs/rec.yml", "--infer", "tools/infer/predict.py",
            "--flag", "trian.epochs=--epochs"]
    proc = tipcgen(*args)
    assert proc.returncode == 2 and "did you mean train.epochs?" in proc.stderr
    proc = tipcgen(*args[:-2], check=True)
    assert "probed  train.epochs" in proc.stdout and f"tipcgen init {tmp_path / 'tipc.yaml'} --root {tmp_path}" in proc.stdout
    jsonschema = pytest.importorskip("jsonschema")  # the editor's view of it: the shipped JSON Schema accepts it
    shipped = jsonschema.Draft7Validator(json.loads(schema.SCHEMA_FILE.read_text()))
    assert [e.message for e in shipped.iter_errors(yaml.safe_load((tmp_path / "tipc.yaml").read_text()))] == []
    again = [a if a != "ocr_rec" else "ocr_rec2" for a in args[:-2]]
    assert tipcgen(*again).returncode == 2  # a different descriptor is only written over with --force
    tipcgen("init", "tipc.yaml", cwd=tmp_path, check=True)
    lint = tipcgen("lint", "test_tipc/configs", "--repo-root", ".", cwd=tmp_path)
    assert lint.returncode == 0, lint.stdout + lint.stderr


# ---------------------------------------------------------------- the bert-sst2 scripts, for real

@pytest.mark.paddle
@pytest.mark.chain
@pytest.mark.full  # new -> a passing chain on real Paddle: two_io's grid and the zoo's new'd models in every run
def test_new_on_the_bert_sst2_scripts_yields_a_passing_chain(tmp_path: Path):
    pytest.importorskip("paddle")
    # An existing repository: the sample's scripts and lite data, no test_tipc/ yet.
    repository.write_tree(repository.sample_files(descriptor.load("bert-sst2")), tmp_path)
    assert not (tmp_path / "test_tipc").exists()
    s = "sample_models/bert-sst2"
    proc = tipcgen("new", "--model-name", "bert_new", "--checkpoint", "checkpoint",
                   "--train", f"{s}/train.py", "--eval", f"{s}/eval.py", "--export", f"{s}/export_model.py",
                   "--infer", f"{s}/infer.py", "--train-data", f"{s}/data/lite_train.tsv",
                   "--eval-data", f"{s}/data/lite_dev.tsv", "--infer-data", f"{s}/data/lite_dev.tsv",
                   "--setup", f"{s}/build_vocab.py --input {{data_dir}}/train.tsv --output {{data_dir}}/vocab.txt",
                   # the smallest matrix: one CPU entry, one inference configuration
                   "--devices", "cpu", "--value", "inference.enable_mkldnn=true", "--value", "inference.cpu_threads=1",
                   "-o", "bert_new.yaml", cwd=tmp_path, check=True)
    assert "note" not in proc.stdout  # every flag found a slot
    lines = slot_lines((tmp_path / "bert_new.yaml").read_text())
    assert lines["pretrain"] == "--init_from_ckpt:null" and lines["export_weight"] == "--params_path:null"
    tipcgen("init", "bert_new.yaml", cwd=tmp_path, check=True)
    run = tipcgen("run", "--mode", "lite_train_lite_infer", "--quiet", cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr
    records = read_records(tmp_path, "bert_new", "lite_train_lite_infer")
    passed = {r["kind"] for r in records if r["status"] == "passed"}
    assert {"train", "eval", "export", "infer"} <= passed
    assert [r["status"] for r in records if r["kind"] == "infer"] == ["passed"]  # the one configuration asked for


def test_real_repository_shapes_folder_data_spellings_and_setup_without_data(tmp_path: Path):
    scripts = dict(OCR_LIKE)
    scripts["tools/train.py"] = scripts["tools/train.py"].replace(
        'p.add_argument("--image_dir", default="./data")',
        'p.add_argument("--data-root", default="./data")\n'
        '        p.add_argument("--amp_level", default="O1", help="O1 or O2")')
    write_scripts(tmp_path, scripts)
    (tmp_path / "data" / "lite").mkdir(parents=True)
    (tmp_path / "data" / "lite.txt").write_text("x\n")
    # a file shipped for a folder flag: the flag gets the data folder; a folder stays a folder
    text = new.propose(ocr_options(data={"train": "data/lite.txt", "infer": "data/lite"}), tmp_path).text
    lines = slot_lines(text)
    assert lines["train_param"] == "--data-root:./train_data/ocr_rec" and lines["autocast"] == "--amp_level:O1"
    assert lines["infer_data"] == "--image_dir:./train_data/ocr_rec/infer"
    assert lines["infer_model"] == "infer_model:./train_data/ocr_rec/trained/latest"
    desc = descriptor.load_text(text)
    assert [(f.name, f.lite, f.whole) for f in desc.data.files] == [("train.txt", "data/lite.txt", "train.txt"),
                                                                    ("infer", "data/lite", "infer")]
    # --setup alone (no data named) is kept
    setup_only = descriptor.load_text(new.propose(ocr_options(setup=["tools/train.py --x {data_dir}"]), tmp_path).text)
    assert setup_only.data.setup == (("tools/train.py", "--x", "./train_data/ocr_rec"),)


def test_a_data_flag_whose_help_disagrees_with_its_value_is_noted(tmp_path: Path):
    """A flag whose help says folder mapped to a file (--value), or says file mapped to a folder: a note."""
    scripts = dict(OCR_LIKE)
    scripts["tools/infer/predict.py"] = scripts["tools/infer/predict.py"].replace(
        'p.add_argument("--image_dir", default="./doc/imgs")', 'p.add_argument("--image_dir", help="a list file of images")')
    write_scripts(tmp_path, scripts)
    (tmp_path / "data" / "lite").mkdir(parents=True)
    (tmp_path / "data" / "lite.txt").write_text("x\n")
    notes = new.propose(ocr_options(data={"train": "data/lite", "infer": "data/lite"}), tmp_path).notes
    assert ("tools/infer/predict.py: --image_dir takes a file (its help says file), but gets the folder "
            "./train_data/ocr_rec/infer; check inference.data (--value inference.data=PATH) or the flag "
            "(--flag inference.data=FLAG)") in notes
    assert not any("tools/train.py" in note and "takes a" in note for note in notes)  # --image_dir: no help
    given = new.propose(ocr_options(data={"train": "data/lite.txt"}, values={"train.extra": "./x/train.txt"},
                                    flags={"train.extra": "--save_dir"}), tmp_path)
    assert any("tools/train.py: --save_dir takes a folder (by its name), but gets the file ./x/train.txt" in n
               for n in given.notes), given.notes


def test_new_writes_the_paddle2onnx_chain_with_onnx_flag_only_where_needed(tmp_path: Path):
    write_scripts(tmp_path, OCR_LIKE)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "lite.txt").write_text("x\n")
    text = new.propose(ocr_options(data={"train": "data/lite.txt"}), tmp_path).text
    assert "\npaddle2onnx:" in text and "  inference: tools/infer/predict.py\n" in text
    assert "  onnx_flag: null" in text  # predict.py has no --use_onnx
    desc = descriptor.load_text(text)
    assert desc.paddle2onnx.onnx_flag == "null" and desc.paddle2onnx.model_dir == "./train_data/ocr_rec/trained"
    scripts = dict(OCR_LIKE)
    scripts["tools/infer/predict.py"] = scripts["tools/infer/predict.py"].replace(
        'p.add_argument("--benchmark", default="False")', 'p.add_argument("--benchmark", default="False")\n'
        '        p.add_argument("--use_onnx", default="False")')
    write_scripts(tmp_path, scripts)
    text = new.propose(ocr_options(data={"train": "data/lite.txt"}), tmp_path).text
    assert "onnx_flag" not in text  # the default, --use_onnx: nothing written
    assert descriptor.load_text(text).paddle2onnx.onnx_flag == "--use_onnx"


# ---------------------------------------------------------------- spellings, the output folder, values (issue 28)

def test_camel_case_dashes_and_log_dir_spellings_map(tmp_path: Path):
    scripts = dict(OCR_LIKE)
    scripts["tools/train.py"] = """
        p.add_argument("-c", "--config", required=True)
        p.add_argument("--numEpochs", type=int, default=500)
        p.add_argument("--batchSize", type=int, default=16)
        p.add_argument("--log_dir", default="logs", help="where the checkpoints go")
        p.add_argument("--pretrained", default=None)
        p.add_argument("--amp", default="none", help="AMP level: O1 or none (default: O1)")
    """
    write_scripts(tmp_path, scripts)
    lines = slot_lines(new.propose(ocr_options(), tmp_path).text)
    assert lines["epoch"] == "--numEpochs:lite_train_lite_infer=1|lite_train_whole_infer=1"
    assert lines["train_batch_size"] == "--batchSize:lite_train_lite_infer=4|lite_train_whole_infer=4"
    assert lines["save_model"] == "--log_dir:./output/"
    assert lines["autocast"] == "--amp:none"  # what its help offers, not False
    for spelling in ("--logdir", "--output", "--save-path", "--outDir"):
        write_scripts(tmp_path, {**scripts, "tools/train.py": scripts["tools/train.py"].replace("--log_dir", spelling)})
        assert slot_lines(new.propose(ocr_options(), tmp_path).text)["save_model"] == f"{spelling}:./output/"


@pytest.mark.parametrize(("help_text", "choices", "expected"), [
    ("O1 or none", "", "none"), ("O1 or O2", "", "O1"), ("fp32 or fp16", "", "fp32"), ("", "", False),
    ("", "['O1', 'O2']", "O1"), ("", "['none', 'O1']", "none"), ("use AMP (default: None)", "", False)])
def test_the_amp_value_fits_the_flag(tmp_path: Path, help_text: str, choices: str, expected):
    scripts = dict(OCR_LIKE)
    scripts["tools/train.py"] = OCR_LIKE["tools/train.py"].replace(
        'p.add_argument("--use_amp", action="store_true", help="a switch: TIPC cannot pass it")',
        f'p.add_argument("--amp", help={help_text!r}' + (f", choices={choices}" if choices else "") + ")")
    write_scripts(tmp_path, scripts)
    desc = descriptor.load_text(new.propose(ocr_options(), tmp_path).text)
    assert desc.slots["autocast"].line == f"--amp:{expected}"


def test_a_train_script_without_an_output_folder_flag_is_an_error(tmp_path: Path):
    scripts = dict(OCR_LIKE)
    scripts["tools/train.py"] = OCR_LIKE["tools/train.py"].replace('p.add_argument("--save_dir", default="./output")', "")
    write_scripts(tmp_path, scripts)
    with pytest.raises(TipcgenError, match=r"tools/train.py: no flag for the train output folder \(train.output_dir\) was "
                                           r"found \(tried --output_dir, --save_dir, .*pass --flag train.output_dir=FLAG"):
        new.propose(ocr_options(), tmp_path)
    with pytest.raises(TipcgenError, match=r"--save_dir \(train.output_dir\) gets no folder"):
        write_scripts(tmp_path, OCR_LIKE)
        new.propose(ocr_options(values={"train.output_dir": "null"}), tmp_path)


# A paper-reproduction repository in the shape of issue 28: flags that differ from TIPC's keys (--logdir,
# --batchSize, --numEpochs, eval's --weights), and eval/export that load a committed checkpoint by default.
DENOISE = {
    "train.py": '''
        import argparse, os
        p = argparse.ArgumentParser()
        p.add_argument("--logdir", default="logs", help="folder of the checkpoints")
        p.add_argument("--batchSize", type=int, default=128)
        p.add_argument("--numEpochs", type=int, default=50)
        p.add_argument("--pretrained", default=None)
        args = p.parse_args()
        os.makedirs(args.logdir, exist_ok=True)
        with open(os.path.join(args.logdir, "net.pdparams"), "w") as f:
            f.write(f"trained {args.numEpochs} epoch(s)\\n")
        print("epoch: 1, loss: 0.5")
    ''',
    "eval.py": '''
        import argparse
        p = argparse.ArgumentParser()
        p.add_argument("--weights", default="logs/net.pdparams")
        args = p.parse_args()
        print(open(args.weights).read().strip(), "psnr: 23.4")
    ''',
    "export_model.py": '''
        import argparse, os
        p = argparse.ArgumentParser()
        p.add_argument("--weights", default="logs/net.pdparams")
        p.add_argument("--save-dir", default="deploy")
        args = p.parse_args()
        os.makedirs(args.save_dir, exist_ok=True)
        with open(args.weights) as src, open(os.path.join(args.save_dir, "inference.json"), "w") as dst:
            dst.write("{}")
    ''',
    "infer.py": '''
        import argparse, os
        p = argparse.ArgumentParser()
        p.add_argument("--model-dir", required=True)
        p.add_argument("--use_gpu", default="False")
        p.add_argument("--batch_size", type=int, default=1)
        args = p.parse_args()
        assert os.path.exists(os.path.join(args.model_dir, "inference.json")), "no exported model"
        print("image_0\\t{\\"psnr\\": 23.4}")
    ''',
}


def test_new_on_a_repository_with_its_own_spellings_writes_an_output_folder_and_a_run_keeps_tracked_files(tmp_path: Path):
    for rel, body in DENOISE.items():
        (tmp_path / rel).write_text(textwrap.dedent(body))
    (tmp_path / "logs").mkdir()
    committed = "the paper's weights\n"
    (tmp_path / "logs" / "net.pdparams").write_text(committed)
    tipcgen("new", "--model-name", "denoise", "--checkpoint", "net.pdparams", "--train", "train.py", "--eval", "eval.py",
            "--export", "export_model.py", "--infer", "infer.py", "--devices", "cpu", "--value", "inference.enable_mkldnn=false",
            "--value", "inference.cpu_threads=1", cwd=tmp_path, check=True)
    lines = slot_lines((tmp_path / "tipc.yaml").read_text())
    assert lines["save_model"] == "--logdir:./output/" and lines["save_infer"] == "--save-dir:./output/"
    assert lines["train_batch_size"].startswith("--batchSize:") and lines["epoch"].startswith("--numEpochs:")
    assert lines["pretrain"] == "--weights:null" and lines["export_weight"] == "--weights:null"
    tipcgen("init", "tipc.yaml", cwd=tmp_path, check=True)
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "repository"], cwd=tmp_path, check=True)
    run = tipcgen("run", "--mode", "lite_train_lite_infer", "-q", cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=tmp_path,
                            capture_output=True, text=True, check=True).stdout
    assert status == "" and (tmp_path / "logs" / "net.pdparams").read_text() == committed
    records = read_records(tmp_path, "denoise", "lite_train_lite_infer")
    evals = [r for r in records if r["kind"] == "eval"]
    assert evals and "--weights=./test_tipc/output/denoise/" in evals[0]["command"]  # the trained checkpoint
