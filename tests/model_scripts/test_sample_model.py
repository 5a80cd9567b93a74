"""Real (no mocks) tests of the bert-sst2 sample model: vocab -> train -> eval -> export -> infer.

The vocab, train, eval and export results are those of the session's lite run (`sample_lite_run`
in conftest.py, shared with test_chain.py and others); the rest runs the scripts as subprocesses in
a temporary directory. Needs paddlepaddle + paddlenlp; skipped when paddle is not installed.
"""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

if importlib.util.find_spec("paddle") is None:  # conftest marks these tests paddle and skips them without it
    pytest.skip("paddle is not installed", allow_module_level=True)


REPO = str(ROOT)
SAMPLE = os.path.join(REPO, "sample_models", "bert-sst2")
LITE_TRAIN = os.path.join(SAMPLE, "data", "lite_train.tsv")
LITE_DEV = os.path.join(SAMPLE, "data", "lite_dev.tsv")
SST2_DEV = os.environ.get("SST2_DEV_TSV", os.path.join(os.path.dirname(REPO), "shared", "data", "sst2", "dev.tsv"))
if not os.path.isfile(SST2_DEV):
    SST2_DEV = "/work/shared/data/sst2/dev.tsv"

TRAIN_FIELDS = ("loss", "avg_reader_cost", "avg_batch_cost", "avg_samples", "avg_ips")
RESULT_RE = re.compile(r"^sst2_(\d+)\t(\{.*\})$")


def _load(name, filename):
    spec = importlib.util.spec_from_file_location(name, os.path.join(SAMPLE, filename))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


common = _load("bert_sst2_common", "common.py")
tokenizer_mod = _load("bert_sst2_tokenizer", "tokenizer.py")


def run(script, *flags, cwd, timeout=300, **extra_env):
    env = dict(os.environ, GLOG_minloglevel="2", PYTHONWARNINGS="ignore", **extra_env)
    return subprocess.run(
        [sys.executable, os.path.join(SAMPLE, script)] + list(flags),
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
    )


def ok(proc):
    assert proc.returncode == 0, "exit %d\nstdout:\n%s\nstderr:\n%s" % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc


def rows(path):
    return [line.rstrip("\n").split("\t", 1) for line in open(path, encoding="utf-8")][1:]


@pytest.fixture(scope="module")
def chain(sample_lite_run, tmp_path_factory):
    """The session's lite run (conftest.py: prepare.sh, then train, eval, export through the generated
    runner), read only: its data (train_data/bert_sst2/{train,dev,infer,vocab}), the train step's
    checkpoint and exported model, and the logs of the vocab, train and eval commands. `root` is a
    scratch folder of this module for what the tests write."""
    run_dir = sample_lite_run / "test_tipc" / "output" / "bert_sst2" / "lite_train_lite_infer"
    records = [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines() if line.strip()]
    steps = {r["kind"]: r for r in records if r["status"] == "passed" and r["kind"] in ("train", "eval")}
    out = sample_lite_run / Path(steps["train"]["log"]).with_suffix("")  # the train step's output folder
    c = {"root": tmp_path_factory.mktemp("bert_sst2"), "data": sample_lite_run / "train_data" / "bert_sst2", "out": out,
         "ckpt": out / "checkpoint", "train_command": steps["train"]["command"]}
    c["vocab_log"] = (run_dir / "prepare.log").read_text(encoding="utf-8")
    c["train_log"], c["eval_log"] = [(sample_lite_run / steps[k]["log"]).read_text(encoding="utf-8")
                                     for k in ("train", "eval")]
    return c


@pytest.fixture(scope="module")
def dygraph_logits(chain):
    """Logits of the trained checkpoint in dygraph, one example at a time (no padding), on paddlenlp itself:
    its BertForSequenceClassification with the checkpoint's weights, its BertTokenizer. The sample's own
    model and tokenizer (modeling.py, tokenizer.py) wrote the checkpoint and the export's reference results."""
    import numpy as np
    import paddle
    from paddlenlp.transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    paddle.set_device("cpu")
    config = BertConfig(**json.loads((chain["ckpt"] / "config.json").read_text()))
    model = BertForSequenceClassification(config)
    missing, unexpected = model.set_state_dict(paddle.load(str(chain["ckpt"] / "model_state.pdparams")))
    assert not missing and not unexpected, (missing, unexpected)
    model.eval()
    tok = BertTokenizer(str(chain["ckpt"] / "vocab.txt"))
    out = []
    with paddle.no_grad():
        for _, sentence in rows(chain["data"] / "infer.tsv"):
            ids = paddle.to_tensor([tok(sentence, max_length=64, truncation=True)["input_ids"]])
            out.append(model(ids, token_type_ids=paddle.zeros_like(ids)).numpy()[0])
    return np.asarray(out, dtype="float32")


# ------------------------------------------------------------------ vocab / tokenizer
def test_build_vocab(chain, tmp_path):
    vocab = [line.rstrip("\n") for line in open(chain["data"] / "vocab.txt", encoding="utf-8")]
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert len(vocab) == len(set(vocab))
    words = set()
    for _, s in rows(chain["data"] / "train.tsv"):  # prepare.sh builds it from the train rows
        words.update(tokenizer_mod.basic_tokenize(s))
    assert set(vocab[5:]) == words  # small input: default min_freq 1 keeps every word
    assert "min_freq=1" in chain["vocab_log"]
    both = tmp_path / "both.txt"  # several inputs, as `--input A` and `--input=B`
    ok(run("build_vocab.py", "--input", LITE_TRAIN, "--input=%s" % LITE_DEV, "--output", str(both), cwd=tmp_path))
    union = {w for path in (LITE_TRAIN, LITE_DEV) for _, s in rows(path) for w in tokenizer_mod.basic_tokenize(s)}
    assert set(both.read_text(encoding="utf-8").splitlines()[5:]) == union and union > words
    ok(run("build_vocab.py", "--input", LITE_TRAIN, "--output", str(tmp_path / "v2.txt"), "--min_freq", "2", cwd=tmp_path))
    v2 = [line.rstrip("\n") for line in open(tmp_path / "v2.txt", encoding="utf-8")]
    assert v2[:5] == vocab[:5] and "the" in v2 and 5 < len(v2) < len(vocab)


def _tokenizer_cases():
    sentences = [s for path in (LITE_TRAIN, LITE_DEV) for _, s in rows(path)]
    if os.path.isfile(SST2_DEV):
        sentences += [s for _, s in rows(SST2_DEV)[:400]]
    sentences += [
        "The FILM is Good[MASK]x [CLS]  ,. [cls] [UNK]",
        "Ünïcode ΣΑΣ café naïve — “quoted” ½ price $5 €5 ©2024 ™ ± 中文字 a\u00adb x\u200by",
        "x\x00y\ufffdz \t tab\r\nnewline",
        "",
        "a" * 150,
        "unbelievably overlong sentence " * 20,
    ]
    return sentences


def test_tokenizer_matches_paddlenlp(tmp_path):
    from paddlenlp.transformers import BertTokenizer as RefTokenizer

    sentences = _tokenizer_cases()
    words = {}
    for s in sentences:
        for w in tokenizer_mod.basic_tokenize(s):
            words[w] = words.get(w, 0) + 1
    # drop every 4th word and add pieces, so that WordPiece really splits words
    kept = [w for i, w in enumerate(sorted(words)) if i % 4 and w not in tokenizer_mod.SPECIAL_TOKENS]
    pieces = [c for c in "abcdefghijklmnopqrstuvwxyz"] + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"]
    pieces += ["##s", "##ed", "##ing", "##ly", "##er", "##est", "##ness", "un", "re"]
    vocab = tokenizer_mod.SPECIAL_TOKENS + sorted(set(kept + pieces))
    vfile = tmp_path / "vocab.txt"
    vfile.write_text("".join(t + "\n" for t in vocab), encoding="utf-8")
    ref = RefTokenizer(str(vfile))
    mine = tokenizer_mod.BertTokenizer(str(vfile))
    assert len(sentences) > 100
    n_pieces = 0
    for max_len in (64, 8):
        for s in sentences:
            r = ref(s, max_length=max_len, truncation=True)
            ids, types = mine.encode(s, max_len)
            assert ids == r["input_ids"], s
            assert types == r["token_type_ids"], s
            n_pieces += sum(1 for i in ids if vocab[i].startswith("##"))
    assert n_pieces > 50  # the comparison did exercise WordPiece continuation pieces
    assert mine.tokenize("Unbelievably GOOD!") == ref.tokenize("Unbelievably GOOD!")


# ------------------------------------------------------------------ train / eval / export
def test_the_sample_bert_is_paddlenlps_and_no_script_imports_paddlenlp(chain, tmp_path):
    """modeling.py against paddlenlp 2.8's BertForSequenceClassification: one seed gives the same parameters
    (names, order, values), the same logits in eval mode and, with one dropout seed, in train mode; a
    config.json as paddlenlp writes it (all of BertConfig.to_dict()) loads, and the sample's config.json
    loads in paddlenlp (dygraph_logits). eval.py runs without importing paddlenlp (train.py and
    export_model.py import the same modules: common, modeling, tokenizer)."""
    import numpy as np
    import paddle
    from paddlenlp.transformers import BertConfig, BertForSequenceClassification

    modeling = _load("bert_sst2_modeling", "modeling.py")
    paddle.set_device("cpu")
    ref_config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=32, type_vocab_size=2, pad_token_id=0, id2label={0: "neg", 1: "pos"})
    paddle.seed(3)
    ref = BertForSequenceClassification(ref_config)
    paddle.seed(3)
    mine = modeling.BertForSequenceClassification(modeling.BertConfig(**ref_config.to_dict()))
    ref_state, mine_state = ref.state_dict(), mine.state_dict()
    assert list(ref_state) == list(mine_state) and len(ref_state) > 20
    for name, value in ref_state.items():
        np.testing.assert_array_equal(value.numpy(), mine_state[name].numpy(), err_msg=name)
    ids = paddle.to_tensor([[2, 7, 9, 11, 3, 0, 0], [2, 5, 6, 7, 8, 9, 3]])  # [PAD] is 0: masked
    for train in (False, True):
        ref.train() if train else ref.eval()
        mine.train() if train else mine.eval()
        paddle.seed(11)
        expected = ref(ids, token_type_ids=paddle.zeros_like(ids)).numpy()
        paddle.seed(11)
        np.testing.assert_array_equal(mine(ids, token_type_ids=paddle.zeros_like(ids)).numpy(), expected)
    assert float(np.abs(expected).max()) > 0
    proc = ok(run("eval.py", "--init_from_ckpt=%s" % chain["ckpt"], "--data_file=%s" % (chain["data"] / "dev.tsv"),
                  cwd=tmp_path, PYTHONPROFILEIMPORTTIME="1"))
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "modeling" in imported and "paddle.nn" in imported
    assert not any(m == "paddlenlp" or m.startswith("paddlenlp.") for m in imported)
    assert re.search(r"^accuracy: [0-9.]+ \(\d+/16\)$", proc.stdout, re.M)


def test_train_log_and_checkpoint(chain):
    log = (chain["out"] / "train.log").read_text(encoding="utf-8")
    step_lines = [line for line in log.splitlines() if "global_step:" in line]
    assert len(step_lines) >= 2
    for line in step_lines:
        for field in TRAIN_FIELDS:
            assert re.search(r"\b%s: [0-9.]+" % field, line), (field, line)
        assert re.match(r"epoch: \d+, global_step: \d+, loss: ", line)
    epochs = int(re.search(r"--epochs=(\d+)", chain["train_command"]).group(1))
    batch = int(re.search(r"--batch_size=(\d+)", chain["train_command"]).group(1))
    total = epochs * -(-len(rows(chain["data"] / "train.tsv")) // batch)  # 64 rows / 8 x 10 epochs = 80
    assert "global_step: %d," % total in step_lines[-1]
    assert re.search(r"^train done: steps=%d, seconds=[0-9.]+$" % total, log.splitlines()[-1])
    assert chain["train_log"].strip().splitlines()[-1] == log.splitlines()[-1]  # stdout ends as train.log
    for name in ("model_state.pdparams", "config.json", "vocab.txt", "train_meta.json"):
        assert (chain["ckpt"] / name).is_file(), name
    assert (chain["ckpt"] / "vocab.txt").read_bytes() == (chain["data"] / "vocab.txt").read_bytes()
    meta = json.loads((chain["ckpt"] / "train_meta.json").read_text())
    assert meta["max_seq_length"] == 64 and meta["global_step"] == total and meta["precision"] == "fp32"
    losses = [float(re.search(r"loss: ([0-9.]+)", line).group(1)) for line in step_lines]
    assert losses[-1] < losses[0]  # it learned something on 64 rows


def test_eval(chain):
    m = re.search(r"^accuracy: (0\.\d{4}|1\.0000) \((\d+)/16\)$", chain["eval_log"], re.M)
    assert m, chain["eval_log"]
    res = json.loads((chain["ckpt"] / "eval_result.json").read_text())
    assert res["total"] == 16 and res["correct"] == int(m.group(2))
    assert abs(res["accuracy"] - int(m.group(2)) / 16) < 1e-9


def test_export(chain):
    out = chain["out"]
    assert (out / "inference.json").is_file() and (out / "inference.pdiparams").is_file()
    assert (out / "vocab.txt").read_bytes() == (chain["ckpt"] / "vocab.txt").read_bytes()
    cfg = json.loads((out / "infer_cfg.json").read_text())
    assert cfg["max_seq_length"] == 64 and cfg["labels"] == ["negative", "positive"]


def test_export_reference_results(chain, dygraph_logits):
    import numpy as np

    ref = _parse_results((chain["out"] / "reference_results.txt").read_text(encoding="utf-8"))
    assert sorted(ref) == list(range(16))
    got = np.asarray([ref[i]["logits"] for i in range(16)], dtype="float32")
    np.testing.assert_allclose(got, dygraph_logits, rtol=0, atol=1e-5)
    assert [ref[i]["label"] for i in range(16)] == [int(np.argmax(r)) for r in dygraph_logits]


# ------------------------------------------------------------------ inference
def _parse_results(stdout):
    res = {}
    for line in stdout.splitlines():
        m = RESULT_RE.match(line)
        if m:
            res[int(m.group(1))] = json.loads(m.group(2))
    return res


def _conf(stdout, key):
    m = re.search(r"INFO:  %s: (\S+)$" % re.escape(key), stdout, re.M)
    return m.group(1) if m else None


@pytest.mark.parametrize("mkldnn,threads,batch", [("True", 2, 1), ("False", 1, 4)])
def test_infer_matches_dygraph(chain, dygraph_logits, mkldnn, threads, batch):
    import numpy as np

    root, out = chain["root"], chain["out"]
    npy = root / ("logits_%s.npy" % mkldnn)
    logfile = root / "logs" / ("infer_%s.log" % mkldnn)
    p = ok(run("infer.py", "--model_dir=%s" % out, "--use_gpu=False", "--enable_mkldnn=%s" % mkldnn,
               "--cpu_threads=%d" % threads, "--batch_size=%d" % batch, "--use_tensorrt=False", "--precision=fp32",
               "--benchmark=True", "--data_file=%s" % (chain["data"] / "infer.tsv"),
               "--output_file=%s" % npy, "--save_log_path=%s" % logfile, cwd=root))
    res = _parse_results(p.stdout)
    assert sorted(res) == list(range(16))
    logits = np.load(npy)
    assert logits.shape == (16, 2) and logits.dtype == np.float32
    np.testing.assert_allclose(logits, dygraph_logits, rtol=0, atol=1e-5)
    assert float(np.abs(dygraph_logits[:, 0] - dygraph_logits[:, 1]).std()) > 1e-3  # not a constant model
    for n, r in res.items():
        assert r["label"] == int(np.argmax(logits[n]))
        np.testing.assert_allclose(r["logits"], logits[n], atol=2e-6)
    labels = [int(label) for label, _ in rows(chain["data"] / "infer.tsv")]
    correct = sum(int(res[i]["label"] == labels[i]) for i in range(16))
    assert re.search(r"^accuracy: [0-9.]+ \(%d/16\)$" % correct, p.stdout, re.M)
    # mkldnn really on/off: Config.mkldnn_enabled() as printed in Conf info
    assert _conf(p.stdout, "enable_mkldnn") == mkldnn
    assert "enable_mkldnn=%s" % mkldnn in p.stdout
    assert _conf(p.stdout, "cpu_math_library_num_threads") == str(threads)
    assert _conf(p.stdout, "batch_size") == str(batch)
    assert _conf(p.stdout, "data_num") == "16"
    assert _conf(p.stdout, "input_shape") == "dynamic"
    assert re.search(r"cpu_rss\(MB\): [0-9.]+, ", p.stdout)
    assert re.search(r"total time spent\(s\): [0-9.]+$", p.stdout, re.M)
    assert re.search(r"preprocess_time\(ms\): [0-9.]+, inference_time\(ms\): [0-9.]+, postprocess_time\(ms\): [0-9.]+$",
                     p.stdout, re.M)
    assert logfile.read_text(encoding="utf-8").splitlines() == p.stdout.splitlines()


def test_infer_fp16_on_cpu_runs_fp32(chain):
    p = ok(run("infer.py", "--model_dir=%s" % chain["out"], "--precision=fp16", "--enable_mkldnn=True",
               "--benchmark=True", "--data_file=%s" % (chain["data"] / "infer.tsv"), cwd=chain["root"],
               PYTHONPROFILEIMPORTTIME="1"))
    imported = {line.rsplit("|", 1)[-1].strip() for line in p.stderr.splitlines() if line.startswith("import time:")}
    assert "paddle.inference" in imported  # the predictor API, not only paddle's top package
    assert not any(m == "paddlenlp" or m.startswith("paddlenlp.") for m in imported)  # infer.py stays light
    assert "--precision fp16 requested; CPU inference runs in fp32" in p.stdout
    assert _conf(p.stdout, "precision") == "fp32"
    assert len(_parse_results(p.stdout)) == 16


def test_infer_onnx(chain, dygraph_logits):
    import numpy as np

    pytest.importorskip("onnxruntime")
    pytest.importorskip("paddle2onnx")
    out = chain["out"]
    onnx_dir = chain["root"] / "onnx_model"
    onnx_dir.mkdir(exist_ok=True)
    for name in ("vocab.txt", "infer_cfg.json"):
        shutil.copyfile(out / name, onnx_dir / name)
    conv = subprocess.run(
        [sys.executable, "-m", "paddle2onnx.command", "--model_dir", str(out), "--model_filename", "inference.json",
         "--params_filename", "inference.pdiparams", "--save_file", str(onnx_dir / "model.onnx"),
         "--optimize_tool", "None"],  # the default optimizer pip-installs packages at run time
        capture_output=True, text=True, timeout=300, cwd=chain["root"])
    assert conv.returncode == 0 and (onnx_dir / "model.onnx").is_file(), conv.stdout + conv.stderr
    npy = chain["root"] / "logits_onnx.npy"
    p = ok(run("infer.py", "--model_dir=%s" % onnx_dir, "--use_onnx=True", "--batch_size=3",
               "--data_file=%s" % (chain["data"] / "infer.tsv"), "--output_file=%s" % npy, cwd=chain["root"]))
    assert len(_parse_results(p.stdout)) == 16
    np.testing.assert_allclose(np.load(npy), dygraph_logits, rtol=0, atol=1e-5)


# ------------------------------------------------------------------ more training paths
def test_train_two_processes_resume_amp_max_steps(chain, tmp_path):
    """paddle.distributed.launch with 2 CPU processes (gloo), resuming from the chain's
    checkpoint, auto_cast=amp (a no-op on CPU, and the log says so), stopped by --max_steps."""
    env = dict(os.environ, GLOG_minloglevel="2", PYTHONWARNINGS="ignore")
    p = subprocess.run(
        [sys.executable, "-m", "paddle.distributed.launch", "--log_level", "WARNING", "--log_dir", str(tmp_path / "log"),
         "--host", "127.0.0.1", "--nproc_per_node", "2", os.path.join(SAMPLE, "train.py"), "--device=cpu",
         "--output_dir=%s" % (tmp_path / "o"), "--epochs=1", "--batch_size=4", "--max_steps=3", "--log_interval=1",
         "--init_from_ckpt=%s" % chain["ckpt"], "--auto_cast=amp", "--data_file=%s" % (chain["data"] / "train.tsv")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    log = (tmp_path / "o" / "train.log").read_text(encoding="utf-8")
    assert "world_size=2" in log
    assert "auto_cast=amp requested; CPU has no AMP, trained in float32" in log
    assert "init_from_ckpt: %s" % chain["ckpt"] in log
    assert len([line for line in log.splitlines() if "global_step:" in line]) == 3
    assert log.splitlines()[-1].startswith("train done: steps=3, ")  # max_steps < 64 / (2 x 4)
    assert (tmp_path / "o" / "checkpoint" / "model_state.pdparams").is_file()
    meta = json.loads((tmp_path / "o" / "checkpoint" / "train_meta.json").read_text())
    assert meta["world_size"] == 2 and meta["precision"] == "fp32" and meta["global_step"] == 3
    worker1 = (tmp_path / "log" / "workerlog.1").read_text(encoding="utf-8", errors="replace")
    assert "train done: steps=3" in worker1
    assert not (tmp_path / "log" / "workerlog.1").samefile(tmp_path / "o" / "train.log")


def test_failed_training_leaves_no_train_log(chain, tmp_path):
    """Upstream runners take `cat train.log`'s exit code as the training status."""
    ckpt = tmp_path / "ckpt"
    shutil.copytree(chain["ckpt"], ckpt)
    with open(ckpt / "vocab.txt", "a", encoding="utf-8") as f:
        f.write("extraword\n")  # vocab no longer fits the model's embedding
    out = tmp_path / "o"
    out.mkdir()
    (out / "train.log").write_text("stale log of an earlier run\n")
    p = run("train.py", "--output_dir=%s" % out, "--init_from_ckpt=%s" % ckpt,
            "--data_file=%s" % (chain["data"] / "train.tsv"), cwd=tmp_path)
    _user_error(p, "vocab")
    assert not (out / "train.log").exists()
    assert "bert_sst2 train:" in (out / "train.log.partial").read_text(encoding="utf-8")


# ------------------------------------------------------------------ user errors: exit 2, no traceback
def _user_error(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    for n in needles:
        assert n in proc.stderr, (n, proc.stderr)


@pytest.mark.parametrize("script,flags", [
    ("train.py", ["--output_dir=o", "--bogus_flag=1"]),
    ("eval.py", ["--init_from_ckpt=c", "--bogus_flag=1"]),
    ("export_model.py", ["--params_path=c", "--output_path=o", "--bogus_flag=1"]),
    ("infer.py", ["--model_dir=m", "--bogus_flag=1"]),
    ("build_vocab.py", ["--input=a.tsv", "--output=v.txt", "--bogus_flag=1"]),
    ("infer.py", ["--model_dir=m", "stray_positional"]),
])
def test_unknown_flag_exit_2(script, flags, tmp_path):
    _user_error(run(script, *flags, cwd=tmp_path), "unrecognized arguments")


def test_user_errors_exit_2(chain, tmp_path):
    data = chain["data"]
    _user_error(run("infer.py", "--model_dir=%s" % chain["out"], "--enable_mkldnn=maybe", cwd=tmp_path), "--enable_mkldnn")
    _user_error(run("train.py", "--output_dir=o", "--batch_size=0", cwd=tmp_path), "--batch_size")
    _user_error(run("train.py", "--output_dir=o", "--data_file=missing.tsv", cwd=tmp_path), "--data_file", "missing.tsv")
    _user_error(run("eval.py", "--init_from_ckpt=no_ckpt", "--data_file=%s" % (data / "dev.tsv"), cwd=tmp_path),
                "--init_from_ckpt", "no_ckpt")
    _user_error(run("export_model.py", "--params_path=%s" % tmp_path, "--output_path=o", cwd=tmp_path),
                "--params_path", "model_state.pdparams")
    _user_error(run("infer.py", "--model_dir=%s" % chain["out"], "--data_file=nothing.tsv", cwd=tmp_path),
                "--data_file", "nothing.tsv")
    _user_error(run("infer.py", "--model_dir=%s" % tmp_path, "--data_file=%s" % (data / "dev.tsv"), cwd=tmp_path),
                "--model_dir")
    _user_error(run("infer.py", "--model_dir=%s" % chain["out"], "--use_onnx=True", cwd=tmp_path), "model.onnx")
    bad = tmp_path / "bad.tsv"
    bad.write_text("label\tsentence\n1\tfine .\n7\tnot a label .\n", encoding="utf-8")
    _user_error(run("train.py", "--output_dir=o", "--data_file=%s" % bad, "--vocab_file=%s" % (data / "vocab.txt"),
                    cwd=tmp_path), "line 3", "label must be 0 or 1")
    _user_error(run("build_vocab.py", "--input=%s" % bad, "--output=v.txt", cwd=tmp_path), "line 3")


def test_gpu_requested_on_cpu_build(chain, tmp_path):
    import paddle

    if paddle.is_compiled_with_cuda():
        pytest.skip("checks the CPU-only build's GPU refusal")
    _user_error(run("infer.py", "--model_dir=%s" % chain["out"], "--use_gpu=True",
                    "--data_file=%s" % (chain["data"] / "infer.tsv"), cwd=tmp_path), "--use_gpu True", "CUDA")
    _user_error(run("train.py", "--device=gpu", "--output_dir=o", "--data_file=%s" % (chain["data"] / "train.tsv"),
                    cwd=tmp_path), "--device gpu", "CUDA")


def test_tsv_loader_header_and_layouts(tmp_path):
    f = tmp_path / "a.tsv"
    f.write_text("label\tcontent\n0\tbad .\n1\tgood .\n", encoding="utf-8")
    assert common.load_tsv(str(f)) == (["bad .", "good ."], [0, 1])
    f.write_text("1\tno header .\n0\tstill none .\n", encoding="utf-8")
    assert common.load_tsv(str(f)) == (["no header .", "still none ."], [1, 0])
    f.write_text("just a sentence .\nanother one .\n", encoding="utf-8")
    assert common.load_tsv(str(f)) == (["just a sentence .", "another one ."], None)
    f.write_text("index\tsentence\n0\tfirst .\n5\tsecond .\n", encoding="utf-8")
    assert common.load_tsv(str(f)) == (["first .", "second ."], None)
    f.write_text("label\tsentence\r\n1\tcrlf line .\r\n", encoding="utf-8")
    assert common.load_tsv(str(f)) == (["crlf line ."], [1])
