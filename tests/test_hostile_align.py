"""Hostile inputs for the reproduction surfaces: align compare, report, convert, trace (issue #26, classes 1-4, 8).

Every case holds to the same five promises: no code from a file runs (a payload would create a marker file),
nothing is written through a link or outside the folder, no traceback (exit 2 with one message, or a plain
FAIL), it returns within seconds, and memory stays within the budget of tipcgen.repro.pickles. The fixed cases
run in ONE subprocess through the CLI's own ``main`` (cheap, and it also proves that a hostile file cannot
change what a later honest file in the same process loads into); the generators (hypothesis) call the readers.
"""
from __future__ import annotations

import io
import json
import os
import pickle
import struct
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tipcgen.core.errors import TipcgenError
from tipcgen.repro.align import compare_info, save_info
from tipcgen.repro.checkpoint_io import read_torch_state
from tipcgen.repro.convert import rules_from_mapping
from tipcgen.render.shipped.tipc_compare import abs_diff
from tipcgen.repro.reprod_files import load_info

from conftest import ROOT, chain_env

LIMIT = 32 << 20  # --max-bytes of the checkpoint and trace cases
# tipcgen.repro.pickles' stated budget: the file, its storages and its arrays, each at most --max-bytes.
MEMORY_BUDGET_MB = 3 * LIMIT / (1 << 20)
CASE_SECONDS = 5.0  # CPU seconds a case may take (the driver counts process_time: load does not count)

# ---------------------------------------------------------------- a tiny torch.save writer (no torch needed)


def _glob(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _text(value: str) -> bytes:
    raw = value.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def _int(value: int) -> bytes:
    if -(1 << 31) <= value < 1 << 31:
        return b"J" + struct.pack("<i", value)
    raw = value.to_bytes(9, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw  # LONG1


def _ints(values: tuple[int, ...]) -> bytes:
    return b"(" + b"".join(_int(v) for v in values) + b"t"


def _tensor(key: str, numel: int, size: tuple[int, ...], stride: tuple[int, ...], offset: int = 0,
            storage: str = "FloatStorage") -> bytes:
    pid = b"(" + _text("storage") + _glob("torch", storage) + _text(key) + _text("cpu") + _int(numel) + b"tQ"
    hooks = _glob("collections", "OrderedDict") + b")R"
    return (_glob("torch._utils", "_rebuild_tensor_v2") + b"(" + pid + _int(offset) + _ints(size) + _ints(stride)
            + b"\x89" + hooks + b"tR")


def torch_pickle(tensors: dict[str, bytes], prefix: bytes = b"") -> bytes:
    body = b"".join(_text(name) + tensor + b"s" for name, tensor in tensors.items())
    return b"\x80\x02" + prefix + _glob("collections", "OrderedDict") + b")R" + body + b"."


def torch_zip(path: Path, pickled: bytes, storages: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", pickled)
        for key, data in storages.items():
            archive.writestr(f"archive/data/{key}", data)
    return path


def honest_pt(path: Path) -> Path:
    weight = np.arange(6, dtype="<f4")
    return torch_zip(path, torch_pickle({"fc.weight": _tensor("0", 6, (2, 3), (3, 1))}), {"0": weight.tobytes()})


def safetensors(path: Path, header: object, body: bytes = b"", length: int | None = None) -> Path:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw) if length is None else length) + raw + body)
    return path


def _system(marker: Path) -> bytes:
    return f"cos\nsystem\n(S'touch {marker}'\ntR.".encode()


# ---------------------------------------------------------------- the fixed cases, one driver process

DRIVER = textwrap.dedent("""
    import contextlib, io, json, os, re, resource, sys, time, traceback
    import yaml

    def peak_mb():
        # VmHWM: this process's own peak. getrusage's ru_maxrss also counts the memory of the process it was
        # forked from (pytest, ~200 MB) before exec, which would hide everything measured here.
        try:
            with open("/proc/self/status") as status:
                return int(re.search(r"VmHWM:\\s+(\\d+) kB", status.read()).group(1)) / 1024
        except (OSError, AttributeError):
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    from tipcgen.cli.app import main
    from tipcgen.descriptor import yaml_lines
    from tipcgen.repro import align_report, checkpoint_io, convert, reprod_files, trace
    baseline = peak_mb()
    results = []
    for case in json.loads(sys.stdin.read()):
        out, err = io.StringIO(), io.StringIO()
        os.chdir(case["cwd"])
        start = time.process_time()  # CPU time: a loaded machine does not fail a case (issue 34)
        code, trace = None, ""
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(case["argv"], prog_name="tipcgen")
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                trace = traceback.format_exc()
        results.append({"name": case["name"], "code": code, "out": out.getvalue(), "err": err.getvalue(),
                         "traceback": trace, "seconds": time.process_time() - start})
    print(json.dumps({"results": results, "baseline_mb": baseline,
                      "maxrss_mb": peak_mb()}))
""")


@pytest.fixture(scope="module")
def battery(tmp_path_factory):
    """Write every hostile file, run every case in one process, return (results by name, maxrss, folder)."""
    d = tmp_path_factory.mktemp("hostile_align")
    marker = d / "pwned"
    victim = d / "bashrc"
    victim.write_text("original\n")
    cases: list[dict] = []

    def case(name: str, *argv: str, cwd: Path = d) -> None:
        cases.append({"name": name, "argv": list(argv), "cwd": str(cwd)})

    # class 1: outputs that are links; class 2: integers far apart
    a, b = d / "forward_torch.npy", d / "forward_paddle.npy"
    save_info(a, {"logits": np.array([1.0, 2.0], "float32")})
    save_info(b, {"logits": np.array([1.0, 2.001], "float32")})
    (d / "forward_diff.log").symlink_to(victim)
    case("compare --log through a link", "align", "compare", "forward_torch.npy", "forward_paddle.npy",
         "--log", "forward_diff.log")
    elsewhere = d / "elsewhere"
    elsewhere.mkdir()
    (d / "linked").symlink_to(elsewhere)  # a committed `output -> ~/.ssh`
    case("compare --log into a linked folder", "align", "compare", "forward_torch.npy", "forward_paddle.npy",
         "--log", "linked/forward_diff.log")
    for dtype in ("int8", "int16", "int64", "uint64"):
        info = np.iinfo(dtype)
        save_info(d / f"{dtype}_ref.npy", {"v": np.array([info.min, info.max], dtype)})
        save_info(d / f"{dtype}_pd.npy", {"v": np.array([info.max, info.min], dtype)})
        case(f"compare {dtype} far apart", "align", "compare", str(d / f"{dtype}_ref.npy"), str(d / f"{dtype}_pd.npy"))
    repro = d / "repro"
    repro.mkdir()
    save_info(repro / "forward_torch.npy", {"v": np.array([-100, 100], "int8")})
    save_info(repro / "forward_paddle.npy", {"v": np.array([100, -100], "int8")})
    (d / "report.json").symlink_to(victim)
    case("report --json through a link, int8 far apart", "align", "report", str(repro), "--json", "report.json",
         "--root", str(d))
    logs = d / "repro_logs"  # diff logs that are a FIFO (reading would block) and /dev/zero (would never end)
    logs.mkdir()
    save_info(logs / "forward_torch.npy", {"v": np.array([1.0], "float32")})
    save_info(logs / "forward_paddle.npy", {"v": np.array([1.0 + 1e-7], "float32")})
    os.mkfifo(logs / "forward_diff.log")
    (logs / "loss_diff.log").symlink_to("forward_diff.log")  # a link inside the folder, to the FIFO
    case("report with a FIFO and a link to it as diff logs", "align", "report", str(logs), "--format", "json",
         "--root", str(d))
    # links out of the folder given (a read, never a write): refused before anything is read
    outside = d / "outside"
    (outside / "run" / "lite_train_lite_infer").mkdir(parents=True)
    save_info(outside / "forward_paddle.npy", {"v": np.array([1.0], "float32")})
    (outside / "run" / "lite_train_lite_infer" / "summary.json").write_text('{"ok": true}')

    def linked(name: str) -> Path:  # a reproduction folder with an honest forward_torch.npy
        (d / name).mkdir()
        save_info(d / name / "forward_torch.npy", {"v": np.array([1.0 + 1e-7], "float32")})
        return d / name

    (linked("link_file") / "forward_paddle.npy").symlink_to(outside / "forward_paddle.npy")
    (linked("link_folder") / "step1").symlink_to(outside)
    chain = linked("link_chain")  # its first hop stays inside (a hidden folder, never searched), the next leaves
    (chain / ".hops").mkdir()
    (chain / ".hops" / "hop.npy").symlink_to(outside / "forward_paddle.npy")
    (chain / "forward_paddle.npy").symlink_to(Path(".hops") / "hop.npy")
    (linked("link_dangling") / "forward_paddle.npy").symlink_to("forward_paddle_gone.npy")
    (linked("link_dev_zero") / "loss_diff.log").symlink_to("/dev/zero")
    kept = linked("link_inside") / "kept"  # links that stay inside, to a file and to a folder: read as before
    kept.mkdir()
    save_info(kept / "paddle_side.bin", {"v": np.array([1.0], "float32")})
    (kept.parent / "forward_paddle.npy").symlink_to(Path("kept") / "paddle_side.bin")
    (kept.parent / "alias").symlink_to("kept")
    # Links the report never reads: a data folder elsewhere, a file outside under a name no checkpoint has, a dangling one.
    (kept.parent / "data").symlink_to(outside)
    (kept.parent / "notes.txt").symlink_to(outside / "forward_paddle.npy")
    (kept.parent / "old_run.npy").symlink_to("gone.npy")
    (d / "link_root" / "test_tipc" / "output").mkdir(parents=True)
    (d / "link_root" / "test_tipc" / "output" / "m").symlink_to(outside / "run")
    for name, (folder, root, _, _) in LINKED.items():
        case(name, "align", "report", str(d / folder), "--json", str(d / f"{_slug(name)}.json"), "--root", str(d / root))
    bomb = d / "alias_bomb.yaml"
    bomb.write_text("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefg", "bcdefgh"))
        + "align: {thresholds: {forward: *h}}\n")
    case("report --descriptor alias bomb", "align", "report", str(repro), "--descriptor", str(bomb), "--root", str(d))

    # class 3: checkpoints
    pt = {}
    pt["stride-0 view of 2**40 elements"] = torch_zip(d / "stride0.pt", torch_pickle(
        {"w": _tensor("0", 1, (1 << 20, 1 << 20), (0, 0))}), {"0": b"\0\0\0\0"})
    pt["stride-0 view of 256 MiB (allocatable: only the budget stops it)"] = torch_zip(d / "stride0b.pt", torch_pickle(
        {"w": _tensor("0", 1, (1 << 13, 1 << 13), (0, 0))}), {"0": b"\0\0\0\0"})
    pt["negative stride"] = torch_zip(d / "negstride.pt", torch_pickle(
        {"w": _tensor("0", 4, (2, 2), (-1, 1))}), {"0": b"\0" * 16})
    pt["storage shorter than numel"] = torch_zip(d / "short.pt", torch_pickle(
        {"w": _tensor("0", 1 << 40, (4,), (1,))}), {"0": b"\0" * 16})
    build = torch_pickle({"w": _tensor("0", 6, (2, 3), (3, 1))},
                         prefix=_glob("torch", "FloatStorage") + b"}" + _text("dtype") + _text("int8") + b"sb0")
    pt["BUILD on an allowed global"] = torch_zip(d / "build.pt", build, {"0": np.zeros(6, "<f4").tobytes()})
    slot = _glob("torch._utils", "_rebuild_tensor_v2") + b"(N}" + _text("array") + _text("x") + b"stb0"
    pt["slot state on the rebuild function"] = torch_zip(d / "slot.pt", torch_pickle(
        {"w": _tensor("0", 6, (2, 3), (3, 1))}, prefix=slot), {"0": np.zeros(6, "<f4").tobytes()})
    pt["memo index 2**31"] = torch_zip(d / "memo.pt", b"\x80\x02}r\xff\xff\xff\x7f.", {})
    pt["BINBYTES8 of 16 GiB"] = torch_zip(d / "bytes8.pt", b"\x80\x04\x8e" + struct.pack("<Q", 1 << 34) + b"ab.", {})
    pt["os.system"] = torch_zip(d / "system.pt", _system(marker), {})
    deep = b"\x80\x02" + b"]" * 100_000 + b"." # an EMPTY_LIST left on the stack 100k times: ill-formed
    pt["100k empty lists"] = torch_zip(d / "deep.pt", deep, {})
    with zipfile.ZipFile(d / "zipbomb.pt", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data.pkl", torch_pickle({"w": _tensor("0", 1, (1,), (1,))}))
        archive.writestr("archive/data/0", b"\0" * (64 << 20))  # 64 MiB from about 64 KB
    pt["zip bomb"] = d / "zipbomb.pt"
    # 1 MB of 46-byte central directory entries: zipfile would build 20,001 objects before anyone counts them
    (d / "entries.pt").write_bytes(b"PK\x03\x04" + b"PK\x01\x02".ljust(46, b"\0") * 20_001)
    pt["20,001 zip entries"] = d / "entries.pt"
    pt["legacy huge count"] = d / "legacy.pth"
    (d / "legacy.pth").write_bytes(
        pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2) + pickle.dumps(1001, protocol=2) + pickle.dumps({}, protocol=2)
        + torch_pickle({"w": _tensor("0", 4, (4,), (1,))}) + pickle.dumps(["0"], protocol=2) + struct.pack("<q", 1 << 62))
    pt["OSC escape in a key"] = torch_zip(d / "osc.pt", torch_pickle(
        {"a\x1b]52;c;cm0gLXJmIH4=\x07b": _tensor("0", 1, (1,), (1,))}), {"0": b"\0\0\0\0"})
    pt["forged line in a key"] = torch_zip(d / "line.pt", torch_pickle(
        {"a\nconversion passed": _tensor("0", 1, (1,), (1,))}), {"0": b"\0\0\0\0"})
    pt["safetensors header of 2**60 bytes"] = safetensors(d / "huge.safetensors", {}, length=1 << 60)
    pt["safetensors nested 100k deep"] = safetensors(d / "nested.safetensors", b"[" * 100_000 + b"]" * 100_000)
    f32 = {"dtype": "F32", "shape": [2]}
    pt["safetensors overlapping"] = safetensors(d / "overlap.safetensors", {
        "a": {**f32, "data_offsets": [0, 8]}, "b": {**f32, "data_offsets": [4, 12]}}, b"\0" * 12)
    pt["safetensors negative offset"] = safetensors(d / "negative.safetensors", {
        "a": {**f32, "data_offsets": [-8, 0]}}, b"\0" * 8)
    pt["safetensors shape beyond its bytes"] = safetensors(d / "shape.safetensors", {
        "a": {"dtype": "F32", "shape": [1 << 40, 1 << 40], "data_offsets": [0, 8]}}, b"\0" * 8)
    for name, path in pt.items():
        case(f"convert: {name}", "align", "convert", str(path), "--rules", "bn-cnn", "-o", str(d / "out.pdparams"),
             "--max-bytes", str(LIMIT))
    big = np.ones(16 << 18, "<f4")  # 16 MiB, half the limit: read, then stopped at the --check target
    safetensors(d / "big.safetensors", {"w": {"dtype": "F32", "shape": [big.size], "data_offsets": [0, big.nbytes]}},
                big.tobytes())
    case("convert: an honest 16 MiB file", "align", "convert", str(d / "big.safetensors"), "--rules",
         "bn-cnn", "-o", str(d / "out.pdparams"), "--max-bytes", str(LIMIT), "--check", "no_such_module:f")
    honest = honest_pt(d / "honest.pt")
    case("convert: an honest file after the hostile ones", "align", "convert", str(honest), "--rules", "bn-cnn",
         "-o", str(d / "out.pdparams"), "--format", "json", "--check", "no_such_module:f")

    # class 4: rule files
    rules = {
        "wrong type for rename": "rename: 5\n", "wrong type for base": "base: [1]\n",
        "wrong type for ndim": "transpose: {match: ['x'], ndim: two}\n", "a list as dtype": "dtype: [1]\n",
        "a number as a key": "1: x\n", "bad regex": "drop: ['(']\n", "bad group reference": "rename: [['a', '\\9']]\n",
        "nested quantifier": "rename: [['(a+)+$', 'b']]\n", "quantified alternation": "drop: ['(a|aa)*$']\n",
        "not YAML": "rename: [\n", "binary": "dtype: !!binary AAAA\n",
    }
    rules["a rename that doubles keys"] = "rename: " + json.dumps([["^(.*)$", "\\1\\1"]] * 20) + "\n"
    for name, text in rules.items():
        path = d / f"rules_{len(cases)}.yaml"
        path.write_text(text)
        case(f"rules: {name}", "align", "convert", str(honest), "--rules", str(path), "-o", str(d / "out.pdparams"))
    (d / "rules_bomb.yaml").write_text(bomb.read_text().replace("align: {thresholds: {forward: *h}}", "dtype: *h"))
    case("rules: alias bomb in dtype", "align", "convert", str(honest), "--rules", str(d / "rules_bomb.yaml"),
         "-o", str(d / "out.pdparams"))
    (d / "drop_all.yaml").write_text("drop: ['.']\n")
    case("convert: every key dropped", "align", "convert", str(honest), "--rules", str(d / "drop_all.yaml"),
         "-o", str(d / "dropped.pdparams"))

    # trace --inputs: the reprod_log reader's checks before any model is built
    with zipfile.ZipFile(d / "bomb.npz", "w", zipfile.ZIP_DEFLATED) as archive:
        buffer = io.BytesIO()
        np.lib.format.write_array_header_1_0(buffer, {"descr": "<f4", "fortran_order": False, "shape": (16 << 20,)})
        archive.writestr("x.npy", buffer.getvalue() + b"\0" * (64 << 20))
    with zipfile.ZipFile(d / "pickled.npz", "w") as archive:
        archive.writestr("x.npy", b"\x93NUMPY\x01\x00v\x00{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"
                         .ljust(128, b" ")[:127] + b"\n" + _system(marker))
    np.savez(d / "inputs.npz", np.zeros((1, 3), "float32"))
    case("trace --rules nested quantifier", "align", "trace", "--paddle", "no_such_module:f", "--inputs",
         str(d / "inputs.npz"), "--rules", str(next(p for p in d.glob("rules_*.yaml") if "(a+)+" in p.read_text())))
    (d / "entries.npz").write_bytes((d / "entries.pt").read_bytes())
    for name in ("bomb", "pickled", "entries"):
        case(f"trace --inputs {name}.npz", "align", "trace", "--paddle", "no_such_module:f", "--inputs",
             str(d / f"{name}.npz"), "--max-bytes", str(LIMIT))

    proc = subprocess.run([sys.executable, "-c", DRIVER], input=json.dumps(cases), capture_output=True, text=True,
                          env=chain_env(), timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.splitlines()[-1])
    return {r["name"]: r for r in report["results"]}, report["maxrss_mb"] - report["baseline_mb"], d


# case -> (the folder given, --root, the link the message names, what it says of it): a link below the folder
# given (or --root) that leads out of it, or nowhere, is refused; links that stay inside are read as before.
LINKED = {
    "report: a checkpoint linked to a file outside": ("link_file", ".", "link_file/forward_paddle.npy", "outside"),
    "report: a folder linked outside": ("link_folder", ".", None, None),
    "report: a link chain that ends outside": ("link_chain", ".", "link_chain/forward_paddle.npy", "outside"),
    "report: a dangling link": ("link_dangling", ".", "link_dangling/forward_paddle.npy", "which does not exist"),
    "report: a diff log linked to /dev/zero": ("link_dev_zero", ".", "link_dev_zero/loss_diff.log", "outside"),
    "report: a summary.json linked out of --root": ("link_inside", "link_root", "test_tipc/output/m", "outside"),
    "report: links that stay inside": ("link_inside", ".", None, None),
}


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def _clean(result: dict) -> None:
    assert not result["traceback"], result["traceback"]
    assert "Traceback" not in result["err"] + result["out"], result["err"]
    assert "\x1b" not in result["err"] + result["out"] and "\x07" not in result["err"] + result["out"]
    assert result["seconds"] < CASE_SECONDS, f"{result['name']} took {result['seconds']:.1f} s"


def test_every_case_is_clean_fast_and_runs_nothing(battery):
    results, maxrss, d = battery
    assert len(results) > 40
    for result in results.values():
        _clean(result)
    assert not (d / "pwned").exists()
    assert (d / "bashrc").read_text() == "original\n" and list((d / "elsewhere").iterdir()) == []
    assert maxrss < MEMORY_BUDGET_MB, f"peak memory {maxrss:.0f} MB over the interpreter's"
    assert not (d / "out.pdparams").exists() and not (d / "dropped.pdparams").exists()
    assert sorted(p.name for p in d.iterdir() if p.name.startswith(".tipcgen")) == []  # no temporary left


def test_outputs_that_are_links_are_replaced_never_followed(battery):
    results, _, d = battery
    for name, output in (("compare --log through a link", "forward_diff.log"),
                         ("report --json through a link, int8 far apart", "report.json")):
        assert results[name]["code"] in (0, 1), results[name]["err"]
        assert not (d / output).is_symlink() and (d / output).stat().st_size > 0
    assert "diff check" in (d / "forward_diff.log").read_text()


def test_integers_far_apart_fail_and_never_pass(battery):
    results, _, d = battery
    for dtype in ("int8", "int16", "int64", "uint64"):
        result = results[f"compare {dtype} far apart"]
        assert result["code"] == 1 and "check passed: False" in result["out"], result["out"]
    report = json.loads((d / "report.json").read_text())
    forward = next(row for row in report["rows"] if row["checkpoint"] == "forward")
    assert forward["status"] == "fail" and forward["worst"] == 200


@pytest.mark.parametrize("prefix", ["convert: ", "rules: ", "trace --", "report --descriptor", "compare --log into"])
def test_every_hostile_file_is_refused_with_one_message(battery, prefix):
    results, _, _ = battery
    chosen = [r for name, r in results.items() if name.startswith(prefix)
              and not name.startswith(("convert: an honest", "convert: every key dropped"))]
    assert chosen
    for result in chosen:
        assert result["code"] == 2, (result["name"], result["out"], result["err"])
        assert result["err"].startswith("error: ") and result["err"].count("error: ") == 1, result["err"]
        assert "no_such_module" not in result["err"], result["err"]  # refused for the file, before any model


def test_a_hostile_file_cannot_change_what_a_later_file_loads(battery):
    results, _, _ = battery
    honest = results["convert: an honest file after the hostile ones"]
    assert "no_such_module" in honest["err"] and honest["code"] == 2  # it got as far as the --check target
    assert "refused" in results["convert: BUILD on an allowed global"]["err"]
    assert "refused" in results["convert: slot state on the rebuild function"]["err"]


def test_a_conversion_that_drops_every_key_fails_and_writes_nothing(battery):
    results, _, d = battery
    result = results["convert: every key dropped"]
    assert result["code"] == 1 and "FAIL empty" in result["out"] and "conversion FAILED" in result["out"]
    assert not (d / "dropped.pdparams").exists()


def test_escapes_in_keys_never_reach_the_terminal(battery):
    results, _, _ = battery
    for name in ("convert: OSC escape in a key", "convert: forged line in a key", "convert: negative stride"):
        assert results[name]["code"] == 2 and results[name]["err"].count("\n") <= 2, results[name]["err"]


# ---------------------------------------------------------------- generators


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_checkpoints_are_read_or_refused_cleanly(tmp_path, data):
    kind = data.draw(st.sampled_from(["pt", "safetensors", "npy"]))
    path = tmp_path / f"x.{kind}"
    if kind == "pt":
        raw = torch_pickle({"w": _tensor("0", 6, (2, 3), (3, 1))})
    elif kind == "safetensors":
        header = json.dumps({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}).encode()
        raw = struct.pack("<Q", len(header)) + header + bytes(24)
    else:
        buffer = io.BytesIO()
        np.save(buffer, {"w": np.ones((2, 3), "float32")}, allow_pickle=True)
        raw = buffer.getvalue()
    raw = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        action = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if action == "flip":
            raw[at] = data.draw(st.integers(0, 255))
        elif action == "cut":
            del raw[at:at + data.draw(st.integers(1, 8))]
        else:
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=9))
        if not raw:
            raw = bytearray(b"\0")
    if kind == "pt":
        torch_zip(path, bytes(raw), {"0": bytes(24)})
    else:
        path.write_bytes(bytes(raw))
    try:
        loaded = load_info(path, 1 << 20) if kind == "npy" else read_torch_state(path, 1 << 20)
    except TipcgenError:
        return
    assert isinstance(loaded, dict)


_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=12) | st.floats(),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                       max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(rules=st.dictionaries(st.sampled_from(["rename", "drop", "transpose", "dtype", "allow", "base", "other"]),
                             _values, max_size=4))
def test_any_rule_mapping_is_accepted_or_refused_with_a_convert_error(rules):
    try:
        rules_from_mapping(rules, "rules.yaml")
    except TipcgenError as exc:
        assert str(exc).startswith("rules.yaml: ")


_INT_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"]


@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_integer_differences_are_exact_in_every_type(data):
    left, right = data.draw(st.sampled_from(_INT_TYPES)), data.draw(st.sampled_from(_INT_TYPES))

    def values(dtype: str) -> list[int]:
        if dtype == "bool":
            return data.draw(st.lists(st.booleans(), min_size=3, max_size=3))
        info = np.iinfo(dtype)
        return data.draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=3, max_size=3))

    a, b = values(left), values(right)
    got = abs_diff(np.array(a, left), np.array(b, right))
    expected = [abs(int(x) - int(y)) for x, y in zip(a, b)]
    assert [int(v) for v in got] == [int(float(e)) if got.dtype.kind == "f" else e for e in expected]
    assert all((g == 0) == (e == 0) for g, e in zip(got, expected))  # never 0 for two different values


def test_a_difference_is_never_hidden_by_its_type():
    for dtype in ("int8", "int16", "int64", "uint64"):
        info = np.iinfo(dtype)
        result = compare_info({"v": np.array([info.min], dtype)}, {"v": np.array([info.max], dtype)})
        assert not result.passed and result.keys[0].value("mean") > 0
    half = compare_info({"v": np.array([60000], "float16")}, {"v": np.array([-60000], "float16")}, "max", 1e6)
    assert not half.passed or half.keys[0].value("max") == 120000  # float16 overflow is recomputed, not inf
    nan = compare_info({"v": np.array([np.nan], "float32")}, {"v": np.array([np.nan], "float32")})
    assert not nan.passed and "NaN" in " ".join(nan.failures)


def test_a_catastrophic_pattern_that_passes_the_shape_check_stops_at_the_budget():
    from tipcgen.core.errors import ConvertError
    from tipcgen.repro.patterns import match_budget

    pattern = rules_from_mapping({"drop": [".*.*.*.*.*.*.*.*.*x"]}, "slow.yaml").drop[0]
    with pytest.raises(ConvertError, match="took more than"):
        with match_budget("slow.yaml", 0.3):
            pattern.search("a" * 1000)


@pytest.mark.paddle
def test_convert_replaces_links_at_its_outputs_and_leaves_no_temporary(tmp_path):
    pytest.importorskip("paddle")
    from conftest import tipcgen

    victim = tmp_path / "bashrc"
    victim.write_text("original\n")
    out, name_map = tmp_path / "model.pdparams", tmp_path / "map.json"
    out.symlink_to(victim)
    name_map.symlink_to(victim)
    proc = tipcgen("align", "convert", str(honest_pt(tmp_path / "w.pt")), "--rules", "bn-cnn", "-o", str(out),
                   "--map", str(name_map), "--force")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert victim.read_text() == "original\n" and not out.is_symlink() and not name_map.is_symlink()
    assert json.loads(name_map.read_text()) == {"fc.weight": "fc.weight"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bashrc", "map.json", "model.pdparams", "w.pt"]


def test_diff_logs_that_are_not_files_are_never_read(battery):
    results, _, _ = battery
    result = results["report with a FIFO and a link to it as diff logs"]
    assert result["code"] == 1, result["err"]
    rows = {row["checkpoint"]: row for row in json.loads(result["out"])["rows"]}
    # neither is taken for a log: forward is re-checked from its pair (and says it has no log), loss has nothing
    assert rows["forward"]["status"] == "pass" and "no forward_diff.log" in " ".join(rows["forward"]["notes"])
    assert rows["loss"]["status"] == "missing"


def test_a_link_out_of_the_folder_given_or_to_nothing_is_refused_and_nothing_is_written(battery):
    """`align report` (and `report --align DIR`) reads only inside the folders it was given: a link below the
    reproduction folder or --root (a file, a folder, the end of a chain) that leads out of it, or to nothing,
    stops the report with one message naming the link, before anything is read or written."""
    results, _, d = battery
    for name, (_, _, link, says) in LINKED.items():
        result = results[name]
        _clean(result)
        if link is None:
            continue
        assert result["code"] == 2, (name, result["out"], result["err"])
        assert result["err"].startswith("error: ") and result["err"].count("error: ") == 1, result["err"]
        assert f"{link}: is a link to " in result["err"] and says in result["err"], result["err"]
        assert "hint: " in result["err"] and result["out"] == "", result["err"]
        assert not (d / f"{_slug(name)}.json").exists(), name


def test_links_that_stay_inside_the_folder_given_are_read_and_links_never_read_are_passed_by(battery):
    """A link under a name the report reads is read when it stays inside; a linked folder is never entered,
    and a link under any other name (a data folder elsewhere, notes.txt, a dangling old_run.npy) is never
    read, so it never stops the report."""
    results, _, d = battery
    folder = results["report: a folder linked outside"]
    assert folder["code"] == 1 and "error:" not in folder["err"], folder["err"]
    rows = {row["checkpoint"]: row for row in json.loads((d / f"{_slug('report: a folder linked outside')}.json")
                                                         .read_text())["rows"]}
    assert rows["forward"]["status"] != "pass", rows["forward"]  # its step1/ -> outside was not entered
    result = results["report: links that stay inside"]
    assert result["code"] == 1, result["err"]  # the other checkpoints are missing
    rows = {row["checkpoint"]: row for row in json.loads((d / f"{_slug('report: links that stay inside')}.json")
                                                         .read_text())["rows"]}
    assert rows["forward"]["status"] == "pass" and rows["forward"]["paddle"] == "forward_paddle.npy", rows["forward"]


def test_a_diff_log_is_read_as_a_bounded_regular_file(tmp_path):
    from tipcgen.repro.align import AlignFileError, read_log

    os.mkfifo(tmp_path / "fifo_diff.log")
    for path in (tmp_path / "fifo_diff.log", Path("/dev/zero")):
        with pytest.raises(AlignFileError, match="not a regular file"):
            read_log(path)


def test_a_refused_build_leaves_the_next_load_intact(tmp_path):
    """BUILD on torch.FloatStorage once told tipcgen's shared stand-in it held int8: later files read as garbage."""
    attack = _glob("torch", "FloatStorage") + b"}" + _text("dtype") + _text("int8") + b"sb0"
    slot = _glob("torch._utils", "_rebuild_tensor_v2") + b"(N}" + _text("array") + _text("x") + b"stb0"
    for i, prefix in enumerate((attack, slot)):
        path = torch_zip(tmp_path / f"attack{i}.pt", torch_pickle({"w": _tensor("0", 6, (2, 3), (3, 1))}, prefix=prefix),
                         {"0": bytes(24)})
        with pytest.raises(TipcgenError, match="sets state"):
            read_torch_state(path)
    state = read_torch_state(honest_pt(tmp_path / "honest.pt"))
    np.testing.assert_array_equal(state["fc.weight"], np.arange(6, dtype="float32").reshape(2, 3))
