"""A failed step's log explained in one line naming the tipc.yaml field (tipcgen/results/explain.py).

Each rule of the table has a log shaped like the real failure (the tracebacks of Python, argparse, paddle's
DataLoader and download helpers, requests/huggingface, h5py) and a script read from source (no paddle, no
subprocess); the chain test runs the restore fixture (tests/fixtures/restore) as `tipcgen new` writes it and
reads the hint under the failed step in the terminal summary and in summary.json."""
from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, read_summary, tipcgen
from tipcgen.configs.script_reading import read_source
from tipcgen.results import explain
from tipcgen.results.explain import RULES, Known

FIXTURE = ROOT / "tests" / "fixtures" / "restore"

TRAIN = textwrap.dedent('''
    import argparse, os, urllib.request
    from paddle.io import DataLoader
    p = argparse.ArgumentParser()
    p.add_argument("--epoch_num", type=int, default=10)
    p.add_argument("--train_list", default="data/train_list.txt", help="the list of training images")
    p.add_argument("--preprocess", type=bool, default=False, help="run prepare_data or not")
    p.add_argument("--pretrained", type=str2bool, default=True, help="ImageNet backbone (downloads it)")
    p.add_argument("--num_workers", type=int, default=16)
    p.add_argument("--save_interval", type=int, default=0, help="save every N epochs")
    p.add_argument("--amp_level", choices=["O1", "O2"], default="O1")
    args = p.parse_args()
    if args.preprocess:
        prepare_data("data")
    loader = DataLoader(ds, num_workers=args.num_workers)
    for epoch in range(args.epoch_num):
        if args.save_interval and epoch % args.save_interval == 0:
            paddle.save(model.state_dict(), os.path.join("out", "model.pdparams"))
    print(args.train_list, args.pretrained)
''')
HARD_CODED_WORKERS = textwrap.dedent('''
    import argparse
    p = argparse.ArgumentParser()
    p.add_argument("--lr", type=float, default=0.1)
    args = p.parse_args()
    loader = DataLoader(ds, batch_size=8, num_workers=16, shuffle=True)
    print(args.lr)
''')


def known(source: str = TRAIN) -> Known:
    return Known(scripts={"train": "train.py", "eval": "eval.py", "export": "export_model.py"},
                 readings={"train": read_source(source, "train.py"), "eval": read_source(source, "eval.py")},
                 keys={("train", "--epoch_num"): "train.epochs", ("train", "--amp_level"): "train.autocast",
                       ("train", "--train_list"): "train.extra"},
                 checkpoint="model.pdparams")


def traceback(*last: str) -> list[str]:
    return ["Traceback (most recent call last):", '  File "train.py", line 12, in <module>', "    main()", *last]


def test_a_missing_file_names_the_field_whose_value_names_it():
    log = traceback("FileNotFoundError: [Errno 2] No such file or directory: 'data/train_list.txt'")
    hint = explain.explain(log, "train", known())
    assert "data/train_list.txt is missing" in hint and "train.extra" in hint and "tipc.yaml" in hint


def test_a_missing_file_the_code_prepares_names_the_preparation_flag():
    log = traceback("OSError: Unable to synchronously open file (unable to open file: name = 'train.h5', errno = 2, "
                    "error message = 'No such file or directory', flags = 0, o_flags = 0)")
    hint = explain.explain(log, "train", known())
    assert "train.h5 is missing" in hint and "--preprocess makes it" in hint
    assert "add `--preprocess True` to train.norm in tipc.yaml" in hint


def test_a_download_attempted_offline_names_the_switch_that_avoids_it():
    for last in (
        ["requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries "
         "exceeded with url: /bert-base/resolve/main/config.json (Caused by NewConnectionError('<urllib3.connection."
         "HTTPSConnection object>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution'))"],
        ["Downloading resnet18_pretrained.pdparams from https://paddle-hapi.bj.bcebos.com/models/resnet18.pdparams",
         "urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>"],
    ):
        hint = explain.explain(traceback(*last), "train", known())
        assert "tried to download" in hint and "--pretrained" in hint and "train.norm in tipc.yaml" in hint, hint


def test_a_download_without_a_switch_says_to_ship_the_file():
    hint = explain.explain(traceback("urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>"),
                           "train", known(HARD_CODED_WORKERS))
    assert "no flag of train.py turns it off" in hint and "data.files in tipc.yaml" in hint


def test_a_dataloader_worker_crash_names_the_loader_flag():
    for line in ("RuntimeError: DataLoader 1 workers exit unexpectedly, pids: 4242",
                 "ERROR: Unexpected segmentation fault encountered in DataLoader workers.",
                 "RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly",
                 "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm)."):
        hint = explain.explain(traceback(line), "train", known())
        assert "DataLoader worker crashed" in hint and "add `--num_workers 0` to train.norm in tipc.yaml" in hint, line
    hint = explain.explain(traceback("RuntimeError: DataLoader 1 workers exit unexpectedly, pids: 4242"), "train",
                           known(HARD_CODED_WORKERS))
    assert "num_workers=16 at train.py:6" in hint and "no flag changes it" in hint


def test_argparse_errors_name_the_descriptor_field():
    usage = "usage: train.py [-h] [--epoch_num EPOCH_NUM] [--train_list TRAIN_LIST]"
    hint = explain.explain([usage, "train.py: error: unrecognized arguments: --epochs=1"], "train",
                           Known(scripts={"train": "train.py"}, readings={"train": read_source(TRAIN, "train.py")},
                                 keys={("train", "--epochs"): "train.epochs"}))
    assert "does not accept --epochs, the key of train.epochs" in hint and "train.epochs's key in tipc.yaml" in hint
    assert "nearest flag" not in hint or "--epoch_num" in hint
    hint = explain.explain([usage, "train.py: error: the following arguments are required: -c/--config"], "train", known())
    assert "requires -c/--config" in hint and "train.norm in tipc.yaml" in hint
    hint = explain.explain([usage, "train.py: error: argument --amp_level: invalid choice: 'fp32' (choose from 'O1', 'O2')"],
                           "train", known())
    assert "refuses --amp_level" in hint and "the value of train.autocast in tipc.yaml" in hint


def test_a_nearest_flag_is_one_that_means_the_same():
    """--pretrained is not near --gpu_id (the import's old suggestion): no suggestion rather than a wrong one."""
    source = 'import argparse\np = argparse.ArgumentParser()\np.add_argument("--gpu_id")\np.add_argument("--epoch_num")\n' \
             'a = p.parse_args()\nprint(a.gpu_id, a.epoch_num)\n'
    keys = {("train", "--pretrained"): "train.pretrained", ("train", "--epoch-num"): "train.epochs"}
    base = Known(scripts={"train": "train.py"}, readings={"train": read_source(source, "train.py")}, keys=keys)
    hint = explain.explain(["train.py: error: unrecognized arguments: --pretrained=x"], "train", base)
    assert "--gpu_id" not in hint and "train.pretrained" in hint
    hint = explain.explain(["train.py: error: unrecognized arguments: --epoch-num=1"], "train", base)
    assert "nearest flag: --epoch_num" in hint


def test_a_checkpoint_train_did_not_write_names_the_flag_that_gates_saving():
    for line in ("FileNotFoundError: [Errno 2] No such file or directory: './test_tipc/output/m/lite/norm_train/model.pdparams'",
                 "ValueError: The ``path`` (./test_tipc/output/m/lite/norm_train/model.pdparams) to load model not exists."):
        hint = explain.explain(traceback(line), "export", known())
        assert "the train step wrote no model.pdparams" in hint and "--save_interval" in hint, hint
        assert "add `--save_interval 1` to train.norm in tipc.yaml" in hint
    ungated = Known(scripts={"train": "train.py"}, readings={"train": read_source(HARD_CODED_WORKERS, "train.py")},
                    checkpoint="model.pdparams")
    hint = explain.explain(traceback("FileNotFoundError: [Errno 2] No such file or directory: 'out/model.pdparams'"),
                           "eval", ungated)
    assert "check train.checkpoint in tipc.yaml" in hint


def test_a_size_limit_names_its_setting():
    for lines in (traceback("OSError: [Errno 27] File too large"), ["", "killed by signal SIGXFSZ"]):
        hint = explain.explain(lines, "train", known())
        assert "file-size limit of the shell" in hint and "ulimit -f unlimited" in hint, hint
    hint = explain.explain(["", "log over 1024 MB (killed by SIGXFSZ)"], "train", known())  # the older runner's cap
    assert "reached TIPC_MAX_LOG_MB" in hint


def test_an_unknown_failure_gets_no_hint_and_every_rule_has_a_test():
    assert explain.explain(traceback("ZeroDivisionError: division by zero"), "train", known()) == ""
    names = {rule.name for rule in RULES}
    assert names == {"size limit", "script missing", "unrecognized arguments", "required arguments", "invalid argument",
                     "worker crash", "network", "missing file", "timeout", "no checkpoint", "boolean value", "paddle.fluid", "PIR export",
                     "memory optimisation", "oneDNN", "assertion"}  # a new rule needs a test (here or below)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=300), max_size=30), st.sampled_from(["train", "eval", "export", "infer", "prepare"]))
def test_any_log_gives_one_bounded_line(lines, kind):
    hint = explain.explain(lines + ["No such file or directory: '" + "x" * 5000 + ".h5'"], kind, known())
    assert "\n" not in hint and len(hint) <= explain.MAX_HINT


def test_a_failed_chain_shows_the_hint_under_the_step_and_in_summary_json(tmp_path: Path):
    """The restore fixture as `tipcgen new` writes it: train reads train.h5, which only --preprocess makes."""
    repo = tmp_path / "restore"
    shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    tipcgen("new", "--model-name", "restore", "--train", "train.py --pretrained False", "--eval", "eval.py",
            "--export", "export_model.py", "--infer", "infer.py", "--checkpoint", "net.pdparams",
            "--train-data", "lite_data", "--devices", "cpu", cwd=repo, check=True)
    tipcgen("init", "tipc.yaml", cwd=repo, check=True)
    run = tipcgen("run", "--mode", "lite_train_lite_infer", cwd=repo)
    assert run.returncode == 1
    hint = "hint: train.h5 is missing; --preprocess makes it (prepare_data at train.py:"
    assert hint in run.stdout and "add `--preprocess True` to train.norm in tipc.yaml" in run.stdout, run.stdout[-3000:]
    summary = read_summary(repo, "restore")
    train = next(s for s in summary["steps"] if s["kind"] == "train")
    assert train["status"] == "failed" and "--preprocess True" in train["hint"]
    assert "hint: train.h5 is missing" in (repo / "test_tipc/output/restore/lite_train_lite_infer/junit.xml").read_text()
    report = tipcgen("report", cwd=repo)
    assert report.returncode == 0, report.stdout + report.stderr
    assert "hint: train.h5 is missing" in (repo / "test_tipc/output/restore/lite_train_lite_infer/report.md").read_text()
    # The edit the hint names: now train passes. tipcgen new set --test_epochs 1 itself (its default 0 saves
    # nothing); without it, as in a descriptor written by hand, train saves nothing and eval says so.
    text = (repo / "tipc.yaml").read_text()
    assert "norm: train.py --pretrained False --test_epochs 1" in text
    text = text.replace("norm: train.py --pretrained False --test_epochs 1", "norm: train.py --pretrained False --preprocess True")
    (repo / "tipc.yaml").write_text(text)
    tipcgen("init", "tipc.yaml", "--force", cwd=repo, check=True)
    run = tipcgen("run", "--mode", "lite_train_lite_infer", cwd=repo)
    # (tipcgen's check fails the training that saved nothing; eval, which found nothing, points at it)
    assert run.returncode == 1 and "hint: the train step wrote no net.pdparams: train.py saves only when --test_epochs " \
        "says so (train.py:57); add `--test_epochs 1` to train.norm in tipc.yaml" in run.stdout, run.stdout[-3000:]
    assert "hint: the train step failed, so it saved no net.pdparams: fix the training first" in run.stdout


def test_a_download_that_worked_is_not_taken_for_the_failure():
    log = ["Downloading https://paddle-hapi.bj.bcebos.com/models/resnet18.pdparams",
           "100%|##########| 44.7M/44.7M [00:03<00:00, 13.1MB/s]",
           *traceback("FileNotFoundError: [Errno 2] No such file or directory: 'data/train_list.txt'")]
    hint = explain.explain(log, "train", known())
    assert hint.startswith("data/train_list.txt is missing") and "download" not in hint


# ---------------------------------------------------------------- the rules of issue #56: each where it must fire,
# and near misses where it must not (a hint that does not apply is worse than none)

INFER_SRC = textwrap.dedent('''
    import argparse, os
    import paddle.inference as paddle_infer
    p = argparse.ArgumentParser()
    p.add_argument("--model_dir", default="out")
    p.add_argument("--enable_mkldnn", type=bool, default=False)
    p.add_argument("--val_dir", default=None)
    args = p.parse_args()
    assert args.val_dir is not None
    config = paddle_infer.Config(os.path.join(args.model_dir, "inference.pdmodel"),
                                 os.path.join(args.model_dir, "inference.pdiparams"))
    config.enable_memory_optim()
    if args.enable_mkldnn:
        config.enable_mkldnn()
''')
NLP_TRAIN = textwrap.dedent('''
    import argparse
    from paddlenlp.transformers import AutoModel
    p = argparse.ArgumentParser()
    p.add_argument("--model_name_or_path", default="bert-base-uncased")
    p.add_argument("--workers", type=int, default=4)
    args = p.parse_args()
    model = AutoModel.from_pretrained(args.model_name_or_path)
''')


def repo_known(tmp_path: Path, **extra) -> Known:
    (tmp_path / "infer.py").write_text(INFER_SRC)
    (tmp_path / "train.py").write_text(TRAIN)
    base = dict(scripts={"train": "train.py", "infer": "infer.py", "export": "export_model.py", "eval": "infer.py"},
                readings={"train": read_source(TRAIN, "train.py"), "infer": read_source(INFER_SRC, "infer.py"),
                          "eval": read_source(INFER_SRC, "infer.py")},
                keys={("infer", "--enable_mkldnn"): "inference.enable_mkldnn", ("train", "--epoch_num"): "train.epochs"},
                checkpoint="model.pdparams", root=tmp_path)
    base.update(extra)
    return Known(**base)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["Epoch [3/10] step 40/100 loss 0.5", "epoch: 2, iter: 17, loss=1.2", "loading data",
                                 "[2026-01-01] INFO: batch_id 12", "", "warming up"]), max_size=8),
       st.sampled_from(["train", "eval", "infer"]), st.integers(1, 86400))
def test_a_timeout_says_what_ran_and_how_far_it_got(log, kind, limit):
    command = "python3.10 train.py --epoch_num 10 --output_dir out"
    hint = explain.explain([*log, f"timeout after {limit} s"], kind, known(), command)
    assert f"step time limit ({limit} s)" in hint and "train.py --epoch_num 10" in hint and "run.step_timeout" in hint
    shown = [line for line in log if line.strip()]
    if not shown:
        assert "printed nothing" in hint
    else:
        assert "its last line: '" + shown[-1][:40] in hint
        if any("poch" in line for line in shown):
            assert "last seen: epoch " in hint, hint
    assert ("train.epochs" in hint) == (kind == "train")


def test_a_timeout_does_not_take_the_settings_for_progress():
    log = ["Namespace(epoch=10, batch_size=8, step=5)", "{'epoch': 10, 'iters': 100}", "loading data",
           "timeout after 600 s"]
    hint = explain.explain(log, "train", known(), "python train.py")
    assert "no epoch or iteration in its log; its last line: 'loading data'" in hint, hint
    log = ["Namespace(epoch=10)", "Epoch [2/10] iter 30/200 loss 0.4", "timeout after 600 s"]
    assert "last seen: epoch 2/10, iteration 30/200" in explain.explain(log, "train", known(), "python train.py")


def test_a_timeout_is_read_from_the_runner_s_reason_only():
    """A log that prints `timeout after 30 s` (a retry loop's message) is not the step's timeout."""
    for log in (["timeout after 30 s", "ZeroDivisionError: division by zero", "exit code 1"],
                ["socket timeout after 5 s", "exit code 1"], ["timeout after 600 seconds", "exit code 1"]):
        assert "step time limit" not in explain.explain(log, "train", known()), log


def test_a_worker_crash_with_workers_already_zero_gets_no_loader_advice():
    crash = traceback("RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly")
    for command in ("python train.py --num_workers 0", "python train.py --num_workers=0 --epoch_num 1"):
        assert "--num_workers 0" not in explain.explain(crash, "train", known(), command), command
    for command in ("python train.py --num_workers 4", "python train.py", "python train.py --num_workers=10"):
        assert "add `--num_workers 0`" in explain.explain(crash, "train", known(), command), command


def test_a_checkpoint_hint_reads_what_the_training_left(tmp_path: Path):
    folder = tmp_path / "test_tipc/output/m/lite/norm_train"
    folder.mkdir(parents=True)
    missing = traceback(f"FileNotFoundError: [Errno 2] No such file or directory: '{folder.relative_to(tmp_path)}/model.pdparams'")
    ungated = dict(readings={"train": read_source(HARD_CODED_WORKERS, "train.py")})
    # nothing saved there: not "check train.checkpoint" (it is right; the training saved nothing)
    hint = explain.explain(missing, "eval", repo_known(tmp_path, **ungated))
    assert "saved no checkpoint in its output folder (test_tipc/output/m/lite/norm_train)" in hint
    assert "check train.checkpoint" not in hint
    # another name saved: the field to change, and to what
    (folder / "epoch_1").mkdir()
    (folder / "epoch_1" / "net.pdparams").write_bytes(b"x")
    hint = explain.explain(missing, "export", repo_known(tmp_path, **ungated))
    assert "saved epoch_1/net.pdparams in its output folder, not model.pdparams: set train.checkpoint" in hint
    # the train step failed: its own hint is the one to follow
    hint = explain.explain(missing, "eval", repo_known(tmp_path, failed=frozenset({"train"}), **ungated))
    assert hint.startswith("the train step failed, so it saved no model.pdparams")
    # tipcgen's own check failed the training (its reason, the last line): the same reading, under train
    reason = (f"it wrote no checkpoint {folder.relative_to(tmp_path)}/model.pdparams (train_model_name 'model.pdparams', "
              "the descriptor's train.checkpoint), which eval and export load: check that the training saves")
    hint = explain.explain(["epoch 1 done", reason], "train", repo_known(tmp_path, **ungated))
    assert "saved epoch_1/net.pdparams in its output folder, not model.pdparams" in hint
    hint = explain.explain(["epoch 1 done", reason], "train", repo_known(tmp_path))
    assert "saved epoch_1/net.pdparams" in hint  # another name saved: that, before a gate the script has
    (folder / "epoch_1" / "net.pdparams").unlink()
    hint = explain.explain(["epoch 1 done", reason], "train", repo_known(tmp_path))
    assert "train.py saves only when --save_interval says so" in hint and "add `--save_interval 1` to train.norm" in hint
    for near in ([reason, "exit code 1"], ["epoch 1 done", reason]):  # a log line, not the reason; an eval step
        assert "saved" not in explain.explain(near, "train" if near[0] == reason else "eval", repo_known(tmp_path)), near
    (folder / "epoch_1" / "net.pdparams").write_bytes(b"x")
    # the file is there: not what failed (no hint rather than a wrong one)
    (folder / "model.pdparams").write_bytes(b"x")
    assert explain.explain(missing, "eval", repo_known(tmp_path, **ungated)) == ""


def test_a_pdmodel_the_export_did_not_write_names_the_infer_line(tmp_path: Path):
    folder = tmp_path / "out/export"
    folder.mkdir(parents=True)
    log = traceback("ValueError: The ``path`` (out/export/inference.pdmodel) to load model not exists.")
    hint = explain.explain(log, "infer", repo_known(tmp_path))
    assert "the exported model inference.pdmodel was not written" in hint  # the export wrote nothing at all
    (folder / "inference.json").write_text("{}")
    hint = explain.explain(log, "infer", repo_known(tmp_path))
    assert "the export wrote inference.json (Paddle 3's PIR format)" in hint and "(infer.py:10)" in hint
    assert "only if the export works under it" in hint
    predictor = traceback("RuntimeError: (NotFound) Cannot open file ./out/export/inference.pdmodel, please confirm "
                          "whether the file is normal.")  # Paddle 3.3.1's create_predictor, as it says it
    assert "the export wrote inference.json (Paddle 3's PIR format)" in explain.explain(predictor, "infer", repo_known(tmp_path))
    hint = explain.explain(log, "infer", repo_known(tmp_path, env={"FLAGS_enable_pir_api": "0"}))
    assert "PIR format" not in hint  # the flag is set: the export should have written .pdmodel
    hint = explain.explain(log, "infer", repo_known(tmp_path, failed=frozenset({"export"})))
    assert "PIR format" in hint  # json there: the older export's; still the format is the cause


@given(st.sampled_from(["No module named 'paddle.fluid'", "No module named 'paddle.fluid.dygraph'",
                        "AttributeError: module 'paddle' has no attribute 'fluid'",
                        "ImportError: cannot import name 'fluid' from 'paddle' (/x/site-packages/paddle/__init__.py)",
                        "ImportError: cannot import name 'layers' from 'paddle.fluid' (unknown location)"]),
       st.sampled_from([("ppdet/core/workspace.py", "ppdet/core/workspace.py:3"),
                        ("/v/lib/python3.10/site-packages/visualdl/x.py", "the installed package visualdl")]))
def test_paddle_fluid_names_the_importing_file(error, frame):
    path, shown = frame
    log = ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>', f'  File "{path}", line 3, in <module>',
           "    import paddle.fluid as fluid", ("ModuleNotFoundError: " if error.startswith("No") else "") + error]
    hint = explain.explain(log, "train", known())
    assert hint.startswith(shown) and "imports paddle.fluid, which Paddle 3 removed" in hint, hint


def test_paddle_fluid_near_misses():
    for last in ("ModuleNotFoundError: No module named 'paddle_fluid_compat'", "ModuleNotFoundError: No module named 'paddlenlp'",
                 "AttributeError: module 'paddle' has no attribute 'fluidity'"):
        assert "paddle.fluid" not in explain.explain(traceback(last), "train", known()), last


def test_boolean_value_expected_names_the_field_and_the_value():
    log = ["usage: infer.py [-h]", "infer.py: error: argument --enable_mkldnn: Boolean value expected."]
    k = Known(scripts={"infer": "infer.py"}, keys={("infer", "--enable_mkldnn"): "inference.enable_mkldnn"})
    hint = explain.explain(log, "infer", k, "python infer.py --enable_mkldnn=cpu")
    assert "wants a boolean for --enable_mkldnn" in hint and "not 'cpu'" in hint and "the value of inference.enable_mkldnn in tipc.yaml" in hint
    hint = explain.explain(["train.py: error: argument --fp16: Boolean value expected."], "train", known(), "python train.py --fp16 x")
    assert "its value in train.norm in tipc.yaml" in hint
    for near in ("train.py: error: argument --fp16: invalid int value: 'x'", "print('Boolean value expected')"):
        assert "wants a boolean" not in explain.explain([near], "train", known()), near


PIR_ERRORS = ("TypeError: sigmoid(): argument 'x' (position 0) must be Value, but got Variable",
              "TypeError: matmul(): argument 'x' (position 0) must be Value, but got Variable",
              "TypeError: sqrt(): argument 'x' (position 0) must be Value, but got None")


def test_an_export_that_fails_under_the_old_ir_says_to_drop_the_flag(tmp_path: Path):
    for error in PIR_ERRORS:
        log = traceback('  File "/x/site-packages/paddle/jit/api.py", line 900, in save', error)
        hint = explain.explain(log, "export", repo_known(tmp_path, env={"FLAGS_enable_pir_api": "0"}))
        assert "failed under FLAGS_enable_pir_api=0" in hint and "remove FLAGS_enable_pir_api from env: in tipc.yaml" in hint
        assert "make infer.py load inference.json (infer.py:10)" in hint, hint
        # near misses: the flag not set (PIR on: another cause), or not the export step
        assert "FLAGS_enable_pir_api" not in explain.explain(log, "export", repo_known(tmp_path))
        assert "FLAGS_enable_pir_api" not in explain.explain(log, "train", repo_known(tmp_path, env={"FLAGS_enable_pir_api": "0"}))
    hint = explain.explain(traceback(PIR_ERRORS[0]), "export", repo_known(tmp_path),
                           "FLAGS_enable_pir_api=0 python export_model.py")
    assert "remove FLAGS_enable_pir_api" in hint


def test_predictor_failures_of_paddle_3_name_the_line(tmp_path: Path):
    error = "ValueError: (InvalidArgument) Not find predictor_id 0 and pass_name memory_optimize_pass"  # 3.3.1's
    hint = explain.explain(traceback(error), "infer", repo_known(tmp_path))
    assert "memory_optimize_pass" in hint and "remove config.enable_memory_optim() from infer.py (infer.py:12)" in hint
    banner = ["--- Running IR pass [memory_optimize_pass]", "--- Running analysis [memory_optimize_pass]",
              *traceback("ZeroDivisionError: division by zero")]
    assert explain.explain(banner, "infer", repo_known(tmp_path)) == ""  # the pass list of a predictor that built
    assert "memory" not in explain.explain(traceback(error), "train", repo_known(tmp_path))
    onednn = "RuntimeError: (Unimplemented) ConvertPirAttribute2RuntimeAttribute not support [pir::ArrayAttribute<pir::DoubleAttribute>]"
    hint = explain.explain(traceback(onednn), "infer", repo_known(tmp_path), "python infer.py --enable_mkldnn False")
    assert "oneDNN ran although --enable_mkldnn False was passed" in hint and "config.disable_mkldnn()" in hint
    assert "type=bool reads 'False' as True" in hint and "(its enable_mkldnn() call: infer.py:14)" in hint
    hint = explain.explain(traceback(onednn), "infer", repo_known(tmp_path), "python infer.py --enable_mkldnn True")
    assert "set inference.enable_mkldnn to False in tipc.yaml" in hint
    for near in ("I0101 mkldnn_quantizer.cc:10] enabled", "W0101 onednn is used, cpu_math_library_num_threads=1"):
        assert "oneDNN" not in explain.explain([near, *traceback("KeyError: 'x'")], "infer", repo_known(tmp_path)), near


def test_a_bare_assertion_names_the_flag_it_checks(tmp_path: Path):
    log = ["Traceback (most recent call last):", '  File "infer.py", line 9, in <module>', "    assert args.val_dir is not None",
           "AssertionError"]
    hint = explain.explain(log, "eval", repo_known(tmp_path), "python infer.py --model_dir out")
    assert "check `assert args.val_dir is not None` (infer.py:9) failed" in hint and "does not pass --val_dir" in hint
    assert "add `--val_dir VALUE` to eval.script in tipc.yaml" in hint
    hint = explain.explain(log, "eval", repo_known(tmp_path), "python infer.py --val_dir /nope")
    assert "failed on --val_dir /nope" in hint
    for source in ("    assert len(batch) == 4", "    assert self.val_dir_ok", "    x = 1"):
        near = [*log[:2], source, "AssertionError"]
        assert explain.explain(near, "eval", repo_known(tmp_path)) == "", source


def test_from_pretrained_offline_says_how_to_go_on(tmp_path: Path):
    log = ["Traceback (most recent call last):", '  File "train.py", line 8, in <module>',
           "    model = AutoModel.from_pretrained(args.model_name_or_path)",
           '  File "/v/site-packages/paddlenlp/transformers/auto/modeling.py", line 500, in from_pretrained',
           "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='bj.bcebos.com', port=443): Max retries exceeded"]
    k = Known(scripts={"train": "train.py"}, readings={"train": read_source(NLP_TRAIN, "train.py")}, root=tmp_path)
    hint = explain.explain(log, "train", k)
    assert "from_pretrained(args.model_name_or_path) (train.py:8) downloads the weights" in hint
    assert "add `--model_name_or_path weights/bert-base-uncased` to train.norm in tipc.yaml" in hint, hint
    literal = [*log[:2], '    model = BertModel.from_pretrained("bert-base-chinese")', *log[3:]]
    hint = explain.explain(literal, "train", k)
    assert "from_pretrained(bert-base-chinese)" in hint and "put that path where from_pretrained names bert-base-chinese" in hint
    # no from_pretrained in the traceback: the older advice
    assert "from_pretrained" not in explain.explain([log[0], log[1], "    x()", log[-1]], "train", k)



@given(st.sampled_from(["https://paddle-imagenet-models-name.bj.bcebos.com/dygraph/" + "x" * 80 + "/ResNet50_pretrained.pdparams",
                        "https://bj.bcebos.com/v1/ai-studio-online/netdisk/train_data.tar?authorization=bce-auth-v1%2F2024",
                        "http://example.invalid/data.zip"]),
       st.sampled_from(["\x1b[0m", "'", ").", "...", "\x1b[33m failed", "]"]))
def test_a_download_url_is_shown_whole_or_by_its_host_and_file(url, after):
    """wget/curl lines with colour codes and punctuation after the URL (the prepare.sh hint of issue #56 showed
    one garbled): the hint names the host and the file, never a URL cut inside a name or an escape."""
    log = [f"--2026-01-01 10:00:00--  {url}{after}", f"wget: unable to resolve host address; urlopen error [Errno -3] for {url}{after}"]
    hint = explain.explain(log, "prepare", known())
    shown = hint.split("download (", 1)[1].split("), offline", 1)[0]
    assert "\x1b" not in hint and shown.startswith(url.split("/")[0] + "//" + url.split("/")[2])
    assert shown == url or shown.endswith("/" + url.rsplit("/", 1)[-1].split("?")[0][-60:]) or shown.endswith("/..."), shown
    assert "data.files in tipc.yaml" in hint and "--data-dir" in hint


FIXED_INTERVAL = textwrap.dedent('''
    import argparse, paddle
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=1)
    args = p.parse_args()
    for epoch in range(args.epochs):
        if epoch % 2 == 0:
            print("even epoch")
        if (epoch + 1) % 10 == 0:
            paddle.save(model.state_dict(), "out/model.pdparams")
''')


def test_a_save_at_a_fixed_interval_is_named_with_its_line(tmp_path: Path):
    missing = traceback("FileNotFoundError: [Errno 2] No such file or directory: 'out/model.pdparams'")
    hint = explain.explain(missing, "eval", Known(scripts={"train": "train.py"}, checkpoint="model.pdparams",
                                                  readings={"train": read_source(FIXED_INTERVAL, "train.py")}))
    assert "saves only at a fixed interval (every 10 at train.py:9)" in hint and "train.epochs in tipc.yaml" in hint, hint
    # near misses: a flag's interval (the gate's hint), a modulo with no save under it, an interval of 1
    for source in (TRAIN, FIXED_INTERVAL.replace("paddle.save(model.state_dict(), \"out/model.pdparams\")", "print(1)"),
                   FIXED_INTERVAL.replace("% 10", "% 1")):
        hint = explain.explain(missing, "eval", Known(scripts={"train": "train.py"}, checkpoint="model.pdparams",
                                                      readings={"train": read_source(source, "train.py")}))
        assert "fixed interval" not in hint, hint


FRAGMENTS = ["timeout after 600 s", "AssertionError", "    assert args.val_dir", '  File "infer.py", line 9, in <module>',
             "ModuleNotFoundError: No module named 'paddle.fluid'", "error: argument --x: Boolean value expected.",
             "TypeError: matmul(): argument 'x' (position 0) must be Value, but got Variable",
             "ValueError: (InvalidArgument) Not find predictor_id 0 and pass_name memory_optimize_pass",
             "RuntimeError: ConvertPirAttribute2RuntimeAttribute not support", "    m = X.from_pretrained(args.model)",
             "urlopen error [Errno -3]", "https://h.example/" + "p/" * 60 + "w.pdparams\x1b[0m",
             "No such file or directory: '../../etc/passwd.pdparams'", "No such file or directory: '/abs/out/model.pdparams'",
             "RuntimeError: (NotFound) Cannot open file ./out/inference.pdmodel, please confirm",
             "it wrote no checkpoint ../x/model.pdparams (train_model_name 'model.pdparams', ...)", "Epoch [1/2] iter 3"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=80)), max_size=25),
       st.sampled_from(["train", "eval", "export", "infer", "prepare", "check"]), st.text(max_size=120),
       st.sampled_from([{}, {"FLAGS_enable_pir_api": "0"}]))
def test_the_new_rules_on_any_mix_give_one_bounded_line_and_read_nothing_outside(tmp_path_factory, lines, kind, command, env):
    root = tmp_path_factory.mktemp("repo")
    hint = explain.explain(lines, kind, repo_known(root, env=env, failed=frozenset({"export"})), command)
    assert "\n" not in hint and len(hint) <= explain.MAX_HINT and "\x1b" not in hint
    assert "passwd" not in hint or "passwd.pdparams" in " ".join(lines)  # said only as the log said it


def test_a_gated_save_names_a_misspelt_flag_of_the_command_and_nothing_else(tmp_path: Path):
    """A parse_known_args script lets `--save_intreval 1` through and never saves: the hint names the word to
    respell. Not for an abbreviation argparse accepts (`--save_int`), nor for a flag of the script, nor for a
    word far from the gate's flag."""
    folder = tmp_path / "test_tipc/output/m/lite/norm_train"
    folder.mkdir(parents=True)
    reason = (f"it wrote no checkpoint {folder.relative_to(tmp_path)}/model.pdparams (train_model_name 'model.pdparams', "
              "the descriptor's train.checkpoint), which eval and export load: check that the training saves")
    hint = explain.explain(["epoch 1 done", reason], "train", repo_known(tmp_path),
                           "python train.py --save_intreval 1 --epoch_num 1")
    assert ("the command passes --save_intreval, which train.py does not take (parse_known_args lets it through): "
            "spell it --save_interval in train.norm in tipc.yaml") in hint, hint
    for command in ("python train.py --save_int 1 --epoch_num 1", "python train.py --save_interval 0",
                    "python train.py --lr 1 --epoch_num 1", "python train.py --output_dir=x", "python train.py '--save"):
        hint = explain.explain(["epoch 1 done", reason], "train", repo_known(tmp_path), command)
        assert "does not take" not in hint and "add `--save_interval 1` to train.norm" in hint, (command, hint)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="-_saveintrvlo=1 ", min_size=1, max_size=16), max_size=6))
def test_any_command_words_name_at_most_one_of_their_own(words):
    import shlex
    from tipcgen.results.explain import _misspelt

    command = " ".join(shlex.quote(w) for w in ["python", "train.py", *words])
    found = _misspelt("--save_interval", read_source(TRAIN, "train.py"), Known(command=command))
    assert found is None or (found in {w.split("=", 1)[0] for w in words} and found.startswith("--")
                             and found != "--save_interval")
