"""Issue #59 item 4: a key its script ignores is a finding. A script that parses with ``parse_known_args`` and drops
the rest loses a misspelt key (``--epohcs``) without a word; lint --root, doctor and run say so (run refuses before
any step), naming the config line, the descriptor field and the nearest flag. A script that hands the rest on
(``cfg.merge(rest)``), a second parser, ``-o`` overrides, ``key=value`` values and the abbreviations argparse takes
never fire. The shapes are generated (hypothesis); argparse itself is the oracle of what it takes."""
from __future__ import annotations

import argparse
import contextlib
import io
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from conftest import fuzz_examples, tipcgen
from tipcgen.configs import flag_check, preflight, script_rest
from tipcgen.configs.script_help import Flag
from tipcgen.configs.script_reading import edits, nearest_flag
from tipcgen.core.errors import RunError

from test_chain_proof import CONFIG, TUTORIAL, _scripts

_HEAD = "import argparse\n"
_WORDS = ("epochs", "batch_size", "output_dir", "lr", "learning_rate", "save_dir", "pretrained", "device", "use_gpu",
          "eval_freq", "log_interval", "seed", "num_workers", "model_dir", "data_path", "warmup_steps")
_name = st.from_regex(r"[a-z][a-z0-9]{1,6}(_[a-z0-9]{1,5})?", fullmatch=True)
_flag_names = st.lists(st.one_of(st.sampled_from(_WORDS), _name), min_size=1, max_size=6, unique=True)


def _parse(flags: list[str], key: str, abbrev: bool) -> bool:
    """What argparse does with KEY=1 under parse_known_args: True when one of its flags takes it."""
    parser = argparse.ArgumentParser(allow_abbrev=abbrev, add_help=False)
    for name in flags:
        parser.add_argument(name)
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            _, rest = parser.parse_known_args([f"{key}=1"])
        except SystemExit:  # an ambiguous prefix: argparse stops even under parse_known_args
            return False
    return not rest


@st.composite
def _misspelt(draw, word: str) -> str:
    """word with 1 or 2 edits: a letter changed, left out, added, or two neighbours swapped."""
    for _ in range(draw(st.integers(1, 2))):
        i = draw(st.integers(0, max(0, len(word) - 1)))
        op = draw(st.sampled_from(["sub", "del", "ins", "swap"] if len(word) > 2 else ["sub", "ins"]))
        letter = draw(st.sampled_from("abcdehilmnoprstuz"))
        word = {"sub": word[:i] + letter + word[i + 1:], "del": word[:i] + word[i + 1:],
                "ins": word[:i] + letter + word[i:],
                "swap": word[:i] + word[i + 1:i + 2] + word[i:i + 1] + word[i + 2:]}[op]
    return word or "x"


@st.composite
def _keys(draw):
    """(the script's flags, a key the runner passes, the flag the key was spelt from)."""
    names = draw(_flag_names)
    target = draw(st.sampled_from(names))
    how = draw(st.sampled_from(["exact", "prefix", "misspelt", "dashes", "other"]))
    word = {"exact": target, "prefix": target[:draw(st.integers(1, len(target)))], "other": draw(_name),
            "dashes": target.replace("_", "-"), "misspelt": None}[how]
    if word is None:
        word = draw(_misspelt(target))
    return [f"--{n}" for n in names], f"--{word}", f"--{target}"


# ---------------------------------------------------------------- what argparse takes, what is suggested

@settings(max_examples=fuzz_examples(400), deadline=None)
@given(_keys(), st.booleans())
@example((["--epochs", "--eval"], "--epoch", "--epochs"), True)  # argparse takes a prefix of one flag
@example((["--epochs", "--eval"], "--epoch", "--epochs"), False)  # ... not with allow_abbrev=False
@example((["--batch_size", "--batch_norm"], "--batch", "--batch_size"), True)  # ambiguous: argparse exits 2
def test_accepts_is_what_argparse_does(case, abbrev):
    flags, key, _ = case
    assert flag_check.accepts([Flag((f,), True) for f in flags], key, abbrev) == _parse(flags, key, abbrev), (flags, key)


@settings(max_examples=fuzz_examples(400), deadline=None)
@given(_flag_names, st.data())
@example(["epochs", "eval"], None)
def test_a_misspelling_at_one_or_two_edits_gets_the_nearest_flag(names, data):
    plain = [n.replace("_", "") for n in names]
    if data is None:  # the issue's --epohcs
        key, target = "--epohcs", "--epochs"
    else:
        target = data.draw(st.sampled_from([f"--{n}" for n in names]))
        key = "--" + data.draw(_misspelt(target[2:]))
    word = key[2:].replace("_", "").replace("-", "")
    target_plain = target[2:].replace("_", "")
    limit = 1 if len(word) <= 4 else 2
    close = nearest_flag(key, [f"--{n}" for n in names])
    if edits(word, target_plain, 3) <= limit:  # a near one is found, and none is nearer than what was misspelt
        assert close is not None, (key, names)
        assert edits(word, close[2:].replace("_", ""), 3) <= edits(word, target_plain, 3), (key, close, target)
    if close is not None and word in plain:
        assert close[2:].replace("_", "") == word


def test_the_issue_example_is_said_with_its_field_line_and_nearest_flag():
    item = flag_check.Passed("train", "train.py", 14, "--epohcs", 6, "train.epochs")
    rest = script_rest.read_source(_HEAD + "p = argparse.ArgumentParser()\np.add_argument('--epochs')\n"
                                   "args, unknown = p.parse_known_args()\n")
    problem = flag_check.judge(item, [Flag(("--epochs",), True), Flag(("--eval",), False)], rest)
    assert problem.severity == "error" and problem.line == 6
    assert problem.message == ("train passes --epohcs=... (line 6) to train.py (line 14), which ignores it: `train.py "
                               "--help` has no --epohcs (did you mean --epochs?), and train.py parses with "
                               "parse_known_args (train.py:4) and never uses what its parser does not know (unknown): "
                               "the setting is lost and the step still passes")
    assert problem.fix == ("make the key of train.epochs (in tipc.yaml; line 6 of the config) the script's flag "
                           "--epochs, or null to pass nothing")


# ---------------------------------------------------------------- the script's shapes

_PARSER = ("p = argparse.ArgumentParser({abbrev})\np.add_argument('--epochs', type=int)\n"
           "p.add_argument('--lr', help=argparse.SUPPRESS)\n")
# (what is done with the rest, the fate): {rest} is the rest's name, {p} the parser's
_USES = [
    ("", "drops"),
    ("print('unknown arguments:', {rest})\n", "drops"),
    ("import logging\nlogging.getLogger(__name__).warning('ignored: %s', ' '.join({rest}))\n", "drops"),
    ("if {rest}:\n    print('ignoring', {rest})\n", "drops"),
    ("if {rest}:\n    raise ValueError(f'unknown arguments {{{rest}}}')\n", "refuses"),
    ("if len({rest}) > 0:\n    {p}.error('unrecognized: ' + ' '.join({rest}))\n", "refuses"),
    ("assert not {rest}, {rest}\n", "refuses"),
    ("cfg.merge({rest})\n", "forwards"),  # the rest as config overrides
    ("cfg = Config.from_args({rest})\n", "forwards"),
    ("import sys\nsys.argv = [sys.argv[0]] + {rest}\n", "forwards"),  # for a parser further on
    ("q = argparse.ArgumentParser()\nq.add_argument('--warmup')\nmore = q.parse_args({rest})\n", "forwards"),
    ("main(args, {rest})\n", "forwards"),
    ("overrides = [x.split('=', 1) for x in {rest}]\n", "forwards"),
]
_ident = st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True).filter(lambda s: s not in {"p", "args", "argparse", "cfg",
                                                                                        "main", "more", "q", "x", "sys",
                                                                                        "overrides", "logging", "print",
                                                                                        "len", "if", "in", "is", "or",
                                                                                        "and", "not", "for", "as", "def"})


_SHAPES = ("parse_args", "tuple", "index", "wrapped", "wrapped_index", "statement")


def _shape(shape: str, use: int, rest: str = "rest", exact: bool = False) -> tuple[str, str]:
    """(source, expected fate) of a training script's argument parsing: a shape of its parse, what it does with
    the rest (_USES[use], for the shapes that keep it), the rest's name, allow_abbrev=False or not."""
    text = _HEAD + _PARSER.format(abbrev="allow_abbrev=False" if exact else "")
    done, fate = _USES[use]
    if shape == "parse_args":
        return text + "args = p.parse_args()\n", "refuses"
    if shape == "index":
        return text + "args = p.parse_known_args()[0]\n", "drops"
    if shape == "statement":
        return text + "p.parse_known_args()\n", "drops"
    if shape == "wrapped_index":
        return text + "def get_args():\n    return p.parse_known_args()[0]\nargs = get_args()\n", "drops"
    call = "p.parse_known_args()" if shape == "tuple" else "get_args()"
    head = "" if shape == "tuple" else "def get_args(argv=None):\n    return p.parse_known_args(argv)\n"
    return text + head + f"args, {rest} = {call}\n" + done.format(rest=rest, p="p"), fate


@st.composite
def _script(draw):
    """(source, expected fate, allow_abbrev=False?) of a training script's argument parsing."""
    exact = draw(st.booleans())
    source, fate = _shape(draw(st.sampled_from(_SHAPES)), draw(st.integers(0, len(_USES) - 1)), draw(_ident), exact)
    return source, fate, exact


@settings(max_examples=fuzz_examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_script())
def test_the_fate_of_an_unknown_key_is_read_from_the_shape(case):
    source, fate, exact = case
    found = script_rest.read_source(source)
    assert found.fate == fate, (source, found)
    second = "q = argparse.ArgumentParser()" in source  # a parser that takes prefixes: not exact then
    assert found.exact == (exact and not second) and "--epochs" in found.shown and found.hidden == {"--lr"}


@settings(max_examples=fuzz_examples(200), deadline=None)
@given(_script(), _keys())
def test_a_key_is_an_error_only_where_argparse_leaves_it_and_the_script_drops_or_refuses_it(case, keys):
    """The finding for a generated key and script: none where argparse takes the key (argparse is the oracle), an
    error where the script drops or refuses what it does not know, a note (no error) where it hands it on."""
    source, fate, _ = case
    flags, key, _ = keys
    rest = script_rest.read_source(source)
    exact = rest.exact
    item = flag_check.Passed("train", "train.py", 13, key, 5, "train.epochs")
    flags = sorted(set(flags) | rest.shown)  # the script's --help: the generated flags and those its source adds
    problem = flag_check.judge(item, [Flag((f,), True) for f in flags], rest)
    taken = _parse(sorted(set(flags) | rest.hidden), key, not exact)
    ambiguous = not exact and sum(f.startswith(key) for f in flags) > 1  # argparse exits 2, whatever the rest's fate
    if taken:
        assert problem is None, (key, flags, problem)
    elif fate == "forwards" and not ambiguous:
        assert problem.severity == "note" and "it is not checked" in problem.message
    else:
        assert problem.severity == "error" and "make the key of train.epochs" in problem.fix
        said = "which ignores it" if fate == "drops" and not ambiguous else "which does not accept it"
        assert said in problem.message, (fate, problem.message)


# ---------------------------------------------------------------- must not fire: real repositories' shapes

def _read(tmp_path: Path, files: dict[str, str]) -> script_rest.Rest:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return script_rest.read(tmp_path, "tools/train.py" if "tools/train.py" in files else "train.py")


def test_the_rest_forwarded_by_a_module_the_script_imports(tmp_path: Path):
    """paddlenlp-style: the parse sits in a local module that merges the rest into its config; PaddleClas-style
    `config.parse_args()` (a module's function, not a second parser)."""
    found = _read(tmp_path, {
        "tools/train.py": "import argparse\nfrom ppcls.utils import config\nargs = config.parse_args()\n",
        "ppcls/utils/__init__.py": "",
        "ppcls/utils/config.py": "import argparse\ndef parse_args():\n    p = argparse.ArgumentParser()\n"
                                 "    p.add_argument('-c', '--config')\n    args, rest = p.parse_known_args()\n"
                                 "    override(args, rest)\n    return args\n"})
    assert found.fate == "forwards" and "ppcls/utils/config.py:5" == found.where and "override()" in found.why


def test_a_second_parser_in_an_imported_module_reads_the_command_line(tmp_path: Path):
    """An imported module's own parser also reads sys.argv (its flags are not in the script's --help)."""
    found = _read(tmp_path, {
        "train.py": "import argparse\nimport options\np = argparse.ArgumentParser()\np.add_argument('--epochs')\n"
                    "args, _ = p.parse_known_args()\n",
        "options.py": "import argparse\nq = argparse.ArgumentParser()\nq.add_argument('--lr')\nopts, _ = q.parse_known_args()\n"})
    assert found.fate == "forwards" and "parsed 2 times" in found.why
    (tmp_path / "options.py").write_text("import sys\nLR = float(sys.argv[sys.argv.index('--lr') + 1])\n")
    assert _read(tmp_path, {}).fate == "forwards"  # sys.argv read by hand
    (tmp_path / "options.py").write_text("import absl.flags\n")
    assert "absl" in _read(tmp_path, {}).why
    (tmp_path / "options.py").write_text("def f(:\n    return sys.argv\n")  # a syntax this Python does not read
    assert "options.py (which it imports) could not be read" in _read(tmp_path, {}).why
    (tmp_path / "options.py").write_text("def f(:\n")  # no parse, no flag, no argv: it takes no key'
    assert _read(tmp_path, {}).fate == "drops"
    (tmp_path / "options.py").write_text("from paddlenlp.trainer import PdArgumentParser\n"
                                         "model_args, = PdArgumentParser([Args]).parse_args_into_dataclasses()\n")
    assert "parsed 2 times" in _read(tmp_path, {}).why  # paddlenlp's parser reads the command line too
    (tmp_path / "options.py").write_text("print('no parsing here')\n")
    assert _read(tmp_path, {}).fate == "drops"  # the one parse drops the rest: a finding


def test_a_help_printed_by_another_parser_says_nothing_of_a_dropped_key():
    """A --help that lacks a flag the source adds came from another parser (one imported at start-up, say):
    the key may be that one's, so it is a note, not an error."""
    rest = script_rest.read_source(_HEAD + "p = argparse.ArgumentParser()\np.add_argument('--epochs')\n"
                                   "p.add_argument('--warmup')\nargs, _ = p.parse_known_args()\n")
    item = flag_check.Passed("train", "train.py", 13, "--lr", 5, "train.extra")
    assert flag_check.judge(item, [Flag(("--epochs",), True), Flag(("--warmup",), True)], rest).severity == "error"
    problem = flag_check.judge(item, [Flag(("--config",), True)], rest)
    assert problem.severity == "note" and "which its --help does not list" in problem.message


@pytest.mark.parametrize("key", ["-o Global.epoch_num", "Global.epoch_num", "--opts", "epochs", "--epoch"])
def test_overrides_values_and_prefixes_never_fire(key):
    """PaddleOCR/PaddleClas/PaddleDetection `-o`, PaddleSeg `--opts`, a key=value positional: values, or flags
    the script has; --epoch: argparse takes the unambiguous prefix of --epochs."""
    rest = script_rest.read_source(_HEAD + "p = argparse.ArgumentParser()\np.add_argument('-o', '--opt', nargs='+')\n"
                                   "p.add_argument('--opts', nargs='+')\np.add_argument('--epochs')\n"
                                   "args, _ = p.parse_known_args()\n")
    flags = [Flag(("-o", "--opt"), True), Flag(("--opts",), True), Flag(("--epochs",), True)]
    assert flag_check.judge(flag_check.Passed("train", "train.py", 13, key, 5), flags, rest) is None


# ---------------------------------------------------------------- lint --root, doctor and run, real probes

_TRAIN = ("import argparse\np = argparse.ArgumentParser()\n"
          "for f in ('--epochs', '--output-dir', '--batch-size', '--test-only', '--pretrained'):\n"
          "    p.add_argument(f)\nargs, unknown = p.parse_known_args()\n")


def test_lint_root_reports_a_dropped_key_and_not_a_forwarded_one(tmp_path: Path):
    _scripts(tmp_path)
    (tmp_path / "train.py").write_text(_TRAIN)
    config = tmp_path / "test_tipc/configs/m/train_infer_python.txt"
    config.parent.mkdir(parents=True)
    config.write_text(TUTORIAL)
    clean = tipcgen("lint", str(config), "--root", str(tmp_path), "--trust-repo")
    erring = [line.split(": ")[0].rsplit(":", 1)[1] for line in clean.stdout.splitlines() if "unknown-flag" in line]
    assert erring == ["21"], clean.stdout  # export.py's --pretrained (a parse_args script): train's keys are flags
    config.write_text(TUTORIAL.replace("--epochs:", "--epohcs:"))
    lint = tipcgen("lint", str(config), "--root", str(tmp_path), "--trust-repo")
    found = [line for line in lint.stdout.splitlines() if "unknown-flag" in line and ":6:" in line]
    assert lint.returncode == 1 and len(found) == 1, lint.stdout
    assert "which ignores it: `train.py --help` has no --epohcs (did you mean --epochs?)" in found[0]
    assert "make the key of train.epochs (in tipc.yaml; line 6 of the config) the script's flag --epochs" in found[0]
    (tmp_path / "train.py").write_text(_TRAIN + "cfg.merge_from_list(unknown)\n")  # handed on: may be taken
    lint = tipcgen("lint", str(config), "--root", str(tmp_path), "--trust-repo")
    assert not any("unknown-flag" in line and ":6:" in line for line in lint.stdout.splitlines()), lint.stdout
    assert any("flags-unchecked" in line and "--epohcs" in line and "merge_from_list()" in line
               for line in lint.stdout.splitlines()), lint.stdout


def _stub_train(repo: Path, tail: str = "") -> None:
    """The stub's train step as a parse_known_args script that drops the rest, then the stub itself."""
    (repo / "stub/stub_train.py").write_text(
        "import argparse, os\np = argparse.ArgumentParser()\n"
        "for f in ('--device', '--auto_cast', '--epochs', '--output_dir', '--batch_size', '--init_from_ckpt', '--data_file'):\n"
        "    p.add_argument(f)\nargs, unknown = p.parse_known_args()\n" + tail +
        "path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'stub.py')\n"
        "with open(path, encoding='utf-8') as source:\n"
        "    exec(compile(source.read(), path, 'exec'), {'__name__': '__main__', '__file__': path, 'KIND': 'train'})\n")


def test_run_refuses_a_dropped_key_before_any_step_and_doctor_fails_it(stub_repo: Path):
    _stub_train(stub_repo)
    notes = preflight.refuse(stub_repo, Path(CONFIG))  # every key is a flag of train's script
    assert not any("stub_train" in note for note in notes) and len(notes) == 3, notes  # eval, export, infer: no argparse
    path = stub_repo / CONFIG
    text = path.read_text()
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.startswith("--epochs:"))
    path.write_text(text.replace("--epochs:", "--epohcs:"))
    proc = tipcgen("run", "--quiet", cwd=stub_repo)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{CONFIG}:{line}: train passes --epohcs=... (line {line}) to stub/stub_train.py" in proc.stderr
    assert "which ignores it" in proc.stderr and "did you mean --epochs?" in proc.stderr
    assert "make the key of train.epochs (in tipc.yaml" in proc.stderr and "Traceback" not in proc.stderr
    assert not (stub_repo / "test_tipc/output").exists()  # stopped before prepare.sh and every step
    doctor = tipcgen("doctor", "--trust-repo", cwd=stub_repo)
    fails = [row for row in doctor.stdout.splitlines() if row.startswith("FAIL  flags ")]
    assert doctor.returncode == 1 and len(fails) == 1 and "--epohcs" in fails[0] and "ignores it" in fails[0], doctor.stdout


def test_run_goes_on_where_the_script_hands_the_rest_on(stub_repo: Path):
    _stub_train(stub_repo, "overrides = dict(a.lstrip('-').split('=', 1) for a in unknown)\n")
    path = stub_repo / CONFIG
    path.write_text(path.read_text().replace("--epochs:", "--epohcs:"))
    notes = [note for note in preflight.refuse(stub_repo, Path(CONFIG)) if "stub_train" in note]
    assert len(notes) == 1 and "--epohcs" in notes[0] and "it is not checked" in notes[0], notes
    _stub_train(stub_repo, "if unknown:\n    p.error('unrecognized arguments: ' + ' '.join(unknown))\n")
    with pytest.raises(RunError, match="which does not accept it"):  # it stops on it: the step would fail
        preflight.refuse(stub_repo, Path(CONFIG))


# ---------------------------------------------------------------- hostile sources

_DROPS = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs')\nargs, _ = p.parse_known_args()\n"


def test_modules_out_of_reach_make_the_rest_unknown_never_an_error(tmp_path: Path):
    """A module linked out of the repository, a FIFO, a relative import above it, circular imports, more local
    files than are read: the reading stops, says what it could not read, and no key is an error."""
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "pkg").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.py").write_text("x = 1\n")
    (repo / "secret.py").symlink_to(outside / "secret.py")
    (repo / "train.py").write_text("import secret\n" + _DROPS)
    found = script_rest.read(repo, "train.py")
    assert found.fate == "forwards" and "secret.py (which it imports) could not be read" in found.why
    (repo / "secret.py").unlink()
    os.mkfifo(repo / "secret.py")
    assert script_rest.read(repo, "train.py").fate == "forwards"  # never waited on
    (repo / "secret.py").unlink()
    (repo / "pkg/a.py").write_text("from . import b\nfrom .... import far\n")
    (repo / "pkg/b.py").write_text("from . import a\n")
    (repo / "train.py").write_text("from pkg import a\n" + _DROPS)
    assert script_rest.read(repo, "train.py").fate == "drops"  # a cycle is read once
    for i in range(script_rest.MAX_FILES + 1):
        (repo / f"m{i}.py").write_text(f"import m{i + 1}\n")
    (repo / "train.py").write_text("import m0\n" + _DROPS)
    assert f"more than {script_rest.MAX_FILES} local files" in script_rest.read(repo, "train.py").why


_PIECES = [*"()[]{}:=,._ \n\t'\"#*-+", "parse_known_args", "import ", "from ", "sys.argv", "args", "rest", "_", "[0]",
           "return ", "def f(a):", "if ", "raise ", "print(", "p.", "x"]


@settings(max_examples=fuzz_examples(300), deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=120).map("".join))
def test_any_text_reads_to_a_fate_without_an_exception(text):
    found = script_rest.read_source(text)
    assert found.fate in ("refuses", "drops", "forwards")
    assert found.fate != "drops" or "parse_known" in text


def test_a_script_that_parses_with_parse_args_refuses_whatever_its_modules_do(tmp_path: Path):
    """The script's own parse_args stops on an unknown key (as before issue #59), even where a module it imports
    has a parse_known_args of its own (another tool's, say)."""
    found = _read(tmp_path, {
        "train.py": "import argparse\nimport helpers\np = argparse.ArgumentParser()\np.add_argument('--epochs')\n"
                    "args = p.parse_args()\n",
        "helpers.py": "import argparse\ndef other_tool():\n    q = argparse.ArgumentParser()\n"
                      "    a, rest = q.parse_known_args()\n    run(rest)\n"})
    assert found.fate == "refuses"


_SINKS = '''
FORWARDED = []
class _Cfg:
    def merge(self, rest):
        FORWARDED.extend(rest)
cfg = _Cfg()
class Config:
    @staticmethod
    def from_args(rest):
        FORWARDED.extend(rest)
def main(args, rest):
    FORWARDED.extend(rest)
'''


@pytest.mark.parametrize("shape, use", [(shape, use) for shape in _SHAPES for use in range(len(_USES))
                                        if shape in ("tuple", "wrapped") or use == 0])
def test_the_shapes_fate_is_what_the_script_does_when_it_runs(shape, use):
    """Each shape runs (in this process, argv a misspelt key): a script read as dropping the key ends normally with
    the key nowhere but its rest; one read as refusing stops; one read as handing it on hands it to code that may
    take it (a sink recorded here) or stops (a second parser that refuses it)."""
    import sys

    source, fate = _shape(shape, use)
    assert script_rest.read_source(source).fate == fate
    key = "--epohcs=3"
    saved = sys.argv
    sys.argv = given_argv = ["train.py", key]  # a script that sets sys.argv anew hands it on
    scope: dict = {"__name__": "__main__"}
    try:
        exec(compile(_SINKS, "sinks", "exec"), scope)
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            try:
                exec(compile(source, "train.py", "exec"), scope)
                stopped = False
            except (SystemExit, ValueError, AssertionError):
                stopped = True
        handed = key in scope["FORWARDED"] or sys.argv is not given_argv or "--epohcs" in str(scope.get("overrides", ""))
        parsed = vars(scope["args"]) if isinstance(scope.get("args"), argparse.Namespace) else {}
    finally:
        sys.argv = saved
    assert "epohcs" not in str(parsed)  # no flag of the parser took it
    if fate == "drops":
        assert not stopped and not handed, source
    elif fate == "refuses":
        assert stopped, source
    else:
        assert stopped or handed, source
