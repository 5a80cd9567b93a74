"""Real data in prepare.sh: lite data as a file, a folder or an archive (unpacked safely), whole data as a
folder, whole modes that never train on lite data by accident, and checkpoint names that mean one thing."""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tarfile
import time
import zipfile
from pathlib import Path

import pytest
import yaml

from conftest import STUB, make_stub_repo, read_summary, tipcgen

CONFIG = "test_tipc/configs/stub_model/train_infer_python.txt"


def make_repo(tmp_path: Path, data: dict | None, **slots) -> Path:
    """The stub project with DATA as its descriptor's data: section (None: no section), rendered by init."""
    repo = make_stub_repo(tmp_path / "repo", init=False)
    doc = yaml.safe_load((STUB / "tipc.yaml").read_text())
    doc.pop("data", None)
    if data is not None:
        doc["data"] = data
    for name, value in slots.items():
        section, key = name.split("__")
        doc[section][key] = value
    (repo / "stub" / "tipc.yaml").write_text(yaml.safe_dump(doc))
    tipcgen("init", "stub/tipc.yaml", "--output", str(repo), cwd=repo, check=True)
    return repo


def prepare(repo: Path, mode: str, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("TIPC_DATA_DIR", "TIPC_MODEL_DIR")}
    return subprocess.run(["bash", "test_tipc/prepare.sh", CONFIG, mode], cwd=repo, env={**full, **env},
                          capture_output=True, text=True, timeout=60)


def image_tree(root: Path) -> None:
    for label in ("cat", "dog"):
        (root / label).mkdir(parents=True)
        (root / label / "0.npy").write_bytes(b"\x93NUMPY" + label.encode())


def test_whole_training_without_data_is_refused_naming_what_to_add(tmp_path: Path):
    repo = make_repo(tmp_path, None)
    proc = prepare(repo, "whole_train_whole_infer")
    assert proc.returncode == 2 and "the descriptor names no data" in proc.stderr, proc.stdout + proc.stderr
    assert "data:" in proc.stderr and "whole_from_lite" in proc.stderr and "Traceback" not in proc.stderr
    assert prepare(repo, "lite_train_lite_infer").returncode == 0


def test_a_train_file_without_whole_source_is_refused_unless_on_purpose(tmp_path: Path):
    data = {"dir": "./data", "files": {"train.tsv": {"role": "train", "lite": "stub/tipc.yaml"}}}
    repo = make_repo(tmp_path, data)
    proc = prepare(repo, "whole_train_whole_infer", TIPC_DATA_DIR=str(tmp_path))
    assert proc.returncode == 2 and "train.tsv names no whole: source" in proc.stderr, proc.stderr
    on_purpose = make_repo(tmp_path / "b", {**data, "whole_from_lite": True})
    assert prepare(on_purpose, "whole_train_whole_infer").returncode == 0
    assert (on_purpose / "data" / "train.tsv").read_text() == (on_purpose / "stub" / "tipc.yaml").read_text()


def test_lite_data_as_folder_tar_and_zip_whole_data_as_folder(tmp_path: Path):
    image_tree(tmp_path / "tree")
    with tarfile.open(tmp_path / "lite.tar", "w") as tar:
        tar.add(tmp_path / "tree", arcname="images")
    with zipfile.ZipFile(tmp_path / "lite.zip", "w") as z:
        z.write(tmp_path / "tree" / "cat" / "0.npy", "images/cat/0.npy")
    data = {"dir": "./data", "files": {
        "tar": {"role": "train", "lite": "lite.tar", "whole": "images"},
        "zip": {"role": "infer", "lite": "lite.zip", "whole": "images"},
        "folder": {"role": "train", "lite": "tree", "whole": "images"}}}
    repo = make_repo(tmp_path, data)
    for name in ("lite.tar", "lite.zip", "tree"):
        shutil.move(tmp_path / name, repo / name)
    proc = prepare(repo, "lite_train_lite_infer")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # an archive of one top folder unpacks to its content, as a folder does
    assert (repo / "data/tar/dog/0.npy").read_bytes() == b"\x93NUMPYdog"
    assert (repo / "data/zip/cat/0.npy").is_file() and (repo / "data/folder/cat/0.npy").is_file()
    assert prepare(repo, "lite_train_lite_infer").returncode == 0, "a second prepare replaces the first"
    whole = tmp_path / "whole"
    image_tree(whole / "images")
    proc = prepare(repo, "whole_train_whole_infer", TIPC_DATA_DIR=str(whole))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (repo / "data/tar").resolve() == (whole / "images").resolve(), "whole data is linked, not copied"


def _tar_with(path: Path, member: tarfile.TarInfo, payload: bytes = b"") -> None:
    with tarfile.open(path, "w") as tar:
        member.size = len(payload) if member.isfile() else 0
        tar.addfile(member, io.BytesIO(payload) if member.isfile() else None)


def test_archives_that_reach_outside_the_data_folder_are_refused(tmp_path: Path):
    traversal = tarfile.TarInfo("../../pwned.txt")
    link = tarfile.TarInfo("images/evil")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc"
    data = {"dir": "./data", "whole_from_lite": True,
            "files": {"imgs": {"role": "train", "lite": "lite.tar"}}}
    for member, payload in ((traversal, b"x"), (link, b"")):
        repo = make_repo(tmp_path / member.name.replace("/", "_"), data)
        _tar_with(repo / "lite.tar", member, payload)
        proc = prepare(repo, "lite_train_lite_infer")
        assert proc.returncode == 2 and "could not be unpacked safely" in proc.stderr, proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr
        assert not list(tmp_path.rglob("pwned*")) and not (repo / "data/imgs/evil").exists()
        assert list((repo / "data").iterdir()) == [], "nothing half-unpacked is left"


def test_whole_infer_takes_the_newest_train_run_and_either_checkpoint_spelling(tmp_path: Path):
    data = {"dir": "./data", "whole_from_lite": True, "trained_model": "./data/trained"}
    for spelling in ("latest", "latest.pdparams"):
        repo = make_repo(tmp_path / spelling.replace(".", "_"), data, train__checkpoint=spelling,
                         whole_infer__models="./data/trained")  # the mode infers on it (the runner checks it names one)
        runs = repo / "test_tipc/output/stub_model"
        for i, mode in enumerate(("whole_train_whole_infer", "lite_train_lite_infer")):  # the lite run is newer
            folder = runs / mode / "norm_train_gpus_-1_autocast_fp32"
            folder.mkdir(parents=True)
            (folder / "latest.pdparams").write_bytes(b"w")
            os.utime(folder / "latest.pdparams", (time.time() - 100 + i * 50,) * 2)
        proc = prepare(repo, "whole_infer")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert (repo / "data/trained").resolve() == (runs / "lite_train_lite_infer/norm_train_gpus_-1_autocast_fp32").resolve()


def test_init_ignores_the_working_folders_in_git_once(tmp_path: Path):
    data = {"dir": "./train_data/stub", "whole_from_lite": True, "trained_model": "./models/trained"}
    repo = make_repo(tmp_path, data)
    (repo / ".gitignore").write_text("*.pyc\n/test_tipc/output/")  # the user's own lines, no final newline
    tipcgen("init", "stub/tipc.yaml", "--output", str(repo), cwd=repo, check=True)
    text = (repo / ".gitignore").read_text()
    assert text.startswith("*.pyc\n/test_tipc/output/\n\n# tipcgen"), text
    assert text.count("/test_tipc/output/") == 1
    for entry in ("/train_data/stub/", "/.tipcgen/backup/", "/models/trained"):
        assert entry in text.splitlines()
    proc = tipcgen("init", "stub/tipc.yaml", "--output", str(repo), cwd=repo, check=True)
    assert (repo / ".gitignore").read_text() == text and "0 file(s) written" in proc.stdout
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "test_tipc/output/m").mkdir(parents=True)
    (repo / "test_tipc/output/m/x.log").write_text("x")
    (repo / "train_data/stub").mkdir(parents=True)
    (repo / "train_data/stub/a.tsv").write_text("x")
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=repo,
                            capture_output=True, text=True, check=True).stdout
    assert "output/m" not in status and "train_data" not in status and "test_tipc/prepare.sh" in status


def test_descriptor_env_reaches_export_and_inference_and_the_summary_says_so(tmp_path: Path):
    """A script that needs FLAGS_enable_pir_api=0 (one loading inference.pdmodel under Paddle 3) passes
    when the descriptor's env: says so, without the variable set by hand."""
    repo = make_repo(tmp_path, None)
    assert tipcgen("run", "--mode", "lite_train_lite_infer", cwd=repo,
                   env={"STUB_NEED": "infer:FLAGS_enable_pir_api=0"}).returncode == 1, "the stand-in needs the flag"
    repo = make_repo(tmp_path / "env", None)
    doc = yaml.safe_load((repo / "stub/tipc.yaml").read_text())
    doc["env"] = {"FLAGS_enable_pir_api": "0", "X_WITH_SPACE": "a b; $(touch pwned)"}
    (repo / "stub/tipc.yaml").write_text(yaml.safe_dump(doc))
    tipcgen("init", "stub/tipc.yaml", "--output", str(repo), "--force", cwd=repo, check=True)
    proc = tipcgen("run", "--mode", "lite_train_lite_infer", cwd=repo, env={"STUB_NEED": "export,infer:FLAGS_enable_pir_api=0"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    steps = read_summary(repo)["steps"]
    noted = {s["kind"] for s in steps if "FLAGS_enable_pir_api=0" in (s.get("note") or "")}
    assert noted == {"export", "infer"}, steps
    assert not list(tmp_path.rglob("pwned")), "an env value ran as code"


def test_doctor_notices_an_inference_script_that_loads_pdmodel(tmp_path: Path):
    from tipcgen.run import doctor

    repo = make_repo(tmp_path, None)
    infer = repo / "stub/stub_infer.py"
    config = Path(CONFIG)
    assert doctor._legacy_format(repo, config, pir=True) == [], "the stand-in loads no .pdmodel"
    infer.write_text("# inference.pdmodel in a comment is not a load\n" + infer.read_text())
    assert doctor._legacy_format(repo, config, pir=True) == []
    infer.write_text(infer.read_text() + 'MODEL_FILE = "inference.pdmodel"\n')
    [check] = doctor._legacy_format(repo, config, pir=True)
    assert check.status == "fail" and "stub/stub_infer.py loads inference.pdmodel" in check.detail
    assert "make stub/stub_infer.py load inference.json when there is no .pdmodel (stub/stub_infer.py:" in check.fix
    assert 'env: {FLAGS_enable_pir_api: "0"}' in check.fix and "probe" not in check.fix  # not probed: both fixes
    assert doctor._legacy_format(repo, config, pir=False)[0].status == "warn"
    # probed: the flag is advised only where an export under it works with this paddle
    broke = (False, "TypeError: (InvalidType) matmul(): argument (position 1) must be Value, but got Variable")
    [check] = doctor._legacy_format(repo, config, pir=True, old_ir=lambda: broke)
    assert check.status == "fail" and "is no cure here: a probe export of a small model" in check.detail
    assert "matmul()" in check.detail and "do not add FLAGS_enable_pir_api" in check.fix
    [check] = doctor._legacy_format(repo, config, pir=True, old_ir=lambda: (True, "inference.pdmodel"))
    assert 'env: {FLAGS_enable_pir_api: "0"} to the descriptor (a probe export of a small model under it worked' in check.fix
    asked = []
    doctor._legacy_format(repo, config, pir=False, old_ir=lambda: asked.append(1))
    assert asked == []  # Paddle 2 writes .pdmodel: nothing to probe
    doc = yaml.safe_load((repo / "stub/tipc.yaml").read_text())
    doc["env"] = {"FLAGS_enable_pir_api": "0"}
    (repo / "stub/tipc.yaml").write_text(yaml.safe_dump(doc))
    tipcgen("init", "stub/tipc.yaml", "--output", str(repo), "--force", cwd=repo, check=True)
    [check] = doctor._legacy_format(repo, config, pir=True)
    assert check.status == "ok" and "FLAGS_enable_pir_api=0" in check.detail
    [check] = doctor._legacy_format(repo, config, pir=True, old_ir=lambda: broke)
    assert check.status == "fail" and "the runner exports FLAGS_enable_pir_api=0" in check.detail
    assert "remove FLAGS_enable_pir_api from env: in the descriptor" in check.fix
    # a script that reads inference.json under a runner that sets the flag: said only where the export breaks
    infer.write_text(infer.read_text().replace('MODEL_FILE = "inference.pdmodel"', 'MODEL_FILE = "inference.json"'))
    [check] = doctor._legacy_format(repo, config, pir=True, old_ir=lambda: broke)
    assert check.status == "fail" and "does not need it" in check.detail and "remove FLAGS_enable_pir_api" in check.fix
    assert doctor._legacy_format(repo, config, pir=True, old_ir=lambda: (True, "inference.pdmodel")) == []
    assert doctor._legacy_format(repo, config, pir=False, old_ir=lambda: broke) == []


def test_a_script_that_reads_both_formats_needs_no_flag(tmp_path: Path):
    from tipcgen.configs import legacy_format

    both = tmp_path / "both.py"
    both.write_text('for ext in (".json", ".pdmodel"):\n    pass\n')
    old = tmp_path / "old.py"
    old.write_text('config = Config(d + "/inference.pdmodel", d + "/inference.pdiparams")\njson.load(open("cfg.json"))\n')
    assert not legacy_format.loads_pdmodel(both) and legacy_format.loads_pdmodel(old)


def test_import_names_the_line_and_never_adds_the_flag_unasked(tmp_path: Path):
    """FLAGS_enable_pir_api=0 breaks paddle.jit.save for most models on Paddle 3.3 (issue #56): import says what
    to change in the script instead; a descriptor that sets env: itself still renders it."""
    repo = make_repo(tmp_path, None)
    plain = tipcgen("import", CONFIG, cwd=repo, check=True).stdout
    assert "env:" not in plain
    (repo / "stub/stub_infer.py").write_text((repo / "stub/stub_infer.py").read_text() + "# loads inference.pdmodel\n"
                                             'PROGRAM = "inference.pdmodel"\n')
    printed = tipcgen("import", CONFIG, cwd=repo, check=True)
    assert "FLAGS_enable_pir_api" not in printed.stdout and "loads inference.pdmodel only" in printed.stderr
    proc = tipcgen("import", CONFIG, "-o", "imported.yaml", cwd=repo, check=True)
    assert "stub/stub_infer.py loads inference.pdmodel only" in proc.stdout
    assert "make it load inference.json when there is no .pdmodel (stub/stub_infer.py:" in proc.stdout
    assert "add it only where tipcgen doctor says the export works under it" in proc.stdout
    text = (repo / "imported.yaml").read_text()
    assert "\nenv:" not in text and "FLAGS_enable_pir_api" not in text
    (repo / "imported.yaml").write_text(text + '\nenv: {FLAGS_enable_pir_api: "0"}\n')  # asked for
    tipcgen("init", "imported.yaml", "--force", cwd=repo, check=True)
    tables = json.loads((repo / "test_tipc/tipc_layouts.json").read_text())  # each model's env: is in its settings
    assert [own["env"] for own in tables["settings"].values()] == [["env", "FLAGS_enable_pir_api=0"]]


def test_doctor_names_the_predictor_traps_of_paddle_3(tmp_path: Path):
    """enable_memory_optim() on a PIR model, oneDNN on with no disable_mkldnn(): said under PIR, with the line;
    a script that turns oneDNN off when asked, or a comment, or Paddle 2, gets neither."""
    from tipcgen.run import doctor

    repo = make_repo(tmp_path, None)
    infer = repo / "stub/stub_infer.py"
    original = infer.read_text()
    config = Path(CONFIG)
    assert doctor._predictor(repo, config, pir=True) == []
    infer.write_text(original + "def predictor(config, on):\n    config.enable_memory_optim()\n"
                     "    if on:\n        config.enable_mkldnn()\n    return config\n")
    rows = doctor._predictor(repo, config, pir=True)
    assert [r.status for r in rows] == ["warn", "warn"]
    assert "calls config.enable_memory_optim()" in rows[0].detail and "stub/stub_infer.py:" in rows[0].detail
    assert "never calls disable_mkldnn()" in rows[1].detail and "config.disable_mkldnn()" in rows[1].fix
    assert doctor._predictor(repo, config, pir=False) == []
    infer.write_text(original + "def predictor(config, on):\n    # config.enable_memory_optim()\n"
                     "    if on:\n        config.enable_mkldnn()\n    else:\n        config.disable_mkldnn()\n")
    assert doctor._predictor(repo, config, pir=True) == []


@pytest.mark.paddle
def test_the_old_ir_probe_tells_what_this_paddle_does(tmp_path: Path):
    """The real probe (one small model, a temporary folder): on 3.3.1 an export under FLAGS_enable_pir_api=0
    fails as the repositories of issue #56 did; under PIR the same model exports (tipcgen's own probe, not a mock)."""
    import paddle

    from tipcgen.run import doctor

    found = doctor._old_ir_export("python")
    assert found is not None
    if paddle.__version__.startswith("3.3"):
        assert found[0] is False and "must be Value, but got Variable" in found[1], found
    script = tmp_path / "pir_probe.py"
    script.write_text(doctor._OLD_IR_PROBE.replace('os.environ["FLAGS_enable_pir_api"] = "0"', "", 1))
    under_pir = subprocess.run(["python", str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert '"ok": true' in under_pir.stdout and "inference.json" in under_pir.stdout, under_pir.stdout[-500:]
    # the hints' rules on what this paddle really says: the export under the flag, a predictor with memory_optim
    from tipcgen.results import explain

    if not found[0]:
        hint = explain.explain(["Traceback (most recent call last):", found[1]], "export",
                               explain.Known(env={"FLAGS_enable_pir_api": "0"}))
        assert "the export failed under FLAGS_enable_pir_api=0" in hint, (found, hint)
    predictor = tmp_path / "predictor.py"
    predictor.write_text(
        "import os, paddle, paddle.inference as pi\n"
        "m = paddle.nn.Linear(4, 3)\nm.eval()\n"
        "paddle.jit.save(m, 'out/inference', input_spec=[paddle.static.InputSpec([None, 4], 'float32')])\n"
        "prefix = 'out/inference.json' if os.path.exists('out/inference.json') else 'out/inference.pdmodel'\n"
        "c = pi.Config(prefix, 'out/inference.pdiparams')\nc.disable_gpu()\nc.enable_memory_optim()\n"
        "pi.create_predictor(c)\nprint('built')\n")
    built = subprocess.run(["python", str(predictor)], capture_output=True, text=True, cwd=tmp_path)
    hint = explain.explain((built.stdout + built.stderr).splitlines(), "infer", explain.Known())
    if paddle.__version__.startswith("3.3"):
        assert built.returncode != 0 and "remove config.enable_memory_optim()" in hint, (built.stderr[-800:], hint)
    else:
        assert built.returncode != 0 or hint == ""
