"""The seeds a run used (issue 28 item 6): read from the config, the train script's source (as text, never
run) and the training log; golden results from an unseeded run, and a golden mismatch after one, say so."""
from __future__ import annotations

from pathlib import Path

from tipcgen.descriptor import samples_dir
from tipcgen.results.summary import Step, Summary, write_json
from tipcgen.run import pipeline, provenance, seeds

from conftest import read_summary, tipcgen

MODE = "lite_train_lite_infer"


def test_the_train_scripts_own_seed_is_read_from_its_source(tmp_path: Path):
    (tmp_path / "train.py").write_text('raise SystemExit("never run")\nimport argparse\np = argparse.ArgumentParser()\n'
                                       'p.add_argument("-s", "--seed", type=int, default=42, help="random seed")\n'
                                       'np.random.seed(7)\npaddle.seed(args.seed)\n')
    assert seeds.script_seeds(tmp_path, "train.py -c x.yml") == {"--seed default of train.py": "42",
                                                                  "np.random.seed() in train.py": "7"}
    assert seeds.script_seeds(tmp_path, "train.py --seed=3") == {"--seed (given in the config's train.py command)": "3"}
    (tmp_path / "plain.py").write_text("import random\nrandom.shuffle([1, 2])\n")
    assert seeds.script_seeds(tmp_path, "plain.py") == {}
    config = "norm_train:train.py -c x.yml\n--seed:null\n"
    assert seeds.seeds(config, {"PYTHONHASHSEED": "0"}, tmp_path) == {
        "--seed default of train.py": "42", "np.random.seed() in train.py": "7", "PYTHONHASHSEED": "0"}


def test_the_seed_a_training_log_prints_is_recorded(stub_repo: Path):
    train = stub_repo / "stub" / "stub_train.py"
    train.write_text('print("batch_size=2, seed=1234")\n' + train.read_text())
    proc = tipcgen("run", "--mode", MODE, "-q", cwd=stub_repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = read_summary(stub_repo, mode=MODE)["provenance"]
    assert [value for key, value in record["seeds"].items() if key.startswith("seed printed in ")] == ["1234"]
    assert seeds.seeded(record) is True


def test_an_unseeded_run_says_a_second_run_may_differ(stub_repo: Path):
    proc = tipcgen("run", "--mode", MODE, "-q", cwd=stub_repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = read_summary(stub_repo, mode=MODE)["provenance"]
    assert record["seeds"] == {} and seeds.seeded(record) is False
    assert dict(provenance.rows(record))["seeds"].endswith("a second run may differ")


def _golden_run(root: Path, seeded: bool) -> None:
    run_dir = root / "test_tipc" / "output" / "bert_sst2" / MODE
    run_dir.mkdir(parents=True, exist_ok=True)
    log = run_dir / "python_infer_cpu_gpus_-1_usemkldnn_False_threads_1_precision_fp32_batchsize_1.log"
    log.write_text('sst2_0\t{"label": 0, "logits": [0.1, 0.5]}\n')
    step = Step.flat("infer", log.stem, "passed", 0, 1.0, log="./" + log.relative_to(root).as_posix(), device="cpu",
                use_gpu="False", training="gpus_-1", precision="fp32")
    record = {"seeds": {"--seed default of train.py": "42"} if seeded else {}}
    write_json(Summary("bert_sst2", MODE, "c.txt", steps=[step], provenance=record), run_dir / "summary.json")


def test_golden_from_an_unseeded_run_warns_that_the_next_run_may_differ(tmp_path: Path):
    own = tmp_path / "mine" / "tipc.yaml"
    own.parent.mkdir()
    own.write_bytes((samples_dir() / "bert-sst2" / "tipc.yaml").read_bytes())
    _golden_run(tmp_path, seeded=False)
    proc = tipcgen("golden", str(own), "--root", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "warning: the run of lite_train_lite_infer these golden results come from set no seed" in proc.stderr
    assert "the next run may differ from them" in proc.stderr
    _golden_run(tmp_path, seeded=True)
    proc = tipcgen("golden", str(own), "--root", str(tmp_path))
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr


def test_a_golden_mismatch_after_an_unseeded_run_says_so(tmp_path: Path):
    (tmp_path / "train.log").write_text("epoch: 1, loss: 0.5\n")
    golden = Step.flat("check", "golden_check", "failed", 1, 0.1, reference="golden", note="output 'logits' differs by up to 0.2")
    summary = Summary("m", MODE, "c.txt", provenance={"seeds": {}},
                      steps=[Step("train", "train", "passed", 0, 1.0, log="train.log"), golden])
    pipeline._note_seeds(summary, tmp_path)
    assert golden.note == f"output 'logits' differs by up to 0.2; {seeds.UNSEEDED}"
    (tmp_path / "train.log").write_text("seed: 5\nepoch: 1, loss: 0.5\n")
    golden.note = ""
    pipeline._note_seeds(summary, tmp_path)
    assert golden.note == "" and summary.provenance["seeds"] == {"seed printed in train.log": "5"}
