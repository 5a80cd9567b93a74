"""The runner is the specification (#36): configs read as their own runners read them, every kind kept.

Small test projects shaped like each layout of ../shared/tipc-corpus-3 (a runner of our own, not the
corpus's, and its configs): lint finds no error on a config its runner reads as intended, import → init
gives every config back byte for byte, and a shifted or misread line is an error for lint and a refusal
for import, with one message. Hypothesis generates runner variants (indices, parsers, MODE branches,
line or word splitting) and config shifts. The corpus figures (docs/LAYOUTS.md's table per suite and
kind) come from the shared sweep (tests/corpus_sweep.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tipcgen import descriptor
from tipcgen.configs import family_pick, import_kept, lint, lint_runners
from tipcgen.core.errors import ConfigImportError
from tipcgen.format import runner_spec
from tipcgen.render import repository
import corpus_sweep
from conftest import SANDBOX, tipcgen

ROOT = Path(__file__).resolve().parents[1]
HEADER = "===========================train_params==========================="
needs_corpus = pytest.mark.skipif(not corpus_sweep.available(), reason="corpus folders not found in ../shared")


# ---------------------------------------------------------------- test projects

def runner(reads: list[tuple[int, str]], split_lines: bool = True, mode_reads: tuple = (), parser: str = "func_parser_value",
           name_first: bool = False) -> str:
    """A runner of our own: loads $1, reads each (index, var) by PARSER; MODE_READS inside a benchmark_train branch."""
    out = ["#!/bin/bash", "source test_tipc/common_func.sh", "FILENAME=$1"]
    if split_lines:
        out += ["dataline=$(awk 'NR==1, NR==80{print}'  $FILENAME)", "IFS=$'\\n'", "lines=(${dataline})"]
    else:
        out += ["dataline=`cat $FILENAME`", "lines=(${dataline})"]
    if name_first:
        out.append('task_name=$(parse_first_value "${lines[1]}")')
    out += [f'{var}=$({parser} "${{lines[{index}]}}")' for index, var in reads]
    if mode_reads:
        out.append('if [ ${MODE} = "benchmark_train" ]; then')
        out += [f'    {var}=$(func_parser_value "${{lines[{index}]}}")' for index, var in mode_reads]
        out.append("fi")
    out += ['if [ ${MODE} = "klquant_whole_infer" ]; then', '    dataline=$(awk \'NR==1, NR==17{print}\' $FILENAME)',
            "    lines=(${dataline})", '    python=$(func_parser_value "${lines[7]}")', "fi",
            'if [ ${run_export} != "null" ]; then', "    echo export", "fi"]
    return "\n".join(out) + "\n"


def project(tmp: Path, runners: dict[str, str], configs: dict[str, str]) -> Path:
    for name, text in runners.items():
        (tmp / "test_tipc").mkdir(parents=True, exist_ok=True)
        (tmp / "test_tipc" / name).write_text(text)
    for rel, text in configs.items():
        path = tmp / "test_tipc" / "configs" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp


def own_layout(n: int = 56) -> tuple[list[str], list[tuple[int, str]]]:
    """A layout of no built-in family (PaddleRS-like: a header of its own, more than 51 lines) and what its
    runner reads: every keyed line, by the variable named after its key."""
    lines = [HEADER, "model_name:m", "python:python", "gpu_list:-1"]
    while len(lines) < n:
        i = len(lines)
        if i in (13, 24):
            lines.append("##")
        elif i == 25:
            lines.append("===========================export_params===========================")
        elif i == 36:
            lines.append("===========================infer_params===========================")
        else:
            lines.append(f"key_{i}:value_{i}" if i != 20 else "inference:infer.py")
    reads = [(i, lines[i].split(":")[0]) for i in range(1, n) if ":" in lines[i]]
    return lines, reads


def text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def lint_of(config: Path) -> list[lint.Finding]:
    return [f for f in lint.lint_report([config]) if f.severity != "info"]


def errors(config: Path) -> list[lint.Finding]:
    return [f for f in lint_of(config) if f.severity == "error"]


def round_trip_folder(root: Path, tmp: Path) -> None:
    """tipcgen import test_tipc/configs/ -o DIR, then init of every descriptor: each config comes back byte for byte."""
    out, rendered = tmp / "imported", tmp / "rendered"
    proc = tipcgen("import", str(root / "test_tipc" / "configs"), "-o", str(out), cwd=tmp)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rendered.mkdir()
    for desc in sorted(out.glob("*/tipc.yaml")):
        proc = tipcgen("init", str(desc), "--force", cwd=rendered)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    for config in sorted((root / "test_tipc" / "configs").rglob("*.txt")):
        rel = config.relative_to(root)
        assert (rendered / rel).read_bytes() == config.read_bytes(), rel


# PaddleRS-like: a runner of its own layout (56 lines here, not RS's 52), reading lines[1] with a function of its own.
def test_a_runner_of_its_own_longer_layout_is_its_specification(tmp_path: Path) -> None:
    lines, reads = own_layout()
    root = project(tmp_path / "rs", {"test_train_inference_python.sh": runner(reads, name_first=True)},
                   {"cd/bit/train_infer_python.txt": text(lines),
                    "cd/bit/train_infer_cpp_linux_gpu_cpu.txt": "===========================cpp_infer_params===========================\nmodel_name:m\n"})
    config = root / "test_tipc/configs/cd/bit/train_infer_python.txt"
    assert errors(config) == []
    info = [f for f in lint.lint_report([config]) if f.rule == lint_runners.RUNNER_LAYOUT]
    assert info and "test_train_inference_python.sh reads it as intended" in info[0].message
    round_trip_folder(root, tmp_path)
    # A line deleted in the middle: the runner reads every later line from its neighbour.
    shifted = lines[:17] + lines[18:]
    config.write_text(text(shifted))
    found = errors(config)
    assert [f.rule for f in found] == ["slot-shift"], found
    assert "test_train_inference_python.sh reads lines[18] into key_18, but key_18: sits at idx 17" in found[0].message
    with pytest.raises(ConfigImportError) as caught:
        import_kept.route(text(shifted), None, family_pick.runner_specs(config), str(config))
    assert found[0].message in str(caught.value)  # one reading, one message
    # The folder: the shifted config is left out (named, exit 1), never kept as if it ran; the others are imported.
    proc = tipcgen("import", str(root / "test_tipc/configs"), "-o", str(tmp_path / "again"), cwd=tmp_path)
    assert proc.returncode == 1 and found[0].message in proc.stderr and "not imported" in proc.stderr, proc.stderr
    written = "".join(p.read_text() for p in (tmp_path / "again").glob("*/tipc.yaml"))
    assert "train_infer_cpp_linux_gpu_cpu.txt" in written and "cd/bit/train_infer_python.txt" not in written


def standard(trainer: str = "train.py") -> list[str]:
    from test_layouts import standard_lines
    lines = standard_lines()
    lines[15] = f"norm_train:{trainer}"
    return lines


# The names the upstream 51-line runners read lines by (PaddleOCR's, PaddleRec's, PaddleYOLO's).
UPSTREAM_NAMES = {1: "model_name", 2: "python", 3: "gpu_list", 10: "train_model_name", 11: "train_infer_img_dir",
                  14: "trainer_list", 15: "norm_trainer", 23: "eval_py", 29: "norm_export", 30: "pact_export",
                  31: "fpgm_export", 32: "distill_export", 35: "inference_dir", 39: "inference_py"}


def upstream_reads() -> list[tuple[int, str]]:
    return [(i, UPSTREAM_NAMES.get(i, f"v{i}")) for i in range(1, 51) if i not in (13, 21, 22, 25, 26)]


# PaddleRec-like: norm_train null, trained in the runner's benchmark_train branch from lines after the layout.
def test_a_config_trained_in_a_mode_branch_of_its_runner_is_no_error(tmp_path: Path) -> None:
    lines = standard("null") + ["===========================train_benchmark_params===========================",
                                "batch_size:8", "run_mode:PGLBOX", "gpu_config:models/graph/config.yaml"]
    base = runner(upstream_reads(), mode_reads=((52, "run_mode_value"), (53, "gpu_config_value")))
    root = project(tmp_path / "rec", {"test_train_inference_python.sh": base}, {"walk/train_infer_python.txt": text(lines)})
    config = root / "test_tipc/configs/walk/train_infer_python.txt"
    found = lint_of(config)
    assert errors(config) == [], found
    assert any(f.rule == "null-value" and "only in its MODE=benchmark_train branch" in f.message for f in found)
    round_trip_folder(root, tmp_path)
    # Without the branch's lines the runner trains it nowhere: the error stands.
    config.write_text(text(lines[:51]))
    assert [f.rule for f in errors(config)] == ["null-value"]


# PaddleScience-like: a config of the benchmark runner, which splits its file into words.
def test_a_config_of_another_runner_is_read_as_that_runner_reads_it(tmp_path: Path) -> None:
    lines = [HEADER, "model_name:euler", "bs_item:1", "run_mode:DP", "device_num:N1C1", "python:python",
             "gpu_list:0", "norm_train:python train.py -o x=1", *[f"k{i}:null" for i in range(8, 30)], "workdir:examples/e"]
    words = text(lines).split()
    bench = runner([(words.index("run_mode:DP"), "run_mode"), (words.index("device_num:N1C1"), "device_num"),
                    (words.index("workdir:examples/e"), "workdir")], split_lines=False)
    root = project(tmp_path / "sci", {"test_train_inference_python.sh": runner(upstream_reads()), "benchmark_train.sh": bench},
                   {"beam/beam_train_infer_python.txt": text(lines)})
    config = root / "test_tipc/configs/beam/beam_train_infer_python.txt"
    found = lint_of(config)
    assert errors(config) == [] and [f.rule for f in found if f.rule == "other-runner"] == ["other-runner"], found
    assert "read by benchmark_train.sh as intended" in next(f.message for f in found if f.rule == "other-runner")
    round_trip_folder(root, tmp_path)
    # One more word before workdir (a space in a line): benchmark_train.sh reads workdir from its neighbour.
    config.write_text(text([*lines[:8], "k8:a b", *lines[9:]]))
    assert any(f.rule == "slot-shift" for f in errors(config)), lint_of(config)


# PARL-like: the 32-line tutorial layout, whose runner reads `##` at idx 14 as a multi-node line (empty).
def test_a_runner_reading_a_separator_in_place_is_no_misread(tmp_path: Path) -> None:
    lines = (ROOT / "tests/fixtures/tutorial/test_tipc/configs/tutorial_model/train_infer_python.txt").read_text().splitlines()
    reads = [(i, "model_name" if i == 1 else "python" if i == 2 else f"v{i}") for i in range(1, 32)
             if i not in (0, 11, 15, 17, 18, 22, 25)]
    root = project(tmp_path / "parl", {"test_train_inference_python.sh": runner(reads)}, {"DQN/train_infer_python.txt": text(lines)})
    config = root / "test_tipc/configs/DQN/train_infer_python.txt"
    assert errors(config) == [], lint_of(config)
    round_trip_folder(root, tmp_path)


# PaddleYOLO/PaddleSpeech-like: the 51-line layout read by an upstream-named runner; a deleted line is caught.
@pytest.mark.parametrize("deleted", [5, 16, 30, 38])
def test_a_shift_in_a_standard_config_is_an_error_for_its_runner(tmp_path: Path, deleted: int) -> None:
    lines = standard()
    root = project(tmp_path / "yolo", {"test_train_inference_python.sh": runner(upstream_reads())},
                   {"yolov5/yolov5_s_train_infer_python.txt": text(lines)})
    config = root / "test_tipc/configs/yolov5/yolov5_s_train_infer_python.txt"
    assert errors(config) == []
    round_trip_folder(root, tmp_path)
    config.write_text(text(lines[:deleted] + lines[deleted + 1:]))
    found = errors(config)
    assert found and found[0].rule == "slot-shift", lint_of(config)
    with pytest.raises(ConfigImportError):
        import_kept.route(config.read_text(), family_pick.read_runner(config), family_pick.runner_specs(config), str(config))


# A 3D-suite-like runner: export and inference run only where the export command is not null.
GUARDED_NAMES = {**UPSTREAM_NAMES, 27: "save_infer_key", 28: "export_weight", 37: "infer_export_list", 40: "use_gpu_list",
                 41: "use_mkldnn_key", 42: "cpu_threads_key", 43: "batch_size_key", 44: "use_trt_key", 45: "precision_key",
                 46: "infer_model_key", 47: "image_dir_key", 48: "save_log_key", 49: "benchmark_key", 50: "infer_key1"}
GUARDED_BODY = """
function func_inference(){
    _python=$1
    for use_gpu in ${use_gpu_list[*]}; do
        cmd="${_python} ${inference_py} ${use_mkldnn_key} ${cpu_threads_key} ${batch_size_key} ${use_trt_key} ${precision_key}"
        cmd="${cmd} ${infer_model_key} ${image_dir_key} ${save_log_key} ${benchmark_key} ${infer_key1}"
    done
}
if [ ${MODE} = "whole_infer" ]; then
    infer_run_exports=(${infer_export_list})
    if [ ${infer_run_exports[Count]} != "null" ];then
        echo ${save_infer_key} ${export_weight}
        func_inference "${python}"
    fi
else
    echo ${python} ${norm_trainer} ${model_name} ${gpu_list}
    run_export=${norm_export}
    if [ ${run_export} != "null" ]; then
        echo ${save_infer_key} ${export_weight}
        func_inference "${python}"
    fi
fi
"""


def test_a_shift_among_lines_the_runner_never_uses_is_a_warning(tmp_path: Path) -> None:
    reads = [(i, GUARDED_NAMES.get(i, f"v{i}")) for i in range(1, 51) if i not in (13, 21, 22, 25, 26)]
    lines = standard()
    lines[29], lines[37] = "norm_export:null", "infer_export:null"
    short = lines[:44] + lines[45:]  # the inference block one line short
    root = project(tmp_path / "3d", {"test_train_inference_python.sh": runner(reads) + GUARDED_BODY},
                   {"pointnet/train_infer_python.txt": text(short)})
    config = root / "test_tipc/configs/pointnet/train_infer_python.txt"
    found = lint_of(config)
    assert errors(config) == [] and [f.rule for f in found if f.rule == "unused-shift"] == ["unused-shift"], found
    assert "never uses these lines for this config (it uses them only where infer_run_exports and run_export is not " \
        "null)" in next(f.message for f in found if f.rule == "unused-shift")
    round_trip_folder(root, tmp_path)
    # With an export command the runner runs inference and reads every later line from its neighbour.
    short[29] = "norm_export:export.py"
    config.write_text(text(short))
    assert [f.rule for f in errors(config)] == ["slot-shift"], lint_of(config)


# ---------------------------------------------------------------- generated runners and shifts

@st.composite
def runner_layouts(draw):
    """A layout of 40-70 lines (headers and `##` at drawn places) and a runner reading its keyed lines."""
    n = draw(st.integers(40, 70))
    seps = draw(st.sets(st.integers(4, n - 1), max_size=6))
    lines = [HEADER, "model_name:m", "python:python", "gpu_list:-1"]
    for i in range(4, n):
        lines.append("##" if i in seps else f"key_{i}:v{i}")
    keyed = [(i, lines[i].split(":")[0]) for i in range(1, n) if ":" in lines[i]]
    read = draw(st.lists(st.sampled_from(keyed), min_size=3, unique=True))
    parser = draw(st.sampled_from(["func_parser_value", "func_parser_value_lite", "parse_value"]))
    split_lines = draw(st.booleans())
    return lines, sorted(read), parser, split_lines


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=runner_layouts(), data=st.data())
def test_generated_runners_read_their_configs_and_catch_every_shift(layout, data) -> None:
    lines, reads, parser, split_lines = layout
    spec = runner_spec.spec_of(runner(reads, split_lines, parser=parser), "test_train_inference_python.sh")
    assert spec is not None and spec.split == (runner_spec.LINES if split_lines else runner_spec.WORDS)
    assert {(r.index, r.var) for r in spec.reads if r.load == 1} == set(reads)
    assert runner_spec.misreads(spec, text(lines)) == []
    assert runner_spec.reads_as_intended(spec, text(lines))
    # Delete a line above a named read, or insert one above or at it: that read (and every later one) lands on a
    # neighbour. (Deleting the last line the runner reads leaves no read shifted: it reads empty, as past the end.)
    last = reads[-1][0]
    if data.draw(st.booleans()):
        at = data.draw(st.integers(1, last - 1))
        shifted = lines[:at] + lines[at + 1:]
    else:
        at = data.draw(st.integers(1, last))
        shifted = lines[:at] + ["extra:1"] + lines[at:]
    assert runner_spec.misreads(spec, text(shifted)), (at, reads)
    assert not runner_spec.reads_as_intended(spec, text(shifted))


def test_indices_are_ascii_digits_of_bounded_length() -> None:
    assert runner_spec.index_of("12") == 12
    for bad in ("", "1" * 5000, "\u0661\u0662", "1a", "-1", "９"):
        assert runner_spec.index_of(bad) is None
    huge = 'x=$(func_parser_value "${lines[' + "9" * 5000 + ']}")\ny=$(func_parser_value "${lines[2]}")\n'
    spec = runner_spec.spec_of(huge, "r.sh")
    assert spec is not None and [r.index for r in spec.reads] == [2]
    assert runner_spec.spec_of("a" * (runner_spec.MAX_TEXT + 1), "r.sh") is None


def test_a_runner_is_read_once_per_text_and_an_edited_one_anew() -> None:
    """parse keeps each runner's reading by its text's digest: the same text is the same reading, an edit (one
    character) is read anew, the name is part of the key, and the memory is bounded."""
    first = runner([(1, "model_name"), (2, "python")])
    spec = runner_spec.spec_of(first, "r.sh")
    assert runner_spec.spec_of(first, "r.sh") is spec
    edited = runner_spec.spec_of(first.replace("lines[2]", "lines[3]"), "r.sh")
    assert {r.index for r in edited.reads if r.load == 1} == {1, 3} and {r.index for r in spec.reads if r.load == 1} == {1, 2}
    assert runner_spec.spec_of(first, "other.sh").name == "other.sh"
    for i in range(runner_spec._MAX_PARSED + 5):
        runner_spec.spec_of(first + f"# {i}\n", "r.sh")
    assert len(runner_spec._PARSED) <= runner_spec._MAX_PARSED


def test_reads_know_their_mode_branch_and_reload() -> None:
    spec = runner_spec.spec_of(runner([(1, "model_name")], mode_reads=((55, "run_mode_value"),)), "r.sh")
    by_var = {r.var: r for r in spec.reads}
    assert by_var["model_name"].mode is None and by_var["run_mode_value"].mode == "benchmark_train"
    assert by_var["python"].mode == "klquant_whole_infer" and by_var["python"].load == 2


# ---------------------------------------------------------------- kept configs

_LINE = st.text(st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="\x85\u2028\u2029"), max_size=40)


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(_LINE, max_size=12), final=st.booleans())
def test_a_kept_config_comes_back_byte_for_byte(lines: list[str], final: bool) -> None:
    written = "\n".join(lines) + ("\n" if final and lines else "")
    if not written.strip("\n") and written:
        written = "x" + written
    placeholder = "schema_version: 1\nmodel_name: m\ngpu_list: '-1'\ntrain:\n  norm: train.py\ninference:\n  script: null\n"
    desc = descriptor.load_text(placeholder + import_kept.import_kept(written, "c.txt", "m/c.txt"), source="c.txt")
    assert repository.kept_files([desc])["test_tipc/configs/m/c.txt"] == written


def test_import_of_a_kept_kind_and_onto_an_existing_file(tmp_path: Path) -> None:
    config = tmp_path / "serving.txt"
    config.write_text("===========================serving_params===========================\nmodel_name:m \n--opt:a: b")
    proc = tipcgen("import", str(config), "-o", str(tmp_path / "kept.yaml"), cwd=tmp_path)
    assert proc.returncode == 0 and "render it with: tipcgen init" in proc.stdout, proc.stderr
    # A descriptor of its own: init renders it alone, and writes the config back byte for byte.
    tipcgen("init", str(tmp_path / "kept.yaml"), "--root", str(tmp_path / "repo"), check=True)
    assert (tmp_path / "repo/test_tipc/configs/m/serving.txt").read_bytes() == config.read_bytes()
    (tmp_path / "other.yaml").write_text("x: 1\n")
    proc = tipcgen("import", str(config), "-o", str(tmp_path / "other.yaml"), cwd=tmp_path)
    assert proc.returncode == 2 and "exists and differs from the imported descriptor; nothing was written" in proc.stderr
    assert "tipcgen renders" not in proc.stderr and (tmp_path / "other.yaml").read_text() == "x: 1\n"


def test_a_kept_file_may_not_leave_the_configs_folder(tmp_path: Path) -> None:
    placeholder = "schema_version: 1\nmodel_name: m\ngpu_list: '-1'\ntrain:\n  norm: train.py\ninference:\n  script: null\n"
    for file in ("../x.txt", "/etc/x.txt", "m/../../x.txt", "m/x.sh", "m//x.txt"):
        # refused by the model's pattern (expected a .txt path ...) or, for a '..' it lets by, by kept.py (is not ...)
        with pytest.raises(descriptor.DescriptorError, match=r"kept\[0\]\.file: .*a \.txt path below test_tipc/configs/"):
            descriptor.load_text(placeholder + f"kept:\n  - file: '{file}'\n    lines: [a]\n", source="t.yaml")


# ---------------------------------------------------------------- the corpus

@pytest.fixture(scope="module")
def corpus_all():
    """The sweep over the three corpus folders, once (SHARED_RUNS puts its tests on one worker)."""
    return corpus_sweep.sweep_all()


@needs_corpus
def test_every_kind_of_every_suite_comes_back_and_lints_as_its_runner_reads_it(corpus_all) -> None:
    entries = corpus_all
    kinds: dict[str, list] = {}
    for entry in entries:
        kinds.setdefault(entry.kind, []).append(entry)
    for kind, found in kinds.items():
        back = sum(e.back == "byte" for e in found)
        assert back * 100 >= 98 * len(found), (kind, [(e.name, e.back) for e in found if e.back != "byte"])
    erring = [e.name for e in entries if lint.has_errors(e.findings)]
    assert erring == [corpus_sweep.SHIFTED], erring  # the one shifted OCR config, still caught
    assert [e.back for e in entries if e.name == corpus_sweep.SHIFTED][0].startswith(corpus_sweep.SHIFTED)


@needs_corpus
def test_the_layouts_doc_holds_the_table_per_suite_and_kind(corpus_all) -> None:
    assert corpus_sweep.kind_table(corpus_all) in (ROOT / "docs" / "LAYOUTS.md").read_text(), \
        "paste the output of: python tests/corpus_sweep.py"


# ---------------------------------------------------------------- unknown-flag findings that are true

def _flag_repo(tmp: Path, reads_batch: bool = True) -> Path:
    from test_chain_proof import TUTORIAL, _scripts
    _scripts(tmp)
    for model in ("m", "n"):
        config = tmp / f"test_tipc/configs/{model}/train_infer_python.txt"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(TUTORIAL.replace("model_name:m", f"model_name:{model}"))
    if not reads_batch:  # the repository's own runner: never reads line 8 (--batch-size), reads the rest
        lines = TUTORIAL.splitlines()
        reads = [(i, "model_name" if i == 1 else "python" if i == 2 else f"v{i}") for i in range(1, len(lines))
                 if i != 7 and ":" in lines[i]]
        # ... and uses each value it reads in a command, as a runner does (a key read and never used is never passed)
        used = 'cmd="' + " ".join(f"${{{var}}}" for _, var in reads) + '"\neval $cmd\n'
        (tmp / "test_tipc/test_train_inference_python.sh").write_text(runner(reads) + used)
    return tmp


def _flag_rules(repo: Path) -> list[tuple[str, str]]:
    # The probes run in the sandbox where bubblewrap works, unsandboxed elsewhere: which keys are checked is the same.
    found = lint.lint_report([repo / "test_tipc/configs"], repo, check_flags=True, unsandboxed=not SANDBOX)
    return [(Path(f.path).parent.name + ":" + str(f.line), f.rule) for f in found if f.rule in ("unknown-flag", "flags-unchecked")]


def test_a_script_using_parse_known_args_is_checked_by_what_it_does_with_the_rest(tmp_path: Path) -> None:
    """parse_known_args that drops the rest loses a key with no word (issue #59): an error still, saying so; a
    script that hands the rest on to other code (cfg.merge) may take it: no error, a warning that it is unchecked."""
    repo = _flag_repo(tmp_path)
    assert ("m:8", "unknown-flag") in _flag_rules(repo)  # --batch-size: train.py's argparse has --batch_size
    source = (repo / "train.py").read_text()
    (repo / "train.py").write_text(source.replace("p.parse_args()", "args, _ = p.parse_known_args()"))
    found = lint.lint_report([repo / "test_tipc/configs"], repo, check_flags=True, unsandboxed=not SANDBOX)
    dropped = [f.message for f in found if f.rule == "unknown-flag" and f.line == 8]
    assert dropped and all("which ignores it: `train.py --help` has no --batch-size (did you mean --batch_size?)" in m
                           and "parse_known_args (train.py:5)" in m for m in dropped), dropped
    (repo / "train.py").write_text(source.replace("p.parse_args()", "args, rest = p.parse_known_args()\ncfg.merge(rest)"))
    found = _flag_rules(repo)
    assert not any(rule == "unknown-flag" and where.endswith((":7", ":8")) for where, rule in found), found
    assert ("m:8", "flags-unchecked") in found, found


def test_a_key_the_runner_never_passes_is_not_checked(tmp_path: Path) -> None:
    repo = _flag_repo(tmp_path, reads_batch=False)
    found = _flag_rules(repo)
    assert ("m:8", "unknown-flag") not in found and ("m:7", "unknown-flag") in found, found


def test_a_missing_interpreter_or_unchecked_script_is_said_once_per_repository(tmp_path: Path) -> None:
    repo = _flag_repo(tmp_path)
    found = _flag_rules(repo)
    assert [rule for where, rule in found if rule == "flags-unchecked"] == ["flags-unchecked"], found  # infer.py, once
    for model in ("m", "n"):
        config = repo / f"test_tipc/configs/{model}/train_infer_python.txt"
        config.write_text(config.read_text().replace("python:python", "python:python3.7absent"))
    found = lint.lint_report([repo / "test_tipc/configs"], repo, check_flags=True, unsandboxed=not SANDBOX)
    said = [f for f in found if "is not on PATH" in f.message]
    assert len(said) == 1, [f.message for f in said]


def test_scripts_failing_on_one_missing_module_are_probed_once_and_said_once(tmp_path: Path, monkeypatch) -> None:
    """lint --root over a repository whose scripts' --help all fail on the same missing module: the first probe
    finds it, the scripts that import it are not probed again (nor for a second config), and it is said once."""
    from tipcgen.configs import flag_check

    repo = _flag_repo(tmp_path)
    for script in ("train.py", "export.py"):
        (repo / script).write_text("import tipcgen_absent_module\n" + (repo / script).read_text())
    probed: list[str] = []
    real = flag_check.script_flags
    monkeypatch.setattr(flag_check, "script_flags", lambda root, script, *a, **k: probed.append(script) or real(root, script, *a, **k))
    found = lint.lint_report([repo / "test_tipc/configs"], repo, check_flags=True, unsandboxed=True)
    unchecked = [f.message for f in found if f.rule == "flags-unchecked"]
    assert sum("tipcgen_absent_module" in m for m in unchecked) == 1, unchecked
    assert probed.count("train.py") + probed.count("export.py") <= 2 and len(probed) == len(set(probed)), probed
    assert flag_check.cause(unchecked[0]) in ("missing module tipcgen_absent_module", unchecked[0])


def test_a_second_colon_on_a_line_the_runner_splits_itself_is_no_warning() -> None:
    """PaddleRS's `model_name:cd:bit`, read by its own parse_first_value/parse_second_value: no colon-in-value."""
    lines, reads = own_layout()
    lines[1] = "model_name:cd:bit"
    spec = runner_spec.spec_of(runner([r for r in reads if r[0] != 1], name_first=True), "test_train_inference_python.sh")
    assert "colon-in-value" not in [f.rule for f in lint.lint_text(text(lines), "c.txt", specs=(spec,))]
    assert "colon-in-value" in [f.rule for f in lint.lint_text(text(lines), "c.txt")]  # read by func_parser_value


def test_inline_and_sed_reads_are_reads() -> None:
    spec = runner_spec.spec_of('dataline=$(cat $1)\nIFS=$\'\\n\'\nlines=(${dataline})\n'
                             'for t in $(func_parser_value "${lines[14]}"); do echo $t; done\n'
                             'name=$(sed -n 2p $FILENAME)\nbig=$(sed -n 99999999p $F)\n', "r.sh")
    assert sorted((r.index, r.var, r.parser) for r in spec.reads) == [(1, "name", "sed"), (14, "", "value")]
    assert runner_spec.unused(spec, "a:1\nb:2\n" * 10).get(14) is None  # an inline read is used where it is


# ---------------------------------------------------------------- learned from the repository's configs

def test_the_keys_a_repositorys_configs_share_find_a_shift_its_runner_names_nothing_at(tmp_path: Path) -> None:
    """A runner that reads its inference block into `*_key` variables names no key there; the keys its other
    configs hold at each line are learned, so a missing line there is still a slot shift."""
    lines, reads = own_layout()
    lines[40:50] = [f"--flag{i}:v" for i in range(40, 50)]
    reads = [(i, var if i < 40 or i >= 50 else f"flag_key{i}") for i, var in reads]
    configs = {f"m{n}/train_infer_python.txt": text([*lines[:1], f"model_name:m{n}", *lines[2:]]) for n in range(4)}
    root = project(tmp_path / "rs", {"test_train_inference_python.sh": runner(reads)}, configs)
    config = root / "test_tipc/configs/m0/train_infer_python.txt"
    assert errors(config) == []
    config.write_text(text([*lines[:44], *lines[45:]]))
    found = errors(config)
    assert [f.rule for f in found] == ["slot-shift"], lint_of(config)
    assert "reads lines[44] into flag_key44, but flag45: sits at idx 44, where the repository's other configs read by " \
        "this runner have it at idx 45 (a line missing above it)" in found[0].message


def _suite_configs(suite: str) -> list[Path]:
    return sorted(p for p in (corpus_sweep.WITH_RUNNERS / suite / "test_tipc/configs").rglob("*.txt")
                  if "train_infer_python" in p.name)


@needs_corpus
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_shifted_line_in_a_corpus_config_is_caught_by_its_own_runner(data) -> None:
    """PaddleRS's 52-line layout and PaddleYOLO's detection layout, read by their own runners (tipc-corpus-3):
    a line deleted or added anywhere among the lines the runner reads is a lint error, and import refuses it."""
    suite = data.draw(st.sampled_from(["PaddleRS", "PaddleYOLO"]))
    config = data.draw(st.sampled_from(_suite_configs(suite)))
    lines = config.read_text().split("\n")
    written = [i for i, line in enumerate(lines) if line.strip()]
    at = data.draw(st.sampled_from(written[1:50]))
    shifted = lines[:at] + lines[at + 1:] if data.draw(st.booleans()) else lines[:at] + ["extra:1"] + lines[at:]
    runner_, specs = family_pick.read_runner(config), family_pick.runner_specs(config)
    found = lint.lint_text("\n".join(shifted), str(config), runner=runner_, specs=specs)
    assert lint.has_errors(found), (at, [f.rule for f in found])
    with pytest.raises(ConfigImportError):
        import_kept.route("\n".join(shifted), runner_, specs, str(config))


# ---------------------------------------------------------------- held-out layout classes (tests/fixtures/runner_layouts)

LAYOUTS = ROOT / "tests/fixtures/runner_layouts"


def _copy(name: str, tmp: Path) -> Path:
    import shutil

    shutil.copytree(LAYOUTS / name, tmp / name)
    return tmp / name


def _shifts(config: Path) -> list[tuple[str, int, str]]:
    """Every line deleted, and an extra line added, among the lines of the file (after its first)."""
    lines = config.read_text().split("\n")
    written = [i for i, line in enumerate(lines) if line.strip()][1:]
    return ([("deleted", at, "\n".join(lines[:at] + lines[at + 1:])) for at in written]
            + [("added", at, "\n".join(lines[:at] + ["extra:1"] + lines[at:])) for at in written])


def test_a_ptq_config_in_its_own_runners_layout_is_that_runners(tmp_path: Path) -> None:
    """PaddleDetection-like: a 20-line PTQ layout tipcgen does not know, read line for line by the folder's
    test_ptq_inference_python.sh (its reads skip exactly the headers and '##'): no error, kept on import, back byte
    for byte; every line deleted or added is an error and a refusal."""
    root = _copy("detection", tmp_path)
    config = root / "test_tipc/configs/det_tiny/det_tiny_train_ptq_infer_python.txt"
    found = lint_of(config)
    assert errors(config) == [] and [f.rule for f in found if f.rule == "other-runner"] == ["other-runner"], found
    assert "test_ptq_inference_python.sh as intended (it reads all 20 lines" in next(f.message for f in found if f.rule == "other-runner")
    runner_, specs = family_pick.read_runner(config), family_pick.runner_specs(config)
    assert import_kept.route(config.read_text(), runner_, specs, str(config)) == import_kept.KEPT
    round_trip_folder(root, tmp_path)
    for how, at, shifted in _shifts(config):
        assert lint.has_errors(lint.lint_text(shifted, str(config), runner=runner_, specs=specs)), (how, at)
        with pytest.raises(ConfigImportError):
            import_kept.route(shifted, runner_, specs, str(config))
    # A trailing section after the layout is found by name: still the runner's layout.
    trailing = config.read_text() + "\n===========================infer_benchmark_params===========================\nx:1\n"
    assert not lint.has_errors(lint.lint_text(trailing, str(config), runner=runner_, specs=specs))


def test_a_null_trainer_its_own_mode_never_reads_is_a_warning(tmp_path: Path) -> None:
    """A KL config (trainer:null, infer_mode:kl_quant) its runner runs only in MODE=klquant_whole_infer, which reads
    no trainer: a warning, kept on import. The same null trainer in a config of another infer_mode is an error."""
    root = _copy("detection", tmp_path)
    config = root / "test_tipc/configs/det_tiny/det_tiny_KL_train_infer_python.txt"
    found = lint_of(config)
    assert errors(config) == [], found
    assert "runs this config in its MODE=klquant_whole_infer branch (infer_mode is kl_quant)" in next(
        f.message for f in found if f.rule == "null-value")
    config.write_text(config.read_text().replace("infer_mode:kl_quant", "infer_mode:norm"))
    assert [f.rule for f in errors(config)] == ["null-value"]
    config.write_text(config.read_text().replace("infer_mode:norm", "infer_mode:kl_quant"))
    round_trip_folder(root, tmp_path)


def test_a_detection_runners_own_configs_catch_every_shift(tmp_path: Path) -> None:
    """The detection runner's basic config: every line deleted or added among those it reads is an error."""
    root = _copy("detection", tmp_path)
    config = root / "test_tipc/configs/det_tiny/train_infer_python.txt"
    assert errors(config) == []
    runner_, specs = family_pick.read_runner(config), family_pick.runner_specs(config)
    missed = [(how, at) for how, at, shifted in _shifts(config) if at < 50
              and not lint.has_errors(lint.lint_text(shifted, str(config), runner=runner_, specs=specs))]
    assert missed == [], missed


def test_a_short_inference_block_its_runner_uses_only_in_a_loop_that_runs_nothing_is_a_warning(tmp_path: Path) -> None:
    """Paddle3D-like: the inference block one line short, its lines used only inside `for use_gpu in
    ${use_gpu_list}` under `if [ ${use_gpu} = True ] || ...`, and the device list null: unused-shift, kept, back byte
    for byte. With a device list the loop runs, and the same shift is an error."""
    root = _copy("threed", tmp_path)
    config = root / "test_tipc/configs/pillars/train_infer_python.txt"
    found = lint_of(config)
    assert errors(config) == [] and "unused-shift" in [f.rule for f in found], found
    assert "or where use_gpu is False or cpu, or where use_gpu is True or gpu" in next(
        f.message for f in found if f.rule == "unused-shift")
    round_trip_folder(root, tmp_path)
    # Only the null inference block goes unused: a line deleted or added above it is an error.
    runner_, specs = family_pick.read_runner(config), family_pick.runner_specs(config)
    missed = [(how, at) for how, at, shifted in _shifts(config) if at < 38
              and not lint.has_errors(lint.lint_text(shifted, str(config), runner=runner_, specs=specs))]
    assert missed == [], missed
    lines = config.read_text().split("\n")
    lines[40] = "--use_gpu:True|False"
    config.write_text("\n".join(lines))
    assert [f.rule for f in errors(config)] == ["slot-shift"], lint_of(config)


def test_runner_spec_reads_loops_member_guards_and_mode_ties() -> None:
    text = "\n".join([
        "IFS=$'\\n'", "lines=(${dataline})", 'dev_list=$(func_parser_value "${lines[3]}")', 'mode_list=$(func_parser_value "${lines[4]}")',
        'key9=$(func_parser_key "${lines[9]}")', 'for dev in ${dev_list[*]}; do',
        '    if [ ${dev} = "cpu" ] || [ ${dev} = "False" ]; then', '        echo ${key9}', '    fi', 'done',
        'if [ ${MODE} = "whole_infer" ] || [ ${MODE} = "kl_infer" ]; then',
        '    if [ ${MODE} = "kl_infer" ] && [ ${mode_kind} != "kl" ]; then', '        continue', '    fi',
        'else', '    echo ${key9}', 'fi'])
    spec = runner_spec.spec_of(text, "r.sh")
    assert ("dev", "dev_list") in spec.loops and spec.mode_ties == (("kl_infer", "mode_kind", "kl"),)
    assert any("dev=cpu|False" in guards for _, var, guards in spec.uses if var == "key9")
    assert runner_spec.guard_index(spec, "dev=cpu|False") == 3


def test_a_runner_reading_past_every_familys_layout_is_named_in_the_pick() -> None:
    """A runner that reads lines[32] (33 lines) fits no family: the pick from the headers says so."""
    from tipcgen.format import families
    from tipcgen.format.config import TipcConfig

    tutorial = (ROOT / "tests/fixtures/tutorial/test_tipc/configs").rglob("train_infer_python.txt")
    text = next(tutorial).read_text()
    reads = families.runner_reads(runner([(i, f"v{i}") for i in range(1, 33)]))
    pick = families.pick(TipcConfig.parse(text).logical_lines(), reads, "r.sh")
    assert pick is not None and "r.sh reads lines[0..32], which fits no family's layout" in pick.how, pick


def test_refusals_of_another_kind_say_an_before_a_vowel() -> None:
    from tipcgen.configs import import_compression, import_dy2static

    for importer_ in (import_compression.import_ptq, import_dy2static.import_dy2static):
        with pytest.raises(ConfigImportError, match="is an unknown config"):
            importer_("some:thing\nelse:here\n", "c.txt")


def test_a_runners_own_layout_keeps_a_shift_of_a_line_it_skips_as_the_family_does(tmp_path: Path) -> None:
    """NAFNet-like: a runner reading lines[0..32] (the tutorial layout and one line more) reads its config as
    intended (runner-layout); the tutorial family's '##' at idx 25 missing, a line the runner skips too, is still a
    slot shift for both (the runner's own layout does not silence a shift the runner agrees with)."""
    lines = (ROOT / "tests/fixtures/tutorial/test_tipc/configs/tutorial_model/train_infer_python.txt").read_text().split("\n")
    lines = [line for line in lines if line] + ["--noise-dir:./images/noise.npy"]
    reads = [(i, lines[i].split(":")[0].lstrip("-").replace("-", "_")) for i in range(1, len(lines)) if ":" in lines[i]]
    root = project(tmp_path / "naf", {"test_train_inference_python.sh": runner(reads)},
                   {"m/train_infer_python.txt": text(lines)})
    config = root / "test_tipc/configs/m/train_infer_python.txt"
    found = lint_of(config)
    assert errors(config) == [] and lint_runners.RUNNER_LAYOUT in [f.rule for f in lint.lint_report([config])], found
    config.write_text(text(lines[:25] + lines[26:]))
    assert [f.rule for f in errors(config)] == ["slot-shift"], lint_of(config)


def test_a_short_layout_of_its_own_runner_is_the_runners_not_unknown(tmp_path: Path) -> None:
    """A reproduction repository's 14-line layout (in no family) that its runner reads as intended: runner-layout
    (info), kept on import, not unknown-layout; a line deleted among those it reads is a slot shift."""
    lines = [HEADER, "model_name:m", "python:python", "gpu_list:0", "use_gpu:True", "##", "norm_train:main.py --epoch=1",
             "##", "===========================eval_params===========================", "eval:null", "null:null",
             "===========================infer_params===========================", "infer_export:export.py",
             "inference:infer.py --img x.jpg"]
    reads = [(1, "model_name"), (2, "python"), (3, "gpu_list"), (4, "use_gpu"), (6, "trainer_py"), (12, "export_py"),
             (13, "inference_py")]
    root = project(tmp_path / "repro", {"test_train_inference_python.sh": runner(reads)}, {"m/train_infer_python.txt": text(lines)})
    config = root / "test_tipc/configs/m/train_infer_python.txt"
    rules = [f.rule for f in lint.lint_report([config])]
    assert lint_runners.RUNNER_LAYOUT in rules and "unknown-layout" not in rules and errors(config) == [], rules
    round_trip_folder(root, tmp_path)
    config.write_text(text(lines[:5] + lines[6:]))
    assert [f.rule for f in errors(config)] == ["slot-shift"], lint_of(config)


def test_a_short_runner_reading_the_tutorial_separators_is_no_tutorial_runner() -> None:
    """A runner that reads 18 lines, among them lines the tutorial layout holds '##' at (11, 14): its reads fit no
    family, so the family comes from the headers, and the pick says the runner fits none."""
    from tipcgen.format import families
    from tipcgen.format.config import TipcConfig

    text_ = (ROOT / "tests/fixtures/tutorial/test_tipc/configs/tutorial_model/train_infer_python.txt").read_text()
    logical = TipcConfig.parse(text_).logical_lines()
    reads = families.runner_reads(runner([(i, f"v{i}") for i in range(1, 18) if i not in (6, 9)]))
    pick = families.pick(logical, reads, "r.sh")
    assert pick is not None and pick.how.startswith("from the headers") and "fits no family's layout" in pick.how
    tutorial = families.runner_reads(runner([(i, f"v{i}") for i in range(1, 32) if i not in (11, 14, 15, 17, 18, 22, 25)]))
    assert families.pick(logical, tutorial, "r.sh").how == "r.sh reads lines[0..31]"
