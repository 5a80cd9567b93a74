"""`tipcgen new` from zero on repositories shaped like the paper reproductions of issue #56 (item 2):
`new` → `init` → `run --mode lite_train_lite_infer` with no hand edit.

The fixtures (tests/fixtures/new_*/README.md say what each holds): a restoration repo with `--iter`, a
patch `--stride`, a `--save_interval` and no device flag; a text-detection repo driven by `-o key=value`
over a YAML config; an anomaly-detection repo with a `--type all` class filter, a `--cuda` switch and
`--checkpoint` folders; an NLP repo whose `--pretrained` is a download switch and whose `--data` is a
data-set name; a PaddleGAN-shaped super-resolution repo (one script trains and evaluates, every setting a
config key, weights in a timestamped folder per run); a PaddleClas-shaped classification repo (`-o` append,
a deploy config for inference). Each test checks the descriptor `new` writes and that its notes name every
edit; the chains then run on real Paddle (tiny models, seconds each).
The unit tests below them read sources written here (no process), for the rules' edges: where each must
NOT fire as well as where it must.
"""
from __future__ import annotations

import shutil
import tempfile
import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, fuzz_examples, read_records, tipcgen
from tipcgen.configs.script_help import Flag, Script
from tipcgen.configs.script_reading import read_source
from tipcgen.new import lite, overrides
from tipcgen.new.reading import dataset_name

FIXTURES = ROOT / "tests" / "fixtures"
SCRIPTS = {"train": "train.py", "eval": "eval.py", "export": "export_model.py", "infer": "infer.py"}
SMALL = ("--devices", "cpu", "--value", "inference.enable_mkldnn=false", "--value", "inference.cpu_threads=1")


def copy(name: str, tmp_path: Path) -> Path:
    repo = tmp_path / name
    shutil.copytree(FIXTURES / name, repo)
    return repo


def run_new(repo: Path, model: str, *args: str) -> tuple[dict, str, str]:
    """`tipcgen new` as a user runs it: the descriptor, its text and what it printed."""
    proc = tipcgen("new", "--model-name", model, *args, cwd=repo, check=True)
    text = (repo / "tipc.yaml").read_text()
    return yaml.safe_load(text), text, proc.stdout


def lite_run(repo: Path, model: str) -> list[dict]:
    pytest.importorskip("paddle")
    tipcgen("init", "tipc.yaml", cwd=repo, check=True)
    run = tipcgen("run", "--mode", "lite_train_lite_infer", "-q", cwd=repo)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr
    return read_records(repo, model, "lite_train_lite_infer")


def summary(repo: Path, model: str) -> dict:
    import json

    return json.loads((repo / "test_tipc" / "output" / model / "lite_train_lite_infer" / "summary.json").read_text())


def assert_every_proof_passed(repo: Path, model: str) -> dict:
    """PASSED with every step and proof run and passed: train, eval, export, infer, the trained parameters found
    in the export, the fixed inputs compared; nothing skipped or failed, no note of
    something the verdict did not check."""
    done = summary(repo, model)
    assert done["ok"] and done["failed"] == 0 and done["skipped"] == 0 and not done["notes"], done["notes"]
    steps = done["steps"]
    assert all(s["status"] == "passed" for s in steps), [(s["name"], s["status"]) for s in steps]
    assert {"train", "eval", "export", "infer"} <= {s["kind"] for s in steps}
    assert {"export_params", "fixed_inputs"} <= {s["name"].split("_gpus")[0] for s in steps if s["kind"] == "check"}
    return done


# ---------------------------------------------------------------- the repositories

def restore_args() -> tuple[str, ...]:
    return ("--train", "train.py", "--eval", "eval.py", "--export", "export_model.py", "--infer", "infer.py",
            "--train-data", "lite_data", "--eval-data", "lite_data", "--infer-data", "lite_data", *SMALL)


@pytest.mark.paddle
@pytest.mark.chain
def test_a_restoration_repository_with_iterations_a_stride_and_no_device_flag(tmp_path: Path):
    repo = copy("new_restore", tmp_path)
    doc, text, out = run_new(repo, "dncnn", *restore_args())
    train = doc["train"]
    assert train["device"] is None  # no device flag: no stop, and no key
    assert train["epochs"] == {"key": "--iter", "value": {"lite_train_lite_infer": 10, "lite_train_whole_infer": 10}}
    assert train["checkpoint"] == "" and doc["train"]["pretrained"]["key"] == "--checkpoint"  # a folder: '.'
    assert train["norm"] == "train.py --save_interval 1 --stride 8"
    for said in ("train.checkpoint is '.' (the output folder): train.py saves model_latest.pth",
                 "train.py has no device flag: tipc.yaml has no train.device key",
                 "--save_interval defaults to 5000, above the lite run's 10 iterations: set to 1 so the training saves",
                 "--stride defaults to 1 with --patch_size 8: overlapping patches, about 64 times as many"):
        assert said in out and said in " ".join(text.split()), said  # printed, and a comment in tipc.yaml
    records = lite_run(repo, "dncnn")
    assert {"train", "eval", "export", "infer"} <= {r["kind"] for r in records if r["status"] == "passed"}
    assert_every_proof_passed(repo, "dncnn")
    # the large checkpoint dict ({'iter', 'state_dict', 'optimizer', 'scheduler'} in model_latest.pth) is read
    proof = next(s for s in summary(repo, "dncnn")["steps"] if s["name"].startswith("export_params"))
    assert "(the state dict under 'state_dict')" in proof["note"] and "model_latest.pth" in proof["note"]
    log = next(r for r in records if r["kind"] == "train")
    assert "--stride 8" in log["command"] and "--iter=10" in log["command"]


@pytest.mark.paddle
@pytest.mark.chain
def test_a_segmentation_repository_with_opts_iters_and_iter_folders(tmp_path: Path):
    repo = copy("new_seg", tmp_path)
    config = "--config configs/tiny_seg.yml"
    doc, text, out = run_new(repo, "tiny_seg", *seg_args(config))
    assert doc["train"]["epochs"]["key"] == "--iters" and doc["train"]["batch_size"]["key"] == "--batch_size"
    # no flag for it: its --opts key, carrying the data the training validates on (the lite eval data)
    assert doc["train"]["extra"]["key"] == "--opts val_dataset.dataset_root=./train_data/tiny_seg/eval train_dataset.dataset_root"
    assert doc["eval"]["extra"]["key"] == "--opts val_dataset.dataset_root"
    assert doc["train"]["pretrained"]["key"] == "--model_path" and doc["export"]["weights"]["key"] == "--model_path"
    assert doc["train"]["checkpoint"] == "best_model/model.pdparams"
    assert doc["train"]["norm"] == f"tools/train.py {config} --save_interval 1"  # never after a trailing --opts
    for said in ("question: train.checkpoint is best_model/model.pdparams, one of the files tools/train.py saves "
                 "(best_model/model.pdparams, iter_*/model.pdparams)",
                 "tools/train.py takes `--opts key=value` over configs/tiny_seg.yml: its own flags fill the other "
                 "fields, so its one key is passed as `--opts KEY=VALUE`; keys mapped: train.extra → train_dataset.dataset_root",
                 "configs/tiny_seg.yml: val_dataset.dataset_root is data/cityscapes, the data the training validates on: "
                 "set to the lite eval data ./train_data/tiny_seg/eval (passed in the train command's one `--opts`)",
                 "tools/train.py: --save_interval defaults to 1000, above the lite run's 10 iterations: set to 1 so the "
                 "training saves"):
        assert said in out and said in " ".join(text.split()), said
    records = lite_run(repo, "tiny_seg")
    assert_every_proof_passed(repo, "tiny_seg")
    train = next(r for r in records if r["kind"] == "train")
    assert train["command"].endswith("--iters=10 --batch_size=4 --opts val_dataset.dataset_root=./train_data/tiny_seg/eval "
                                     "train_dataset.dataset_root=./train_data/tiny_seg/train")


def seg_args(config: str) -> tuple[str, ...]:
    return ("--train", f"tools/train.py {config}", "--eval", f"tools/val.py {config}", "--export", f"tools/export.py {config}",
            "--infer", "deploy/python/infer.py", "--train-data", "lite_data", "--eval-data", "lite_data",
            "--infer-data", "lite_data/images", *SMALL)


@pytest.mark.paddle
@pytest.mark.chain
def test_a_detection_repository_driven_by_o_overrides_over_a_yaml_config(tmp_path: Path):
    repo = copy("new_ocr", tmp_path)
    config = "-c configs/det/det_tiny.yml"
    doc, text, out = run_new(repo, "det_tiny", "--train", f"tools/train.py {config}", "--eval", f"tools/eval.py {config}",
                             "--export", f"tools/export_model.py {config}", "--infer", "tools/infer/predict_det.py",
                             "--train-data", "lite_data", "--eval-data", "lite_data", "--infer-data", "lite_data/imgs", *SMALL)
    keys = {fld: doc[fld.split(".")[0]][fld.split(".")[1]]["key"] for fld in (
        "train.device", "train.epochs", "train.output_dir", "train.batch_size", "train.pretrained", "train.extra",
        "eval.extra", "export.output_dir", "export.weights")}
    assert keys == {"train.device": "Global.use_gpu", "train.epochs": "Global.epoch_num",
                    "train.output_dir": "Global.save_model_dir", "train.batch_size": "Train.loader.batch_size_per_card",
                    "train.pretrained": "Global.pretrained_model", "train.extra": "Train.dataset.data_dir",
                    "eval.extra": "Eval.dataset.data_dir", "export.output_dir": "Global.save_inference_dir",
                    "export.weights": "Global.pretrained_model"}  # never Architecture.Backbone.pretrained (a switch)
    assert doc["train"]["device"]["value"] == [False]  # a true/false key gets False, never cpu
    assert doc["train"]["checkpoint"] == "latest.pdparams"
    assert doc["train"]["norm"] == (f"tools/train.py {config} -o Global.save_epoch_step=1 Global.pretrained_model= "
                                    "Train.dataset.label_file_list=[./train_data/det_tiny/train/train_icdar2015_label.txt] "
                                    "Eval.dataset.data_dir=./train_data/det_tiny/eval "
                                    "Eval.dataset.label_file_list=[./train_data/det_tiny/eval/test_icdar2015_label.txt]")
    assert doc["export"]["norm"] == f"tools/export_model.py {config} -o Global.use_gpu=False"  # no device slot for export
    for said in ("tools/train.py takes `-o key=value` over configs/det/det_tiny.yml: the command ends in `-o`",
                 "Global.save_epoch_step is 1200, above the lite run's 1: set to 1 so the training saves",
                 "Global.pretrained_model is ./pretrain_models/MobileNetV3_large_x0_5_pretrained.pdparams, which is not "
                 "in the repository: the train step would stop loading it; set to nothing",
                 "Architecture.Backbone.pretrained is true: it may download pretrained weights",
                 "Eval.dataset.label_file_list names ./train_data/icdar2015/text_localization/test_icdar2015_label.txt",
                 # a pick it is not sure of: a question with the candidates
                 "question: export.weights is Global.pretrained_model of configs/det/det_tiny.yml; Global.checkpoints "
                 "may fill it too"):
        assert said in out and said in " ".join(text.split()), said
    records = lite_run(repo, "det_tiny")
    assert {"train", "eval", "export", "infer"} <= {r["kind"] for r in records if r["status"] == "passed"}
    assert_every_proof_passed(repo, "det_tiny")
    train = next(r for r in records if r["kind"] == "train")
    assert "Global.epoch_num=1" in train["command"] and " -o " in train["command"]


@pytest.mark.paddle
@pytest.mark.chain
def test_an_anomaly_repository_with_a_class_filter_a_cuda_switch_and_checkpoint_folders(tmp_path: Path):
    repo = copy("new_anomaly", tmp_path)
    doc, text, out = run_new(repo, "stfpm", *restore_args()[:8], "--train-data", "lite_data", "--eval-data", "lite_data",
                             "--infer-data", "lite_data/bottle/test/good/0.txt", *SMALL)
    assert doc["train"]["device"] == {"key": "--cuda", "value": [False]}  # a true/false --cuda: never cpu
    assert doc["train"]["checkpoint"] == ""
    assert doc["train"]["norm"] == "train.py --test_epochs 1 --type bottle" and doc["eval"]["script"] == "eval.py --type bottle"
    for said in ("--test_epochs defaults to 10, above the lite run's 1 epoch: set to 1 so the training saves",
                 "train.py: --type defaults to 'all' (every class) and the lite data lite_data holds the class bottle only",
                 "eval.py: --type defaults to 'all'", "eval.py loads best.pdparams from the folder its flag names"):
        assert said in out and said in " ".join(text.split()), said
    records = lite_run(repo, "stfpm")
    assert {"train", "eval", "export", "infer"} <= {r["kind"] for r in records if r["status"] == "passed"}
    assert_every_proof_passed(repo, "stfpm")
    assert any("--cuda=False" in r["command"] for r in records if r["kind"] == "train")


@pytest.mark.paddle
@pytest.mark.chain
def test_an_nlp_repository_whose_pretrained_is_a_download_switch_and_data_a_task_name(tmp_path: Path):
    repo = copy("new_nlp", tmp_path)
    doc, text, out = run_new(repo, "bert", *nlp_args())
    assert doc["train"]["pretrained"]["key"] == "--checkpoint" and doc["export"]["weights"]["key"] == "--model_path"
    assert doc["train"]["extra"]["key"] == "--data_dir" and doc["eval"]["extra"]["key"] == "--data_dir"
    assert doc["train"]["checkpoint"] == "model_state.pdparams" and doc["train"]["norm"] == "train.py --save_steps 1"
    named = ("export_model.py: --pretrained (line 6, default True) downloads pretrained weights (build the model from "
             "the pretrained BERT weights (download)); offline the step fails at start-up: add `--pretrained=` to "
             "export.norm (export_model.py) in tipc.yaml")  # type=bool: `--pretrained False` would be True
    for said in ("passed over --pretrained in eval.py (a download switch",
                 "passed over --pretrained in export_model.py (a download switch",
                 "passed over --data in train.py (a data-set name: choices sst2, cola, mrpc)",
                 "--save_steps defaults to 500: a lite run (1 epoch on the lite data) may end before that many steps; set to 1",
                 named):
        assert said in out and said in " ".join(text.split()), said
    # the one edit, as the note names it
    edited = text.replace("\n  norm: export_model.py\n", "\n  norm: export_model.py --pretrained=\n")
    assert edited != text
    (repo / "tipc.yaml").write_text(edited)
    records = lite_run(repo, "bert")
    assert_every_proof_passed(repo, "bert")
    assert any("--pretrained= --model_path=" in r["command"] for r in records if r["kind"] == "export")


def nlp_args() -> tuple[str, ...]:
    return (*restore_args()[:8], "--train-data", "data", "--eval-data", "data", "--infer-data", "data/dev.tsv", *SMALL)


def test_a_config_key_is_refused_for_an_eval_script_without_o(tmp_path: Path):
    from tipcgen.core.errors import TipcgenError
    from tipcgen.new import new

    repo = copy("new_ocr", tmp_path)
    (repo / "eval.py").write_text("import argparse\np = argparse.ArgumentParser()\np.add_argument('--weights')\n"
                                  "p.parse_args()\n")
    config = "-c configs/det/det_tiny.yml"
    options = new.Options(model_name="det", scripts={"train": f"tools/train.py {config}", "eval": "eval.py",
                                                     "export": f"tools/export_model.py {config}",
                                                     "infer": "tools/infer/predict_det.py"}, devices="cpu")
    with pytest.raises(TipcgenError, match=r"eval.py has no Global.use_gpu, but the runner passes the device to eval"):
        new.propose(options, repo)


def test_what_the_user_gives_stays_and_leaves_no_edit(tmp_path: Path):
    repo = copy("new_restore", tmp_path)
    args = [a if a != "train.py" else "train.py --stride 4 --save_interval 2" for a in restore_args()]
    doc, _, out = run_new(repo, "dncnn", *args, "--checkpoint", "model.pdparams")
    assert doc["train"]["norm"] == "train.py --stride 4 --save_interval 2" and doc["train"]["checkpoint"] == "model.pdparams"
    assert "set to" not in out and "train.checkpoint is" not in out


# ---------------------------------------------------------------- the rules, where they fire and where not

def reading(body: str, path: str = "train.py"):
    return read_source("import argparse, os, paddle\np = argparse.ArgumentParser()\n" + textwrap.dedent(body), path)


def edits_of(body: str, lite_count: int = 1, steps: bool = False, root: Path | None = None, data: str | None = None,
             flags_: list[Flag] | None = None) -> list[lite.Edit]:
    script = Script("train", "train.py", (), flags_ or [])
    return lite.edits(root or Path("."), {"train": script}, {"train.py": reading(body)}, {}, lite_count, steps, data)


def test_an_interval_gate_is_set_only_when_it_skips_the_lite_run():
    gated = '''
        p.add_argument("--save_freq", type=int, default={n})
        a = p.parse_args()
        for epoch in range(3):
            if epoch % a.save_freq == 0:
                paddle.save({{}}, "m.pdparams")
    '''
    assert [(e.flag, e.value) for e in edits_of(gated.format(n=10))] == [("--save_freq", "1")]
    assert edits_of(gated.format(n=1)) == []  # every epoch already
    assert edits_of(gated.format(n=10), lite_count=10, steps=True) == []  # 10 iterations reach it
    # by its name, with no gate the reading sees: an interval above the lite run; not a count of test images
    assert [e.flag for e in edits_of('p.add_argument("--eval_interval", type=int, default=500)\na = p.parse_args()\n')] == ["--eval_interval"]
    assert edits_of('p.add_argument("--test_size", type=int, default=500)\na = p.parse_args()\n') == []
    # by its name, but never read: the save is gated by a literal, and setting the flag would change nothing
    unread = '''
        p.add_argument("--save_interval", type=int, default=5000)
        p.add_argument("--lr", type=float, default=0.1)
        a = p.parse_args()
        for step in range(10):
            print(a.lr)
            if step % 5000 == 0:
                paddle.save({}, "m.pdparams")
    '''
    assert edits_of(unread) == []
    assert [e.flag for e in edits_of(unread.replace("print(a.lr)", "print(a.lr, a.save_interval)"))] == ["--save_interval"]
    assert edits_of('p.add_argument("--warmup_steps", type=int, default=500)\na = p.parse_args()\n') == []


def test_a_stride_is_set_only_below_a_patch_size():
    both = 'p.add_argument("--patch_size", type=int, default=48)\np.add_argument("--stride", type=int, default={s})\n'
    assert [(e.flag, e.value) for e in edits_of(both.format(s=12))] == [("--stride", "48")]
    assert edits_of(both.format(s=48)) == [] and edits_of(both.format(s=64)) == []
    assert edits_of('p.add_argument("--stride", type=int, default=2)\n') == []  # a conv's stride: the model's


def test_an_augmentation_multiplier_is_set_to_one():
    assert [(e.flag, e.value) for e in edits_of('p.add_argument("--aug_times", type=int, default=8)\n')] == [("--aug_times", "1")]
    assert edits_of('p.add_argument("--aug_times", type=int, default=1)\n') == []
    assert edits_of('p.add_argument("--augment", type=int, default=8)\n') == []  # not a multiplier by its name


def test_a_class_filter_asks_when_the_lite_data_does_not_say(tmp_path: Path):
    (tmp_path / "data" / "cable").mkdir(parents=True)
    (tmp_path / "data" / "screw").mkdir()
    body = 'p.add_argument("--category", default="all")\n'
    asked = edits_of(body, root=tmp_path, data="data")
    assert [e.flag for e in asked] == [""] and asked[0].note.startswith("question: train.py: --category defaults to 'all'")
    assert "candidates: cable, screw" in asked[0].note
    (tmp_path / "data" / "screw").rmdir()
    assert [(e.flag, e.value) for e in edits_of(body, root=tmp_path, data="data")] == [("--category", "cable")]
    assert edits_of('p.add_argument("--category", default="cable")\n', root=tmp_path, data="data") == []
    assert edits_of('p.add_argument("--mode", default="all")\n', root=tmp_path, data="data") == []  # not a class
    # one class by default that the lite data does not hold (anomalib's --category leather)
    assert [(e.flag, e.value) for e in edits_of('p.add_argument("--category", default="leather")\n', root=tmp_path,
                                                data="data")] == [("--category", "cable")]
    assert edits_of('p.add_argument("--backbone", default="resnet18")\n', root=tmp_path, data="data") == []
    assert edits_of('p.add_argument("--type", default="resnet")\n', root=tmp_path, data="data") == []  # no choices
    with_choices = [Flag(("--type",), True, ("leather", "cable", "screw"))]
    assert [(e.flag, e.value) for e in edits_of('p.add_argument("--type", default="leather")\n', root=tmp_path,
                                                data="data", flags_=with_choices)] == [("--type", "cable")]


@pytest.mark.parametrize(("help_text", "choices", "default", "name"), [
    ("the GLUE task", ("sst2", "cola"), "sst2", True),
    ("", (), "cifar10", True),
    ("folder of the data", ("a", "b"), "a", False),  # its help says it is a path
    ("", (), "data", False),  # a folder name
    ("", (), "./data/train", False),
    ("", (), None, False),
])
def test_a_data_set_name_is_not_a_data_path(help_text, choices, default, name):
    from tipcgen.configs.script_reading import Arg

    flag = Flag(("--data",), True, choices, help_text)
    assert bool(dataset_name(flag, Arg(("--data",), "data", default=default, help=help_text))) is name


def test_the_checkpoint_name_read_from_the_source(tmp_path: Path):
    def write(rel: str, body: str) -> None:
        (tmp_path / rel).write_text("import argparse, os, paddle\np = argparse.ArgumentParser()\n" + textwrap.dedent(body))

    write("train.py", '''
        p.add_argument("--out", default="o")
        a = p.parse_args()
        paddle.save({}, os.path.join(a.out, "best.pdparams"))
        paddle.save({}, os.path.join(a.out, "last.pdparams"))
    ''')
    write("eval.py", 'p.add_argument("--weights")\na = p.parse_args()\nm.set_state_dict(paddle.load(a.weights))\n')
    name, note = lite.checkpoint_guess(tmp_path, "train.py", ["eval.py"])
    assert name == "best.pdparams" and note.startswith("question: ") and "best.pdparams, last.pdparams" in note
    write("eval.py", 'p.add_argument("--ckpt")\na = p.parse_args()\npath = os.path.join(a.ckpt, "last.pdparams")\n'
                     'm.set_state_dict(paddle.load(path))\n')
    assert lite.checkpoint_guess(tmp_path, "train.py", ["eval.py"])[0] == "."
    # a data loader called load, a save of no checkpoint: nothing said, --checkpoint is asked for as before
    write("eval.py", 'p.add_argument("--data")\na = p.parse_args()\nx = load(a.data)\n')
    assert lite.checkpoint_guess(tmp_path, "train.py", ["eval.py"]) is None
    write("train.py", 'p.add_argument("--out")\na = p.parse_args()\nnp.save(os.path.join(a.out, "x.npy"), x)\n')
    assert lite.checkpoint_guess(tmp_path, "train.py", ["eval.py"]) is None


def test_two_flags_that_fit_a_slot_make_a_question_and_one_that_cannot_does_not(tmp_path: Path):
    from tipcgen.new import new

    head = "import argparse\np = argparse.ArgumentParser()\n"
    (tmp_path / "export.py").write_text(head + 'p.add_argument("--weights")\np.add_argument("--output_dir")\np.parse_args()\n')
    (tmp_path / "infer.py").write_text(head + 'p.add_argument("--model_dir")\np.parse_args()\n')

    def notes(steps: int) -> str:
        (tmp_path / "train.py").write_text(head + textwrap.dedent(f'''
            p.add_argument("--data_dir", default="data/train")
            p.add_argument("--data_path", default="data/train.txt")
            p.add_argument("--epochs", type=int, default=30)
            p.add_argument("--max_steps", type=int, default={steps})
            p.add_argument("--save_dir", default="out")
            a = p.parse_args()
            print(a.data_dir, a.data_path, a.epochs, a.max_steps, a.save_dir)
        '''))
        options = new.Options(model_name="m", scripts={"train": "train.py", "export": "export.py", "infer": "infer.py"},
                              checkpoint="m.pdparams", devices="cpu")
        return "\n".join(new.propose(options, tmp_path).notes)

    said = notes(-1)  # --max_steps -1: no limit, it does not count this training
    assert "question: train.extra is --data_dir (train.py); --data_path may fill it too" in said
    assert "question: train.epochs" not in said
    assert "question: train.epochs is --epochs (train.py); --max_steps may fill it too" in notes(1000)


def test_a_path_of_thousands_of_pluses_reads_as_no_checkpoint():
    body = "p.add_argument('--out')\na = p.parse_args()\npaddle.save({}, a.out" + " + 'x'" * 2500 + ")\n"
    found = reading(body)
    assert found.readable and found.saves == ()


def test_o_overrides_append_style_and_what_is_never_a_checkpoint_key(tmp_path: Path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "m.yaml").write_text(textwrap.dedent('''
        Global:
          epochs: 120
          output_dir: ./output/
          device: gpu
          pretrained_model: null
          save_interval: 1
        Arch:
          pretrained: true
        DataLoader:
          Train:
            dataset:
              image_root: ./dataset/
            sampler:
              batch_size: 64
          Eval:
            sampler:
              batch_size: 64
    '''))
    (tmp_path / "train.py").write_text('import argparse\np = argparse.ArgumentParser()\n'
                                       'p.add_argument("-c", "--config", default="configs/m.yaml")\n'
                                       'p.add_argument("-o", "--override", action="append", default=[], help="config options to be overridden")\n')
    script = Script("train", "train.py", (), [Flag(("-c", "--config"), True), Flag(("-o", "--override"), True,
                                                                                  help="config options to be overridden")])
    found = overrides.detect(tmp_path, script, reading_of(tmp_path, "train.py"))
    assert found is not None and found.append and found.config == "configs/m.yaml"
    assert found.key("Global.epochs") == "-o Global.epochs"  # PaddleClas: each key with its -o
    assert overrides.find("train.batch_size", found) == "DataLoader.Train.sampler.batch_size"
    assert overrides.find("train.extra", found) == "DataLoader.Train.dataset.image_root"
    assert overrides.find("train.pretrained", found) == "Global.pretrained_model"  # never Arch.pretrained: true
    assert overrides.find("eval.extra", found) is None
    notes = overrides.lite_edits(tmp_path, {"train": script}, {"train": found}, {}, "./d", {}, 1)
    assert script.args == () and not any("save_interval" in n for n in notes)  # every epoch already
    # no -o, or a config that is not there: the script's flags as before
    assert overrides.detect(tmp_path, Script("train", "train.py", (), [Flag(("-c",), True)]), None) is None
    gone = Script("train", "train.py", ("-c", "configs/none.yaml"), script.flags)
    assert overrides.detect(tmp_path, gone, None) is None


def test_a_config_of_aliases_shared_thousands_of_times_reads_in_bounded_time(tmp_path: Path):
    shared = lambda i: ", ".join(f"k{j}: *a{i - 1}" for j in range(8))  # noqa: E731
    lines = ["a0: &a0 {x: {}, y: {}}"] + [f"a{i}: &a{i} {{{shared(i)}}}" for i in range(1, 40)]
    (tmp_path / "c.yml").write_text("\n".join(lines) + "\n")
    script = Script("train", "t.py", ("-c", "c.yml"), [Flag(("-c",), True), Flag(("-o",), True)])
    found = overrides.detect(tmp_path, script, None)  # 8**12 paths within the depth: a walk of each would not end
    assert found is not None and overrides.find("train.epochs", found) is None


_NAMES = ["--stride", "--patch_size", "--aug_times", "--type", "--category", "--save_interval", "--test_epochs",
          "--eval_freq", "--epochs", "--iter", "--crop_size", "--repeat", "--class_name", "--save_every"]


@settings(max_examples=fuzz_examples(200), deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_NAMES), st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6),
                                                            st.sampled_from(["all", "bottle", "", "ALL", "*"]),
                                                            st.text(max_size=8))),
                max_size=8, unique_by=lambda t: t[0]),
       st.integers(1, 20), st.booleans(), st.booleans())
def test_any_flags_and_defaults_give_edits_of_their_own_flags(args, lite_count, steps, gated):
    body = "".join(f"p.add_argument({name!r}, default={default!r})\n" for name, default in args)
    body += "a = p.parse_args()\n" + "".join(f"if step % a.{name.lstrip('-')} == 0:\n    paddle.save(m, 'x.pdparams')\n"
                                              for name, _ in args if gated)
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "data" / "bottle").mkdir(parents=True)
        found = edits_of(body, lite_count, steps, Path(folder), "data")
    names = {name for name, _ in args}
    for edit in found:
        assert edit.flag in names or (edit.flag == "" and edit.note.startswith("question: "))
        assert "\n" not in edit.note and edit.note
    assert len({e.flag for e in found if e.flag}) == len([e for e in found if e.flag])  # one edit per flag


def reading_of(root: Path, rel: str):
    from tipcgen.configs.script_reading import read_script

    return read_script(root, rel)


@settings(max_examples=fuzz_examples(80), deadline=None)
@given(st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=12)),
                    lambda inner: st.dictionaries(st.text(max_size=10), inner, max_size=4) | st.lists(inner, max_size=3),
                    max_leaves=25))
def test_any_yaml_config_reads_without_an_error(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder)
        (path / "c.yml").write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
        script = Script("train", "t.py", ("-c", "c.yml"),
                        [Flag(("-c",), True), Flag(("-o", "--opt"), True, help="set configuration options")])
        found = overrides.detect(path, script, None)
    if found is not None:
        for fld in ("train.epochs", "train.batch_size", "train.extra", "eval.extra", "train.pretrained", "export.output_dir",
                    "inference.model_dir", "inference.data", "inference.use_gpu", "inference.cpu_threads"):
            key = overrides.find(fld, found)
            assert key is None or key in found.keys


# ---------------------------------------------------------------- a broken variant of each: it fails naming its cause

_WEIGHTS = "import sys, paddle\nsys.path.insert(0, '.')\nfrom {module} import {cls}\npaddle.seed(1)\npaddle.save({cls}().state_dict(), {path!r})\n"
_BROKEN = {
    # restoration: the save gated by a literal interval above the lite run (no flag to set it by)
    "restore": ("new_restore", "dncnn", restore_args, ("train.py", "if step % args.save_interval == 0:", "if step % 5000 == 0:"),
                (), None, "train.py saves only at a fixed interval (every 5000 at train.py:41), which this run's epochs or "
                          "iterations may not reach"),
    # segmentation: the export loads a file of the repository, not the checkpoint --model_path names
    "seg": ("new_seg", "tiny_seg", lambda: seg_args("--config configs/tiny_seg.yml"),
            ("tools/export.py", "paddle.load(args.model_path)", 'paddle.load("pretrained/model.pdparams")'), (),
            ("model", "TinySeg", "pretrained/model.pdparams"),
            "so export did not use the trained checkpoint"),
    # detection (-o): a module the training imports still imports paddle.fluid (removed in Paddle 3)
    "ocr": ("new_ocr", "det_tiny", lambda: ocr_args("-c configs/det/det_tiny.yml"),
            ("tools/model.py", "import paddle\n", "import paddle\nfrom paddle import fluid  # noqa: F401\n"), (), None,
            "tools/model.py:3 imports paddle.fluid, which Paddle 3 removed"),
    # NLP: a misspelt flag in train.norm, let through by the script's parse_known_args (and the note's edit, as honest)
    "nlp": ("new_nlp", "bert", nlp_args, None,
            (("\n  norm: export_model.py\n", "\n  norm: export_model.py --pretrained=\n"),
             ("norm: train.py --save_steps 1", "norm: train.py --save_setps 1")), None,
            "the command passes --save_setps, which train.py does not take (parse_known_args lets it through): spell "
            "it --save_steps in train.norm in tipc.yaml"),
    # anomaly: the training saves a copy of committed weights, not what it trained
    "anomaly": ("new_anomaly", "stfpm", lambda: anomaly_args(),
                ("train.py", 'paddle.save(model.state_dict(), os.path.join(args.save_path, "best.pdparams"))',
                 'paddle.save(paddle.load("weights/best.pdparams"), os.path.join(args.save_path, "best.pdparams"))'),
                (), ("model", "AutoEncoder", "weights/best.pdparams"),
                "the training wrote no checkpoint of its own, judged by content against the weight files there before it: "
                "test_tipc/output/stfpm/lite_train_lite_infer/norm_train_gpus_-1_autocast_null/best.pdparams (its bytes) "
                "is weights/best.pdparams, a weight file there before the train step"),
}


def ocr_args(config: str) -> tuple[str, ...]:
    return ("--train", f"tools/train.py {config}", "--eval", f"tools/eval.py {config}", "--export",
            f"tools/export_model.py {config}", "--infer", "tools/infer/predict_det.py", "--train-data", "lite_data",
            "--eval-data", "lite_data", "--infer-data", "lite_data/imgs", *SMALL)


def anomaly_args() -> tuple[str, ...]:
    return (*restore_args()[:8], "--train-data", "lite_data", "--eval-data", "lite_data",
            "--infer-data", "lite_data/bottle/test/good/0.txt", *SMALL)


@pytest.mark.paddle
@pytest.mark.chain
@pytest.mark.parametrize("kind", list(_BROKEN))
def test_a_broken_variant_of_each_repository_fails_naming_its_cause(kind: str, tmp_path: Path):
    """One edit to the honest repository (or to the descriptor `new` wrote): the verdict is FAILED and the
    run's output names the cause (the line, the flag, the file)."""
    import subprocess
    import sys

    fixture, model, args, repo_edit, yaml_edits, weights, cause = _BROKEN[kind]
    repo = copy(fixture, tmp_path)
    if repo_edit is not None:
        rel, old, new = repo_edit
        source = (repo / rel).read_text()
        assert source.count(old) == 1, (rel, old)
        (repo / rel).write_text(source.replace(old, new))
    if weights is not None:  # the committed weights the broken script reads
        module, cls, path = weights
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-c", _WEIGHTS.format(module=module, cls=cls, path=path)], cwd=repo, check=True,
                       capture_output=True, timeout=600)
    run_new(repo, model, *args())
    text = (repo / "tipc.yaml").read_text()
    for old, new in yaml_edits:
        assert old in text, old
        text = text.replace(old, new)
    (repo / "tipc.yaml").write_text(text)
    tipcgen("init", "tipc.yaml", cwd=repo, check=True)
    run = tipcgen("run", "--mode", "lite_train_lite_infer", cwd=repo)
    assert run.returncode != 0 and "\nFAILED: " in run.stdout, run.stdout[-3000:]
    assert cause in " ".join(run.stdout.split()), run.stdout[-4000:]
    assert not summary(repo, model)["ok"]


def test_a_nargs_opts_beside_flags_of_its_own_passes_its_one_key_with_the_flag(tmp_path: Path):
    """PaddleSeg: `--opts` (nargs='+') beside --iters/--device/--save_dir. The runner passes those flags after
    the command, so a command ending in `--opts` would hand them to it (argparse: expected at least one
    argument): the script's flags fill their fields and the one key left goes as `--opts KEY`. A script whose
    -o is all it has (PaddleOCR) still ends in `-o`."""
    from tipcgen.new import new

    def propose(train: str, config_more: str = "") -> dict:
        shutil.copytree(FIXTURES / "new_seg", tmp_path / "seg", dirs_exist_ok=True)
        (tmp_path / "seg" / "tools" / "train.py").write_text(train)
        with (tmp_path / "seg" / "configs" / "tiny_seg.yml").open("a") as config:
            config.write(config_more)
        options = new.Options(model_name="seg", scripts={"train": "tools/train.py --config configs/tiny_seg.yml",
                                                         "eval": "tools/val.py --config configs/tiny_seg.yml",
                                                         "export": "tools/export.py --config configs/tiny_seg.yml",
                                                         "infer": "deploy/python/infer.py"}, devices="cpu",
                              data={"train": "lite_data", "eval": "lite_data", "infer": "lite_data/images"},
                              checkpoint="best_model/model.pdparams")
        return yaml.safe_load(new.propose(options, tmp_path / "seg").text)

    honest = (FIXTURES / "new_seg" / "tools" / "train.py").read_text()
    doc = propose(honest)
    assert doc["train"]["epochs"]["key"] == "--iters"
    assert doc["train"]["extra"]["key"] == "--opts val_dataset.dataset_root=./train_data/seg/eval train_dataset.dataset_root"
    assert not doc["train"]["norm"].endswith("--opts")
    # no flag of its own for the device, the output, the data: every slot a key, the command ends in --opts
    only_opts = honest.replace('parser.add_argument("--iters"', 'parser.add_argument("--iters_unused"')
    for flag in ('"--batch_size"', '"--save_dir"', '"--device"'):
        only_opts = only_opts.replace(f"parser.add_argument({flag}", f"parser.add_argument({flag[:-1]}_unused\"")
    doc = propose(only_opts, "save_dir: ./output\n")
    # the command's last run of --opts: the fixed key (the lite eval data the training validates on), then each
    # key the runner appends as a bare KEY=VALUE
    assert doc["train"]["norm"].endswith("--opts val_dataset.dataset_root=./train_data/seg/eval")
    assert doc["train"]["epochs"]["key"] == "iters"
    assert doc["train"]["extra"]["key"] == "train_dataset.dataset_root"


@pytest.mark.parametrize(("body", "saved"), [
    ('d = os.path.join(a.out, "best_model")\npaddle.save(m, os.path.join(d, "model.pdparams"))\n', "best_model/model.pdparams"),
    ('paddle.save(m, os.path.join(os.path.join(a.out, "best"), "m.pdparams"))\n', "best/m.pdparams"),
    ('paddle.save(m, os.path.join(a.out, "model.pdparams"))\n', "model.pdparams"),
    # a folder per iteration or epoch: its number is the run's, so a pattern (the runner passes the newest match)
    ('d = os.path.join(a.out, f"iter_{i}")\npaddle.save(m, os.path.join(d, "model.pdparams"))\n', "iter_*/model.pdparams"),
    ('d = os.path.join(a.out, "epoch_{}".format(e))\npaddle.save(m, os.path.join(d, "m.pdparams"))\n', "epoch_*/m.pdparams"),
    ('d = os.path.join(a.out, "iter_%d" % i)\npaddle.save(m, os.path.join(d, "model.pdparams"))\n', "iter_*/model.pdparams"),
    ('paddle.save(m, os.path.join(os.path.join(a.out, f"{i}"), "m.pdparams"))\n', None),  # a number alone: no name
    ('paddle.save(m, os.path.join(a.out, f"epoch_{e}", "model.pdparams"))\n', "epoch_*/model.pdparams"),
    ('paddle.save(m, os.path.join(a.out, "best_model", "model.pdparams"))\n', "best_model/model.pdparams"),
    ('paddle.save(m, os.path.join(a.out, name, "model.pdparams"))\n', None),
    # two values, a separator, a value of any kind: never a folder per iteration
    ('d = os.path.join(a.out, f"{n}_{i}")\npaddle.save(m, os.path.join(d, "model.pdparams"))\n', None),
    ('d = os.path.join(a.out, f"iter_{i}/sub")\npaddle.save(m, os.path.join(d, "model.pdparams"))\n', None),
    ('d = os.path.join(a.out, "iter_{}_{}".format(i, j))\npaddle.save(m, os.path.join(d, "model.pdparams"))\n', None),
    ('d = os.path.join(a.out, name)\npaddle.save(m, os.path.join(d, "model.pdparams"))\n', None),
    # a file name with a dot is no folder; a separator or a pattern in the part is not one folder name
    ('d = os.path.join(a.out, "x.pdparams")\npaddle.save(m, os.path.join(d, "model.pdparams"))\n', None),
    ('d = os.path.join(a.out, "a/b")\npaddle.save(m, os.path.join(d, "model.pdparams"))\n', None),
    ('d = os.path.join(a.out, "best")\npaddle.save(m, d)\n', "best"),
])
def test_a_checkpoint_in_a_fixed_subfolder_of_the_output_flag(body: str, saved: str | None):
    found = reading('p.add_argument("--out")\na = p.parse_args()\n' + body)
    assert [name for _, name in found.saves] == ([saved] if saved else [])


# ---------------------------------------------------------------- several --opts keys for one script (PaddleSeg)

def _seg_with_two_opts_keys(repo: Path) -> None:
    """new_seg with a save gate only its config sets (`snapshot_interval`, 1000) and no --batch_size flag (the
    batch size is the config's `batch_size`): two `--opts` keys and a fixed override for one nargs `--opts`."""
    with (repo / "configs" / "tiny_seg.yml").open("a") as config:
        config.write("snapshot_interval: 1000\n")
    train = repo / "tools" / "train.py"
    source = train.read_text()
    for old, new in (('if float(loss) < best_loss:', 'if it % cfg["snapshot_interval"] == 0 and float(loss) < best_loss:'),
                     ('parser.add_argument("--batch_size"', 'parser.add_argument("--batch_size_unused"'),
                     ('batch_size = args.batch_size or cfg["batch_size"]', 'batch_size = cfg["batch_size"]')):
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    train.write_text(source)


@pytest.mark.paddle
@pytest.mark.chain
def test_several_opts_keys_of_one_nargs_opts_go_in_one_run_of_it(tmp_path: Path):
    """argparse keeps the last `--opts` of a command (nargs='+', action store): a fixed override put in the
    train command before the runner's `--opts train_dataset.dataset_root=...` would be dropped without a word
    (here: best_model is never saved, and eval fails). The fixed keys ride in the key of the last `--opts`
    field the runner passes; a second `--opts` field is left out, said."""
    repo = copy("new_seg", tmp_path)
    _seg_with_two_opts_keys(repo)
    config = "--config configs/tiny_seg.yml"
    doc, text, out = run_new(repo, "tiny_seg", *seg_args(config))
    assert doc["train"]["extra"]["key"] == ("--opts val_dataset.dataset_root=./train_data/tiny_seg/eval snapshot_interval=1 "
                                            "train_dataset.dataset_root")
    assert doc["train"]["batch_size"] is None or doc["train"]["batch_size"].get("key") is None
    assert doc["train"]["norm"] == f"tools/train.py {config} --save_interval 1"  # no --opts the runner's would replace
    assert doc["eval"]["extra"]["key"] == "--opts val_dataset.dataset_root"  # nothing fixed for eval: as before
    for said in ("configs/tiny_seg.yml: snapshot_interval is 1000, above the lite run's 10: set to 1 so the training saves "
                 "(`--opts snapshot_interval=1` passed in the train command's one `--opts`)",
                 "tools/train.py: train.batch_size would be passed as a second `--opts batch_size=...`, and argparse keeps "
                 "only the last `--opts` (nargs): left out, so configs/tiny_seg.yml's value stays",
                 "tools/train.py: its fixed `--opts` keys (val_dataset.dataset_root=./train_data/tiny_seg/eval, "
                 "snapshot_interval=1) go in train.extra's key, before "
                 "train_dataset.dataset_root"):
        assert said in out and said in " ".join(text.split()), said
    records = lite_run(repo, "tiny_seg")
    assert_every_proof_passed(repo, "tiny_seg")
    train = next(r for r in records if r["kind"] == "train")
    assert train["command"].endswith("--opts val_dataset.dataset_root=./train_data/tiny_seg/eval snapshot_interval=1 "
                                     "train_dataset.dataset_root=./train_data/tiny_seg/train")
    assert train["command"].count("--opts") == 1


def test_fixed_opts_keys_end_the_command_when_no_opts_field_is_passed(tmp_path: Path):
    """No lite train data: the runner passes no `--opts` field to train, so the fixed keys end the command as
    one `--opts K=V` (the runner's flags after it end its values); an -o that is not nargs-single is untouched."""
    from tipcgen.new import new

    repo = copy("new_seg", tmp_path)
    _seg_with_two_opts_keys(repo)
    config = "--config configs/tiny_seg.yml"
    options = new.Options(model_name="seg", scripts={"train": f"tools/train.py {config}", "eval": f"tools/val.py {config}",
                                                     "export": f"tools/export.py {config}", "infer": "deploy/python/infer.py"},
                          devices="cpu", data={"eval": "lite_data", "infer": "lite_data/images"},
                          checkpoint="best_model/model.pdparams")
    doc = yaml.safe_load(new.propose(options, repo).text)
    assert doc["train"]["norm"] == (f"tools/train.py {config} --save_interval 1 --opts "
                                    "val_dataset.dataset_root=./train_data/seg/eval snapshot_interval=1")
    assert doc["train"]["extra"]["key"] == "--opts train_dataset.dataset_root" and doc["train"]["extra"]["value"] is None
    assert doc["train"]["batch_size"] is None or doc["train"]["batch_size"].get("key") is None  # a per-mode value: left out


# ---------------------------------------------------------------- an eval script without the train script's device flag

def _seg_eval_without_device(repo: Path, default: str = '"gpu"') -> None:
    """new_seg whose tools/val.py has no --device (it runs where Paddle puts it), and whose train --device
    defaults to DEFAULT."""
    val = repo / "tools" / "val.py"
    source = val.read_text()
    for old in ('parser.add_argument("--device", help="Set the device place for evaluating model.", default="gpu",\n'
                '                    choices=["cpu", "gpu", "xpu", "npu", "mlu"], type=str)\n', "paddle.set_device(args.device)\n"):
        assert source.count(old) == 1, old
        source = source.replace(old, "")
    val.write_text(source)
    train = repo / "tools" / "train.py"
    old = 'help="Set the device place for training model.", default="gpu",'
    assert train.read_text().count(old) == 1
    train.write_text(train.read_text().replace(old, f'help="Set the device place for training model.", default={default},'))


@pytest.mark.paddle
@pytest.mark.chain
def test_an_eval_script_without_the_train_device_flag_is_mapped_not_refused(tmp_path: Path):
    """The runner passes train.device's key to eval as well: `new` used to refuse (`tools/val.py has no --device`).
    Now the key is left out and said; with --devices cpu the train command fixes --device cpu."""
    repo = copy("new_seg", tmp_path)
    _seg_eval_without_device(repo)
    config = "--config configs/tiny_seg.yml"
    doc, text, out = run_new(repo, "tiny_seg", *seg_args(config))
    assert doc["train"]["device"] is None and doc["gpu_list"] == ["-1"]
    assert doc["train"]["norm"] == f"tools/train.py {config} --device cpu --save_interval 1"
    said = ("tools/train.py: --device is left out of tipc.yaml (no train.device key): the runner passes train.device to "
            "eval too, and tools/val.py has no --device; the train command passes --device cpu (every case is the CPU: "
            "--devices cpu), tools/val.py runs on its default device")
    assert said in out and said in " ".join(text.split())
    records = lite_run(repo, "tiny_seg")
    assert_every_proof_passed(repo, "tiny_seg")
    assert not any("--device" in r["command"] for r in records if r["kind"] == "eval")


@pytest.mark.parametrize(("default", "gpu_list", "said"), [
    ('"gpu"', ["0"], "--device defaults to 'gpu', so gpu_list has the GPU entry only"),
    ('"cpu"', ["-1"], "--device defaults to 'cpu', so gpu_list has the CPU entry only"),
    ("None", ["0", "-1"], "question: tools/train.py: --device is left out"),
])
def test_without_devices_cpu_the_cases_are_the_device_the_flag_defaults_to(tmp_path: Path, default, gpu_list, said):
    from tipcgen.new import new

    repo = copy("new_seg", tmp_path)
    _seg_eval_without_device(repo, default)
    config = "--config configs/tiny_seg.yml"
    options = new.Options(model_name="seg", scripts={"train": f"tools/train.py {config}", "eval": f"tools/val.py {config}",
                                                     "export": f"tools/export.py {config}", "infer": "deploy/python/infer.py"},
                          data={"train": "lite_data", "eval": "lite_data", "infer": "lite_data/images"},
                          checkpoint="best_model/model.pdparams")
    proposal = new.propose(options, repo)
    doc = yaml.safe_load(proposal.text)
    assert doc["gpu_list"] == gpu_list and doc["train"]["device"] is None
    assert "--device" not in doc["train"]["norm"]  # a fixed device only where every case is the CPU
    assert len(doc["inference"]["use_gpu"]["value"]) == len(gpu_list)
    assert any(said in note for note in proposal.notes), proposal.notes
    # where it must not fire: eval has the flag (the honest repository), or a --flag the user gave
    honest = copy("new_seg", tmp_path / "honest")
    assert yaml.safe_load(new.propose(options, honest).text)["train"]["device"]["key"] == "--device"
    given = new.propose(replace_flags(options, {"train.device": "null"}), repo)
    assert not any("is left out of tipc.yaml" in note for note in given.notes)


def replace_flags(options, flags: dict[str, str]):
    from dataclasses import replace

    return replace(options, flags=flags)


@settings(max_examples=fuzz_examples(200), deadline=None)
@given(st.lists(st.one_of(st.text(max_size=6), st.sampled_from(["{i}", "{}", "%d", "/", "_", "iter"])), max_size=5))
def test_any_folder_name_template_is_a_numbered_folder_or_nothing(parts):
    """f"...", "...".format(i) and "..." % i of any text: `iter_*` (one number, a folder name) or None."""
    import ast
    import re as re_

    from tipcgen.configs.script_reading import numbered_folder

    text = "".join(parts)
    for source in (f"f{text!r}", f"{text!r}.format(i)", f"{text!r} % i"):
        try:
            node = ast.parse(source, mode="eval").body
        except (SyntaxError, ValueError):
            continue
        got = numbered_folder(node)
        assert got is None or (re_.fullmatch(r"[A-Za-z0-9_\-]*\*[A-Za-z0-9_\-]*", got) and got != "*"), (source, got)


def test_a_checkpoint_folder_per_iteration_is_named_by_a_pattern(tmp_path: Path):
    """train saves iter_N/model.pdparams only: eval loading a file flag gets `iter_*/model.pdparams`; eval loading
    model.pdparams from a folder flag (`--checkpoint DIR`) gets `iter_*`; a fixed name beside it is preferred."""
    head = "import argparse, os, paddle\np = argparse.ArgumentParser()\n"
    (tmp_path / "train.py").write_text(head + textwrap.dedent('''
        p.add_argument("--save_dir")
        a = p.parse_args()
        for it in range(1, 11):
            folder = os.path.join(a.save_dir, f"iter_{it}")
            paddle.save({}, os.path.join(folder, "model.pdparams"))
    '''))
    (tmp_path / "eval.py").write_text(head + 'p.add_argument("--model_path")\na = p.parse_args()\n'
                                      'm.set_state_dict(paddle.load(a.model_path))\n')
    name, note = lite.checkpoint_guess(tmp_path, "train.py", ["eval.py"])
    assert name == "iter_*/model.pdparams" and "the runner gives eval and export the newest" in note
    (tmp_path / "eval.py").write_text(head + 'p.add_argument("--checkpoint")\na = p.parse_args()\n'
                                      'm.set_state_dict(paddle.load(os.path.join(a.checkpoint, "model.pdparams")))\n')
    name, note = lite.checkpoint_guess(tmp_path, "train.py", ["eval.py"])
    assert name == "iter_*" and "loads model.pdparams from the folder its flag names" in note
    with (tmp_path / "train.py").open("a") as train:
        train.write('paddle.save({}, os.path.join(a.save_dir, "model_final.pdparams"))\n')
    (tmp_path / "eval.py").write_text(head + 'p.add_argument("--model_path")\na = p.parse_args()\n'
                                      'm.set_state_dict(paddle.load(a.model_path))\n')
    name, note = lite.checkpoint_guess(tmp_path, "train.py", ["eval.py"])
    assert name == "model_final.pdparams" and note.startswith("question: ") and "iter_*/model.pdparams" in note


def test_the_export_proof_finds_a_pattern_checkpoint_among_what_the_training_wrote(tmp_path: Path):
    from tipcgen.repro.export_check import missing_checkpoint

    save = tmp_path / "out"
    written = [save / "iter_9" / "model.pdparams", save / "iter_10" / "model.pdparams", save / "iter_10" / "model.pdopt"]
    assert missing_checkpoint(save, "iter_*/model.pdparams", written) is None
    assert missing_checkpoint(save, "iter_*", written) is None  # a checkpoint folder
    assert missing_checkpoint(save, "epoch_*/model.pdparams", written) == save / "epoch_*/model.pdparams"
    assert missing_checkpoint(save, "iter_*/model.pdparams", []) == save / "iter_*/model.pdparams"
    assert missing_checkpoint(save, "iter_*/model.pdparams", [tmp_path / "elsewhere" / "iter_1" / "model.pdparams"]) is not None


@pytest.mark.paddle
@pytest.mark.chain
def test_a_segmentation_repository_with_iteration_folders_only(tmp_path: Path):
    """PaddleSeg without --do_eval: only `iter_N/model.pdparams` folders, whose N is the run's. train.checkpoint
    is the pattern `iter_*/model.pdparams`, the runner gives eval and export the newest (iter_10 of a 10-iteration
    lite run, never iter_9 by a lexical sort), and the export proof finds it."""
    repo = copy("new_seg", tmp_path)
    train = repo / "tools" / "train.py"
    source = train.read_text()
    best = source[source.index("        if float(loss) < best_loss:"):source.index('os.path.join(best_dir, "model.pdparams"))\n')]
    train.write_text(source.replace(best + 'os.path.join(best_dir, "model.pdparams"))\n', ""))
    config = "--config configs/tiny_seg.yml"
    doc, text, out = run_new(repo, "tiny_seg", *seg_args(config))
    assert doc["train"]["checkpoint"] == "iter_*/model.pdparams"
    said = ("train.checkpoint is iter_*/model.pdparams (a folder per iteration or epoch, iter_*: the runner gives eval "
            "and export the newest, the one of the highest number)")
    assert said in out and said in " ".join(text.split())
    records = lite_run(repo, "tiny_seg")
    assert_every_proof_passed(repo, "tiny_seg")
    for kind in ("eval", "export"):
        command = next(r["command"] for r in records if r["kind"] == kind)
        assert "/iter_10/model.pdparams" in command, command


# ---------------------------------------------------------------- PaddleGAN-shaped: one script, -o keys, run folders

def gan_args(*more: str) -> tuple[str, ...]:
    config = "-c configs/tiny_sr.yaml"
    return ("--train", f"tools/main.py {config}", "--eval", f"tools/main.py {config} --evaluate-only",
            "--export", f"tools/export_model.py {config}", "--infer", f"tools/inference.py {config} --model_type tinysr",
            "--train-data", "lite_data/train", "--eval-data", "lite_data/test", "--infer-data", "lite_data/test",
            "--devices", "cpu", *more)


@pytest.mark.paddle
@pytest.mark.chain
def test_a_paddlegan_shaped_repository_from_zero(tmp_path: Path):
    """PaddlePaddle/PaddleGAN's shape (tests/fixtures/new_gan/README.md): every edit is one a tipcgen message
    names, the run is PASSED with every proof, and eval and export load the newest iter_N_weight.pdparams of
    the run's own timestamped folder."""
    repo = copy("new_gan", tmp_path)
    # 1. the checkpoint the source does not say: asked for, with the pattern form
    asked = tipcgen("new", "--model-name", "tiny_sr", *gan_args(), cwd=repo)
    assert asked.returncode == 2 and "--checkpoint:" in asked.stderr and "'*/iter_*_weight.pdparams'" in asked.stderr
    # 2. export's required -s: named, with the option that fixes it
    refused = tipcgen("new", "--model-name", "tiny_sr", *gan_args("--checkpoint", "*/iter_*_weight.pdparams"), cwd=repo)
    assert refused.returncode == 2 and "tools/export_model.py: the required flag --inputs_size fills no TIPC slot" in refused.stderr
    args = [a.replace("tools/export_model.py -c configs/tiny_sr.yaml",
                      "tools/export_model.py -c configs/tiny_sr.yaml --inputs_size 1,1,4,4") for a in gan_args()]
    doc, text, out = run_new(repo, "tiny_sr", *args, "--checkpoint", "*/iter_*_weight.pdparams")
    train = doc["train"]
    assert train["device"] is None and train["pretrained"]["key"] == "--load" and doc["export"]["weights"]["key"] == "--load"
    assert train["epochs"]["key"] == "total_iters" and train["output_dir"]["key"] == "output_dir"
    assert train["extra"]["key"] == "dataset.train.dataroot" and doc["eval"]["extra"]["key"] == "-o dataset.test.dataroot"
    assert doc["inference"]["data"]["key"] == "-o dataset.test.dataroot"  # the infer script's own flags follow it
    assert train["norm"] == ("tools/main.py -c configs/tiny_sr.yaml -o dataset.test.dataroot=./train_data/tiny_sr/eval "
                             "snapshot_config.interval=1 validate.interval=1")  # ends in -o: no --evaluate-only
    named = "tools/inference.py loads inference.pdmodel only, and Paddle 3's export writes inference.json"
    for said in ("configs/tiny_sr.yaml: snapshot_config.interval is 5000, above the lite run's 10: set to 1 so the "
                 "training saves", "validate.interval is 5000, above the lite run's 10: set to 1 so the training evaluates",
                 "dataset.test.dataroot is data/Set14, the data the training validates on: set to the lite eval data",
                 named):
        assert said in out and said in " ".join(text.split()), said
    assert "--evaluate-only" not in train["norm"] and "evaluate-only so the training" not in out  # eval's mode
    # 3. the one source edit, as the note names it (tools/inference.py's .pdmodel line)
    infer = repo / "tools" / "inference.py"
    old = '    config = paddle_infer.Config(prefix + ".pdmodel", prefix + ".pdiparams")\n'
    assert infer.read_text().count(old) == 1
    infer.write_text(infer.read_text().replace(old, '    model = prefix + (".pdmodel" if os.path.exists(prefix + ".pdmodel") '
                                               'else ".json")\n    config = paddle_infer.Config(model, prefix + ".pdiparams")\n'))
    records = lite_run(repo, "tiny_sr")
    assert_every_proof_passed(repo, "tiny_sr")
    for kind in ("eval", "export"):
        command = next(r["command"] for r in records if r["kind"] == kind)
        assert "/TinySRModel-" in command and "/iter_10_weight.pdparams" in command, command
    proof = next(s for s in summary(repo, "tiny_sr")["steps"] if s["name"].startswith("export_params"))
    assert "(the state dict under 'generator')" in proof["note"]


@pytest.mark.paddle
@pytest.mark.chain
def test_a_paddlegan_shaped_repository_whose_export_skips_the_trained_net_fails_naming_it(tmp_path: Path):
    """PaddleGAN's export loads each net by its name (`if net_name in state_dicts`): weights saved under another
    name ('netG') are skipped without a word, and the export holds the untrained generator. Every step passes;
    the export proof fails, naming it."""
    repo = copy("new_gan", tmp_path)
    for rel, old, new in (
            ("ppgan/trainer.py", "state_dicts = {net_name: net.state_dict() for net_name, net in self.model.nets.items()}",
             'state_dicts = {"netG": net.state_dict() for net_name, net in self.model.nets.items()}'),
            ("tools/inference.py", '    config = paddle_infer.Config(prefix + ".pdmodel", prefix + ".pdiparams")\n',
             '    config = paddle_infer.Config(prefix + ".json", prefix + ".pdiparams")\n')):
        source = (repo / rel).read_text()
        assert source.count(old) == 1, old
        (repo / rel).write_text(source.replace(old, new))
    args = [a.replace("tools/export_model.py -c configs/tiny_sr.yaml",
                      "tools/export_model.py -c configs/tiny_sr.yaml --inputs_size 1,1,4,4") for a in gan_args()]
    run_new(repo, "tiny_sr", *args, "--checkpoint", "*/iter_*_weight.pdparams")
    tipcgen("init", "tipc.yaml", cwd=repo, check=True)
    run = tipcgen("run", "--mode", "lite_train_lite_infer", cwd=repo)
    assert run.returncode != 0 and "\nFAILED: " in run.stdout, run.stdout[-3000:]
    said = " ".join(run.stdout.split())
    assert "so export did not use the trained checkpoint" in said and "iter_10_weight.pdparams" in said, run.stdout[-4000:]
    steps = {s["kind"]: s["status"] for s in summary(repo, "tiny_sr")["steps"] if s["kind"] != "check"}
    assert set(steps.values()) == {"passed"}  # every step passed: only the proof saw it


@pytest.mark.parametrize(("key", "interval"), [
    ("snapshot_config.interval", True), ("validate.interval", True), ("Global.save_epoch_step", True),
    ("checkpoint.every", True), ("eval_config.freq", True),
    ("log_config.interval", False), ("log_config.visiual_interval", False), ("lr_scheduler.step_size", False),
    ("Global.epochs", False), ("interval", False), ("test.batch_size", False), ("validate.metrics", False),
    ("optimizer.interval", False), ("dataset.test.interval_ms", False),
])
def test_an_interval_key_by_its_own_name_or_its_parent(key: str, interval: bool):
    assert overrides.is_interval(key) is interval


def test_the_data_the_training_validates_on_is_set_only_when_lite_eval_data_is_shipped(tmp_path: Path):
    repo = copy("new_gan", tmp_path)
    from tipcgen.new import new

    def train_norm(data: dict[str, str], more: str = "") -> str:
        options = new.Options(model_name="g", scripts={"train": f"tools/main.py -c configs/tiny_sr.yaml{more}",
                                                       "eval": "tools/main.py -c configs/tiny_sr.yaml --evaluate-only",
                                                       "export": "tools/export_model.py -c configs/tiny_sr.yaml -s 1,1,4,4",
                                                       "infer": "tools/inference.py -c configs/tiny_sr.yaml --model_type t"},
                              devices="cpu", data=data, checkpoint="*/iter_*_weight.pdparams")
        return yaml.safe_load(new.propose(options, repo).text)["train"]["norm"]

    assert "dataset.test.dataroot=./train_data/g/eval" in train_norm({"train": "lite_data/train", "eval": "lite_data/test"})
    assert "dataset.test.dataroot" not in train_norm({"train": "lite_data/train"})  # no lite eval data: left alone
    given = train_norm({"train": "lite_data/train", "eval": "lite_data/test"}, " -o dataset.test.dataroot=mine")
    assert given.count("dataset.test.dataroot=") == 1 and "dataset.test.dataroot=mine" in given  # the user's stays


def test_a_flag_the_eval_command_passes_to_the_same_script_is_its_mode_not_a_train_edit():
    body = '''
        p.add_argument("--evaluate-only", action="store_true", default=False)
        a = p.parse_args()
        if a.evaluate_only:
            trainer.test()
    '''
    train = Script("train", "train.py", (), [])
    same = {"train": train, "eval": Script("eval", "train.py", ("--evaluate-only",), [])}
    other = {"train": train, "eval": Script("eval", "eval.py", ("--evaluate-only",), [])}
    readings = {"train.py": reading(body)}
    assert lite.edits(Path("."), same, readings, {}, 1, False, None) == []
    assert lite.edits(Path("."), other, readings, {}, 1, False, None) == []  # `only`: a mode by its name too
    gated = {"train.py": reading(body.replace("evaluate-only", "do-eval").replace("evaluate_only", "do_eval"))}
    assert [e.flag for e in lite.edits(Path("."), other, gated, {}, 1, False, None)] == ["--do-eval"]


# ---------------------------------------------------------------- PaddleClas-shaped: -o append, a deploy config

def cls_args(*more: str) -> tuple[str, ...]:
    config = "-c ppcls/configs/TinyNet.yaml"
    return ("--train", f"tools/train.py {config}", "--eval", f"tools/eval.py {config}", "--export",
            f"tools/export_model.py {config}", "--infer", "deploy/python/predict_cls.py -c deploy/configs/inference_cls.yaml",
            "--train-data", "lite_data", "--eval-data", "lite_data", "--infer-data", "lite_data/images", "--devices", "cpu",
            *more)


@pytest.mark.paddle
@pytest.mark.chain
def test_a_paddleclas_shaped_repository_from_zero(tmp_path: Path):
    """PaddlePaddle/PaddleClas's shape (tests/fixtures/new_cls/README.md): the -o (append) parser found in the
    package module the script imports, every slot a config key (the inference script's from its own deploy
    config), the label lists the lite data ships, the eval data the training validates on, export kept off the
    config's GPU; each edit left is one a message names."""
    repo = copy("new_cls", tmp_path)
    asked = tipcgen("new", "--model-name", "tinynet", *cls_args(), cwd=repo)
    assert asked.returncode == 2 and "--checkpoint:" in asked.stderr  # <Arch.name>/latest: not in the source
    doc, text, out = run_new(repo, "tinynet", *cls_args("--checkpoint", "TinyNet/latest"))
    keys = {fld: doc[fld.split(".")[0]][fld.split(".")[1]]["key"] for fld in (
        "train.device", "train.epochs", "train.output_dir", "train.batch_size", "train.pretrained", "train.extra",
        "eval.extra", "export.weights", "export.output_dir", "inference.model_dir", "inference.data", "inference.use_gpu",
        "inference.enable_mkldnn", "inference.cpu_threads")}
    assert keys == {"train.device": "-o Global.device", "train.epochs": "-o Global.epochs",
                    "train.output_dir": "-o Global.output_dir", "train.batch_size": "-o DataLoader.Train.sampler.batch_size",
                    "train.pretrained": "-o Global.pretrained_model", "train.extra": "-o DataLoader.Train.dataset.image_root",
                    "eval.extra": "-o DataLoader.Eval.dataset.image_root", "export.weights": "-o Global.pretrained_model",
                    "export.output_dir": "-o Global.save_inference_dir", "inference.model_dir": "-o Global.inference_model_dir",
                    "inference.data": "-o Global.infer_imgs", "inference.use_gpu": "-o Global.use_gpu",
                    "inference.enable_mkldnn": "-o Global.enable_mkldnn", "inference.cpu_threads": "-o Global.cpu_num_threads"}
    assert doc["inference"]["use_gpu"]["value"] == [False]  # a true/false key: never 'cpu' (truthy in YAML)
    assert doc["export"]["norm"] == "tools/export_model.py -c ppcls/configs/TinyNet.yaml -o Global.device=cpu"
    assert doc["train"]["norm"] == (
        "tools/train.py -c ppcls/configs/TinyNet.yaml -o DataLoader.Train.dataset.cls_label_path=./train_data/tinynet/"
        "train/train_list.txt -o DataLoader.Eval.dataset.image_root=./train_data/tinynet/eval "
        "-o DataLoader.Eval.dataset.cls_label_path=./train_data/tinynet/eval/val_list.txt")
    download = ("ppcls/configs/TinyNet.yaml: Arch.pretrained is true: it may download pretrained weights at start-up "
                "(offline the step fails): add `-o Arch.pretrained=False` to the train command in tipc.yaml")
    pdmodel = ("deploy/python/predict_cls.py loads inference.pdmodel only, and Paddle 3's export writes inference.json: "
               "make it load inference.json when there is no .pdmodel (deploy/python/predict_cls.py:16)")
    for said in (download, pdmodel, "Global.device is gpu and the runner passes export no device: set to cpu",
                 "each key passed as `-o KEY=VALUE` (action='append')"):
        assert said in out and said in " ".join(text.split()), said
    # the two edits, as the notes name them
    edited = text.replace("  norm: tools/train.py -c ppcls/configs/TinyNet.yaml -o ",
                          "  norm: tools/train.py -c ppcls/configs/TinyNet.yaml -o Arch.pretrained=False -o ")
    assert edited != text
    (repo / "tipc.yaml").write_text(edited)
    predict = repo / "deploy" / "python" / "predict_cls.py"
    old = 'inference.Config(os.path.join(model_dir, "inference.pdmodel"), '
    assert predict.read_text().count(old) == 1 and 'os.path.join(model_dir, "inference.pdmodel")' in predict.read_text().splitlines()[15]
    predict.write_text(predict.read_text().replace(old, 'inference.Config(os.path.join(model_dir, "inference.json"), '))
    records = lite_run(repo, "tinynet")
    assert_every_proof_passed(repo, "tinynet")
    evaluation = next(r["command"] for r in records if r["kind"] == "eval")
    assert "/TinyNet/latest -o Global.device=cpu -o DataLoader.Eval.dataset.image_root=" in evaluation, evaluation
    assert sum(1 for r in records if r["kind"] == "infer" and r["status"] == "passed") == 4


def test_export_is_kept_off_a_config_gpu_only_where_the_config_says_gpu(tmp_path: Path):
    from tipcgen.new import new

    repo = copy("new_cls", tmp_path)
    options = new.Options(model_name="t", scripts={role: given for role, given in zip(
        ("train", "eval", "export", "infer"), cls_args()[1:8:2])}, devices="cpu", checkpoint="TinyNet/latest",
        data={"train": "lite_data", "eval": "lite_data", "infer": "lite_data/images"})
    assert "Global.device=cpu" in yaml.safe_load(new.propose(options, repo).text)["export"]["norm"]
    config = repo / "ppcls" / "configs" / "TinyNet.yaml"
    config.write_text(config.read_text().replace("  device: gpu\n", "  device: cpu\n"))
    assert "Global.device" not in yaml.safe_load(new.propose(options, repo).text)["export"]["norm"]


@pytest.mark.paddle
@pytest.mark.chain
def test_a_paddleclas_shaped_repository_whose_export_ignores_the_weights_fails_naming_it(tmp_path: Path):
    """The engine loads Global.pretrained_model in train and eval modes only: the export holds the untrained net.
    Every step passes; the export proof fails, naming the checkpoint it should have held."""
    repo = copy("new_cls", tmp_path)
    engine = repo / "ppcls" / "engine.py"
    old = '        if g.get("pretrained_model"):\n'
    assert engine.read_text().count(old) == 1
    engine.write_text(engine.read_text().replace(old, '        if g.get("pretrained_model") and mode != "export":\n'))
    predict = repo / "deploy" / "python" / "predict_cls.py"
    predict.write_text(predict.read_text().replace('os.path.join(model_dir, "inference.pdmodel")',
                                                   'os.path.join(model_dir, "inference.json")'))
    _, text, _ = run_new(repo, "tinynet", *cls_args("--checkpoint", "TinyNet/latest"))
    (repo / "tipc.yaml").write_text(text.replace("  norm: tools/train.py -c ppcls/configs/TinyNet.yaml -o ",
                                                 "  norm: tools/train.py -c ppcls/configs/TinyNet.yaml -o Arch.pretrained=False -o "))
    tipcgen("init", "tipc.yaml", cwd=repo, check=True)
    run = tipcgen("run", "--mode", "lite_train_lite_infer", cwd=repo)
    assert run.returncode != 0 and "\nFAILED: " in run.stdout, run.stdout[-3000:]
    said = " ".join(run.stdout.split())
    assert "so export did not use the trained checkpoint" in said and "TinyNet/latest.pdparams" in said, run.stdout[-4000:]


_FIELDS = ("train.device", "train.output_dir", "train.epochs", "train.batch_size", "train.autocast", "train.extra")


@settings(max_examples=fuzz_examples(200), deadline=None)
@given(st.dictionaries(st.sampled_from(_FIELDS), st.sampled_from(["--opts a.b", "--opts c", "--flag", None]), max_size=6),
       st.dictionaries(st.sampled_from(_FIELDS), st.sampled_from(["always", "sometimes", ""]), max_size=6),
       st.lists(st.tuples(st.sampled_from(["x.y", "z"]), st.sampled_from(["1", ""])), max_size=3))
def test_one_run_of_a_nargs_opts_whatever_the_fields(chosen, how, fixed):
    """However the fields are keyed and passed: at most one `--opts` field stays, it is passed in every mode when
    it carries fixed keys, and every fixed key is placed once (in its key or at the end of the command)."""
    scripts = {"train": Script("train", "t.py", ("-c", "c.yml"), [])}
    ov = overrides.Overrides("--opts", False, "c.yml", single=True, fixed=list(fixed))
    chosen = dict(chosen)
    overrides.place_single(scripts, {"train": ov}, chosen, {"train": _FIELDS}, lambda fld: how.get(fld, ""))
    kept = [f for f in _FIELDS if f not in ("train.device",) and (chosen.get(f) or "").startswith("--opts ")
            and how.get(f)]
    assert len(kept) <= 1
    placed = " ".join([*(chosen[f] for f in kept), *scripts["train"].args])
    for key, value in fixed:
        assert placed.count(f"{key}={value}") >= 1
    if fixed and kept:
        assert how[kept[0]] == "always"
