"""`tipcgen new` reads the scripts, not only their flag names (configs/script_reading.py, new/reading.py).

The unit tests read source text with `ast` (nothing runs, no paddle); the `new` tests run `tipcgen new` on the
restore fixture (tests/fixtures/restore: a download switch, a hard-coded train.h5 made by --preprocess, a save
gated by --test_epochs, --output parsed and never read, an eval whose --num_of_layers default differs) and check
that the descriptor's notes name each edit the chain needs, with the tipc.yaml field."""
from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, tipcgen
from tipcgen.configs import script_reading
from tipcgen.configs.script_reading import read_source
from tipcgen.core.errors import TipcgenError
from tipcgen.new import new

FIXTURE = ROOT / "tests" / "fixtures" / "restore"
SCRIPTS = {"train": "train.py", "eval": "eval.py", "export": "export_model.py", "infer": "infer.py"}


def source(body: str) -> str:
    return "import argparse\np = argparse.ArgumentParser()\n" + textwrap.dedent(body)


def test_flags_the_code_reads_and_the_ones_it_never_reads():
    reading = read_source(source('''
        p.add_argument("--output", default="results")
        p.add_argument("--save-path", default="logs")
        p.add_argument("--lr", dest="learning_rate", type=float)
        opt = p.parse_args()
        print(opt.save_path, getattr(opt, "learning_rate"))
    '''))
    assert reading.unused("--output") and not reading.unused("--save-path") and not reading.unused("--lr")
    assert reading.arg("--save_path").default == "logs"


@pytest.mark.parametrize("reads", ["print(vars(a))", "run(**a.__dict__)", "print(getattr(a, name))", "p.parse_args()"])
def test_a_namespace_read_whole_or_not_at_all_says_nothing_is_unused(reads: str):
    reading = read_source(source(f'p.add_argument("--output")\np.add_argument("--x")\na = p.parse_args()\n{reads}\n'))
    assert reading.used is None and not reading.unused("--output")


def test_a_local_module_that_reads_the_flag_counts():
    (ROOT / "tests").exists()
    reading = read_source(source('p.add_argument("--output")\np.add_argument("--x")\na = p.parse_args()\nprint(a.x)\n'),
                          others={"helpers.py": "def f(args):\n    return args.output\n"})
    assert not reading.unused("--output")


def test_download_switches_and_checkpoint_flags():
    reading = read_source(source('''
        p.add_argument("--pretrained", type=str2bool, default=True, help="use the ImageNet backbone")
        p.add_argument("--use_pretrained", action="store_true")
        p.add_argument("--backbone_url", default="https://x.bcebos.com/r18.pdparams")
        p.add_argument("--pretrained_model", default=None, help="path of the pretrained model to load")
        p.add_argument("--weights", help="the checkpoint file")
    '''))
    is_switch = {a.name: script_reading.download_switch(a) for a in reading.args}
    assert is_switch == {"--pretrained": True, "--use_pretrained": True, "--backbone_url": True,
                         "--pretrained_model": False, "--weights": False}


def test_gates_and_the_data_files_a_flag_makes():
    reading = read_source(source('''
        p.add_argument("--preprocess", type=bool, default=False)
        p.add_argument("--save_interval", type=int, default=5)
        p.add_argument("--test_epochs", type=int, default=0)
        opt = p.parse_args()
        if opt.preprocess:
            prepare_data(data_path="data")
        for epoch in range(3):
            if epoch % opt.save_interval == 0:
                paddle.save(model.state_dict(), "m.pdparams")
            if opt.test_epochs:
                evaluate(model)
        h5f = h5py.File("train.h5", "r")
        np.save("stats.npy", x)
        with open("val.txt", "w") as f:
            f.write("x")
    '''))
    gates = {(g.dest, g.what, g.modulo) for g in reading.gates}
    assert gates == {("preprocess", "data preparation", False), ("save_interval", "saving", True),
                     ("test_epochs", "evaluation", False)}
    assert [name for name, _ in reading.data_files] == ["train.h5"] and "val.txt" in reading.made


def test_a_worker_count_set_in_code():
    reading = read_source(source('a = p.parse_args()\nloader = DataLoader(ds, batch_size=4, num_workers=16)\n'), "train.py")
    assert reading.workers == "num_workers=16 at train.py:4"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_reads_without_an_error(text: str):
    reading = read_source(source('p.add_argument("--a", default="x.h5")\n') + text)
    assert reading.used is None or isinstance(reading.used, frozenset)


def restore_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "restore"
    shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    return repo


def restore_options(**extra) -> new.Options:
    given = dict(model_name="restore", scripts=dict(SCRIPTS), checkpoint="net.pdparams", devices="cpu",
                 data={"train": "lite_data", "infer": "lite_data/0.txt"})
    return new.Options(**{**given, **extra})


def test_new_on_a_reproduction_repository_names_every_edit_in_its_notes(tmp_path: Path):
    repo = restore_repo(tmp_path)
    proposal = new.propose(restore_options(), repo)
    doc = yaml.safe_load(proposal.text)
    notes = "\n".join(proposal.notes)
    # The flag choice: --output is parsed and never read; --pretrained downloads a backbone.
    assert doc["train"]["output_dir"]["key"] == "--save_path"
    assert doc["export"]["weights"]["key"] == "--weights" and doc["train"]["pretrained"]["key"] == "--checkpoint"
    assert "env" not in doc  # nothing it was not asked for
    # Each edit the chain needs, with the tipc.yaml field.
    for needed in ("add `--pretrained False` to train.norm (train.py) in tipc.yaml",
                   "add `--pretrained False` to export.norm (export_model.py) in tipc.yaml",
                   "train.py reads train.h5 (dataset.py:17)",
                   "add `--preprocess True` to train.norm (train.py) in tipc.yaml",
                   "--test_epochs defaults to 0, which skips saving: set to 1 so the training saves",
                   "--num_of_layers: train.py defaults to 17, eval.py to 20",
                   "add `--num_of_layers 17` to eval.script (eval.py) in tipc.yaml"):
        assert needed in notes, needed
    # The notes are in the descriptor too, as comments, for whoever reads it later.
    assert "#   - train.py: --test_epochs defaults to 0, which skips saving: set to 1" in proposal.text
    assert doc["train"]["norm"] == "train.py --test_epochs 1"  # the edit is made, not only said
    # Who owns each flag: train.pretrained's flag is eval.py's.
    assert dict((f, s) for f, s, _ in proposal.mapping)["train.pretrained"] == "--checkpoint (eval.py)"


def test_new_with_the_edits_its_notes_name_leaves_no_note_about_them(tmp_path: Path):
    repo = restore_repo(tmp_path)
    scripts = dict(SCRIPTS, train="train.py --pretrained False --preprocess True --test_epochs 1",
                   eval="eval.py --num_of_layers 17", export="export_model.py --pretrained False")
    notes = new.propose(restore_options(scripts=scripts), repo).notes
    edits = "\n".join(n for n in notes if " passed over " not in n)  # what the choice passed over stays said
    for gone in ("--pretrained", "train.h5", "--test_epochs", "--num_of_layers"):
        assert gone not in edits, edits
    assert any("train.output_dir: --save_path (train.py) chosen, passed over --output in train.py (parsed, never read)" in n
               for n in notes)


def test_new_passes_over_a_parsed_but_unread_output_flag_and_lists_it(tmp_path: Path):
    repo = restore_repo(tmp_path)
    text = (repo / "train.py").read_text().replace('"--save_path"', '"--ckpt_folder"').replace("opt.save_path", "opt.ckpt_folder")
    (repo / "train.py").write_text(text)
    with pytest.raises(TipcgenError) as caught:
        new.propose(restore_options(), repo)
    assert "train.output_dir" in caught.value.message
    notes = new.propose(restore_options(flags={"train.output_dir": "--ckpt_folder"}), repo).notes
    assert not any("--output " in n for n in notes)
    proposal = new.propose(restore_options(flags={"train.output_dir": "--ckpt_folder"}), repo)
    assert yaml.safe_load(proposal.text)["train"]["output_dir"]["key"] == "--ckpt_folder"


def test_an_empty_slot_is_listed_with_the_candidates_seen(tmp_path: Path):
    """eval's only checkpoint-like flag is a download switch: the error lists it as seen and passed over."""
    repo = restore_repo(tmp_path)
    text = (repo / "eval.py").read_text().replace('"--checkpoint", required=True, help="path of the trained checkpoint"',
                                                  '"--pretrained", default="True", help="ImageNet backbone (downloads it)"')
    (repo / "eval.py").write_text(text.replace("args.checkpoint", "args.pretrained"))
    with pytest.raises(TipcgenError) as caught:
        new.propose(restore_options(), repo)
    assert "eval.py has no --resume" in caught.value.message  # train's --resume, found next
    assert "--pretrained in eval.py (a download switch: ImageNet backbone (downloads it))" in caught.value.message
    # a slot without any candidate near its names: the script's nearest flags, else none
    notes = "\n".join(new.propose(restore_options(scripts=dict(SCRIPTS, eval="null")), repo).notes)
    assert "train.pretrained" not in notes or "--resume" in notes


def test_new_writes_env_only_when_asked(tmp_path: Path):
    repo = restore_repo(tmp_path)
    (repo / "infer.py").write_text((repo / "infer.py").read_text().replace('"inference.json"', '"inference.pdmodel"'))
    proc = tipcgen("new", "--model-name", "restore", "--train", "train.py", "--eval", "eval.py", "--export",
                   "export_model.py", "--infer", "infer.py", "--checkpoint", "net.pdparams", "--devices", "cpu",
                   cwd=repo, check=True)
    assert "env" not in yaml.safe_load((repo / "tipc.yaml").read_text()) and "--env FLAGS_enable_pir_api=0" in proc.stdout
    # the fix named first: the line that loads .pdmodel; the flag's cost on Paddle 3.3 said with it
    said = " ".join(proc.stdout.split())
    assert "make it load inference.json when there is no .pdmodel (infer.py:" in said, proc.stdout
    assert "add it only where tipcgen doctor says the export works under it" in said
    tipcgen("new", "--model-name", "restore", "--train", "train.py", "--eval", "eval.py", "--export",
            "export_model.py", "--infer", "infer.py", "--checkpoint", "net.pdparams", "--devices", "cpu",
            "--env", "FLAGS_enable_pir_api=0", "--force", cwd=repo, check=True)
    assert yaml.safe_load((repo / "tipc.yaml").read_text())["env"] == {"FLAGS_enable_pir_api": "0"}
    bad = tipcgen("new", "--model-name", "restore", "--train", "train.py", "--env", "1X=0", cwd=repo)
    assert bad.returncode == 2 and "--env" in bad.stdout + bad.stderr


def test_inference_data_given_without_a_flag_is_noted(tmp_path: Path):
    repo = restore_repo(tmp_path)
    (repo / "infer.py").write_text((repo / "infer.py").read_text().replace('"--image_path"', '"--query"')
                                   .replace("args.image_path", "args.query"))
    notes = "\n".join(new.propose(restore_options(), repo).notes)
    assert "--infer-data lite_data/0.txt shipped is not passed" in notes and "inference.data in tipc.yaml" in notes


def test_a_refused_key_suggests_a_flag_spelt_alike_or_none():
    """import/lint/doctor's fix for a key a script refuses: --gpu_id was suggested for --pretrained (issue 35)."""
    flags = ["--gpu_id", "--save_dir", "--weights", "--batch_size", "--epochs"]
    assert script_reading.nearest_flag("--pretrained", flags) is None
    assert script_reading.nearest_flag("--batch-size", flags) == "--batch_size"
    assert script_reading.nearest_flag("--Epochs", flags) == "--epochs"


def test_a_namespace_handed_to_code_not_read_says_nothing_is_unused():
    body = 'p.add_argument("--output")\np.add_argument("--x")\nargs = p.parse_args()\nprint(args.x)\n'
    assert read_source(source(body)).unused("--output")
    assert read_source(source(body + "from ppdet import build\nbuild(args)\n")).used is None
    assert read_source(source(body + "def run(a):\n    return a.x\nrun(args)\n")).unused("--output")
    assert read_source(source(body), others={"helpers.py": None}).used is None  # a module that could not be read


def test_read_script_follows_no_link_out_of_the_repository(tmp_path: Path):
    outside = tmp_path / "outside.py"
    outside.write_text(source('p.add_argument("--secret", default="x.h5")\n'))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").symlink_to(outside)
    assert script_reading.read_script(repo, "train.py").args == ()
    (repo / "real.py").write_text(source('p.add_argument("--output")\np.add_argument("--x")\na = p.parse_args()\n'
                                         'import helpers\nprint(a.x)\n'))
    (repo / "helpers.py").symlink_to(outside)
    reading = script_reading.read_script(repo, "real.py")
    assert reading.readable and reading.used is None  # helpers.py not read: it may read --output


@pytest.mark.parametrize("spec, off", [
    ('"--pretrained", type=str2bool, default=True, help="ImageNet backbone"', "--pretrained False"),
    ('"--no-pretrained", action="store_true", help="do not download the backbone"', "--no-pretrained"),
    ('"--pretrained", action=argparse.BooleanOptionalAction, default=True', "--no-pretrained"),
    ('"--use_pretrained", action="store_false", help="download the backbone"', "--use_pretrained"),
    ('"--backbone", default="https://bj.bcebos.com/r18.pdparams"', "--backbone="),  # TIPC passes '' as 2 quotes
    ('"--pretrained", type=bool, default=True, help="download the backbone"', "--pretrained="),  # bool('False') is True
    ('"--pretrained", action="store_true", help="download the ImageNet backbone"', None),   # off by default
    ('"--pretrained_model", default=None, help="path of a checkpoint to load"', None),      # a checkpoint flag
])
def test_the_words_that_turn_a_download_off(spec: str, off):
    reading = read_source(source(f"p.add_argument({spec})\n"))
    assert script_reading.download_off(reading.args[0]) == off


def test_a_value_given_without_a_flag_and_an_epoch_flag_found_by_its_name(tmp_path: Path):
    repo = restore_repo(tmp_path)
    text = (repo / "train.py").read_text().replace('"--epochs"', '"--total_epochs"').replace("opt.epochs", "opt.total_epochs")
    (repo / "train.py").write_text(text)
    proposal = new.propose(restore_options(values={"train.autocast": "O1"}), repo)
    assert yaml.safe_load(proposal.text)["train"]["epochs"]["key"] == "--total_epochs"
    notes = "\n".join(proposal.notes)
    assert "train.epochs: --total_epochs (train.py) chosen by its name alone" in notes
    assert "--value train.autocast=... is given, but no flag fills train.autocast" in notes


def test_one_note_per_gating_flag_and_none_for_a_save_that_happens(tmp_path: Path):
    from tipcgen.configs.script_help import Script
    from tipcgen.new import reading as new_reading

    body = source('''
        p.add_argument("--eval_interval", type=int, default=0)
        p.add_argument("--log_every", type=int, default=10)
        opt = p.parse_args()
        for epoch in range(3):
            if opt.log_every and epoch % opt.log_every == 0:
                print("loss")
            if opt.eval_interval and epoch % opt.eval_interval == 0:
                evaluate(model)
                paddle.save(model.state_dict(), "best.pdparams")
    ''')
    (tmp_path / "train.py").write_text(body)
    script = Script("train", "train.py")
    notes = new_reading.notes(tmp_path, {"train": script}, {"train.py": read_source(body, "train.py")}, {}, 1)
    assert len(notes) == 1 and "saving happens only when --eval_interval says so" in notes[0]
    assert "add `--eval_interval 1` to train.norm (train.py) in tipc.yaml" in notes[0]
    given = Script("train", "train.py", ("--eval_interval", "1"))
    assert new_reading.notes(tmp_path, {"train": given}, {"train.py": read_source(body, "train.py")}, {}, 1) == []
