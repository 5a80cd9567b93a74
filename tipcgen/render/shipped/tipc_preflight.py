"""What a TIPC script checks before any step: its arguments, the config it reads, and the run folder it writes.

    python -I -S test_tipc/tipc_preflight.py open CONFIG MODE MODES...   the mode one of MODES, the config's lines
    python -I -S test_tipc/tipc_preflight.py check CONFIG MODE MODES...  and the config against its layout, its model's
                                  name and interpreter; its table
    python -I -S test_tipc/tipc_preflight.py layout NAME         a layout's table, unchecked (the dy2static runner)
    python -I -S test_tipc/tipc_preflight.py lines CONFIG [I...]  no conflict marker; lines I clean key:value lines
    python -I -S test_tipc/tipc_preflight.py sections CONFIG FIRST  the values of the sections after line FIRST
    python -I -S test_tipc/tipc_preflight.py start RUN_FOLDER PYTHON CONFIG MODEL  the model's name and settings, the
                                  interpreter; no link on the way, no other live run, the last run's folder moved
                                  aside without its weights, the CUDA devices PYTHON's paddle can use
    python -I -S test_tipc/tipc_preflight.py links PATH WHAT     no symbolic link on the way to PATH

tipc_steps.sh runs it (tipc_open, tipc_start_run, tipc_read_table; the scripts' tipc_check_lines): the scripts
read what it prints, one record a line, `WHAT NAME VALUE` (the config's lines, its layout's table, its sections, the
model's settings, then `end - 0`), as words into arrays, never as shell code. A refusal is one message on stderr (`tipc error: WHAT`
and `  hint: HOW`) and exit code 2, as the scripts' own tipc_die. The tables come from tipc_layouts.json beside it,
rendered by tipcgen from tipcgen/format/layout.py and the descriptors: the layouts of this repository's configs (per
layout its non-blank line count, its anchors: the keys every config of it has at fixed lines; the value shape of its
keyless lines; the line of each key:value slot), the key of each line of each model as its descriptor rendered it,
and each model's step time limit and step environment. Standard library only; imports nothing from tipcgen; runs on
any Python 3 the repository's scripts run on.
"""
import json
import os
import re
import shutil
import stat
import subprocess
import sys

SPACE = " \t\n\r\f\v"  # bash's [:space:]: what the scripts strip and split on
SHIFT_HINT = ("a line above it is missing or extra, so every later value would be read from the wrong line"
              " (tipcgen lint shows where)")
MARKER = re.compile(r"^(<{7,}|>{7,}|\|{7,})( |$)|^={7,}$")
FULL_WIDTH = ("\uff1a", "\uff5c")  # full-width ':' and '|'
ENV_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=[^\n\0]*\Z")  # a word of a model's step env after `env`: never a program


class Refused(Exception):
    """A check failed: what, and how to fix it."""

    def __init__(self, what, hint=""):
        super().__init__(what)
        self.what, self.hint = what, hint


def tables():
    """tipc_layouts.json beside this file."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tipc_layouts.json")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        raise Refused("cannot read %s: %s" % (path, error), "render test_tipc/ again with tipcgen init")


def load(path):
    """The config's non-blank lines (trailing whitespace dropped) and each one's line number in an editor: the
    lines the runners read by index. A CR line ending is refused (the value would keep it, and upstream's runners
    silently skip the step), and a NUL byte (no shell variable holds one)."""
    if not os.path.isfile(path):
        raise Refused("config file not found: %s" % path,
                      "pass a file such as test_tipc/configs/<model>/train_infer_python.txt")
    with open(path, encoding="utf-8", errors="surrogateescape", newline="\n") as f:
        text = f.read()
    for number, raw in enumerate(text.split("\n"), start=1):
        if raw.endswith("\r"):
            raise Refused("%s:%d: Windows line ending (CR)" % (path, number),
                          "convert the file to LF line endings, e.g. sed -i 's/\\r$//' %s" % path)
        if "\0" in raw:
            raise Refused("%s:%d: a NUL byte" % (path, number), "delete it: a config is text")
    return non_blank(text)


def non_blank(text):
    """A config text's non-blank lines, trailing whitespace dropped, and their line numbers."""
    lines, numbers = [], []
    for number, raw in enumerate(text.split("\n"), start=1):
        raw = raw.rstrip(SPACE)
        if raw:
            lines.append(raw)
            numbers.append(number)
    return lines, numbers


def line_name(line):
    """The name a line is known by: a ===header==='s name, else the text before the first ':'."""
    if len(line) >= 2 and line.startswith("=") and line.endswith("="):
        return line.strip("=").strip(SPACE)
    return line.split(":", 1)[0]


def items(value):
    """The |-separated items of a value as the runner splits them (bash's read -a drops one trailing empty item)."""
    return (value[:-1] if value.endswith("|") else value).split("|")


def is_null(value):
    return not value.strip(SPACE) or value == "null"


def pick(lines, layouts):
    """The layout whose anchors the config holds longest, in order (the first on a tie), and how many it holds:
    a shifted config is checked against the layout it was meant to follow."""
    best, most = None, -1
    for layout in layouts:
        held = 0
        for index, keys in layout["anchors"]:
            found = line_name(lines[index]) if index < len(lines) else ""
            if "/%s/" % found not in "/%s/" % keys:
                break
            held += 1
        if held > most:
            best, most = layout, held
    return best, most


def check_markers(path, lines, numbers):
    """No merge conflict marker (as tipcgen update --conflict markers writes them)."""
    for line, number in zip(lines, numbers):
        if MARKER.match(line):
            raise Refused("%s:%d: merge conflict marker '%s'" % (path, number, line),
                          "resolve the conflict (keep one side, delete the <<<<<<< ======= >>>>>>> lines), then run again")


def check_kv_line(path, lines, numbers, index):
    """A key:value line whose key (and flag value) has no stray whitespace and no full-width punctuation (the ASCII
    split would silently drop the flag)."""
    line, where = lines[index], "%s:%d" % (path, numbers[index])
    key = line.split(":", 1)[0]
    if len(line) >= 2 and line.startswith("=") and line.endswith("="):
        raise Refused("%s: a section header sits on non-blank line %d, where the layout has a key:value line"
                      % (where, index + 1), "a line above it is missing, so every later value would be read from the"
                      " wrong line (tipcgen lint shows where)")
    if any(mark in line for mark in FULL_WIDTH):
        raise Refused("%s: full-width ':' or '|' in '%s'" % (where, line),
                      "the runner splits only on ASCII ':' and '|': retype them")
    first = line.split(":", 1)[1][:1] if ":" in line else ""
    if ":" in line and (key != key.strip(SPACE) or (key.startswith("-") and first != "" and first in SPACE)):
        raise Refused("%s: whitespace around ':' in '%s'" % (where, line), "it would become part of the flag: write key:value")


def check_layout(path, lines, numbers, layout, held):
    """Every line the runner reads is where the layout says: its first anchor the config misses fails (unless the
    file ends before it), then a file cut short, then each key:value line."""
    if held < len(layout["anchors"]):
        index, keys = layout["anchors"][held]
        if index < len(lines):
            raise Refused("%s:%d: expected '%s' on non-blank line %d, found '%s'"
                          % (path, numbers[index], keys.replace("/", " or "), index + 1, lines[index]), SHIFT_HINT)
    if len(lines) < layout["lines"]:
        raise Refused("%s has %d non-blank lines; the train_infer_python layout has %d" % (path, len(lines), layout["lines"]),
                      "a line is missing (or the file was cut short): render the config with tipcgen init, or check it"
                      " with tipcgen lint")
    for index in sorted(layout["slots"].values()):
        check_kv_line(path, lines, numbers, index)


def check_keys(path, lines, numbers, keys):
    """Each line the model's descriptor rendered with a key still has that key (or the null filler), so a shifted
    line, even among the keyless inference lines, fails here instead of passing a value under the neighbouring
    flag. A key no other line has, with the next keyed line in place, was renamed. The null filler stands for a flag
    turned off, unless the key it replaces sits one line away."""
    def name_at(index):
        return line_name(lines[index]) if 0 <= index < len(lines) else ""

    expected = dict(keys)
    for i, (index, key) in enumerate(keys):
        found = name_at(index)
        if found == key:
            continue
        moved = any(name_at(near) == key and expected.get(near) != key for near in (index - 1, index + 1))
        if found == "null" and not moved:
            continue  # the null filler: the flag turned off (not the key itself one line away: a line missing or extra)
        renamed = found != "null" and all(other_index == index or other_key != found for other_index, other_key in keys)
        if i + 1 < len(keys) and name_at(keys[i + 1][0]) not in (keys[i + 1][1], "null"):
            renamed = False
        line = lines[index] if index < len(lines) else ""
        where = "%s:%s: expected key '%s' on non-blank line %d" % (
            path, numbers[index] if index < len(numbers) else "?", key, index + 1)
        if renamed:
            raise Refused("%s, found '%s': the key was renamed (the lines around it are in place, no line is missing)"
                          % (where, line), "restore '%s', or, if you renamed the flag on purpose, change the"
                          " descriptor's key and re-render (tipcgen update)" % key)
        raise Refused("%s, found '%s'" % (where, line), "a line above it is missing or extra (tipcgen lint shows"
                      " where); if you renamed the flag on purpose, change the descriptor and re-render (tipcgen update)")


def check_shapes(path, lines, numbers, layout):
    """Each keyless line whose values have one shape in every config of the layout (True/False, a number, a
    precision) holds values of that shape: an extra or missing line among them fails here instead of passing one
    flag's values under another's name."""
    for index, what, pattern in layout["shapes"]:
        line = lines[index]
        key, _, value = line.partition(":")
        if ":" not in line or is_null(key) or is_null(value):
            continue
        if not all(re.search(pattern, item) for item in items(value)):
            raise Refused("%s:%d: '%s' on non-blank line %d, where every %s config has values of the form %s"
                          % (path, numbers[index], line, index + 1, layout["name"], what),
                          "a line above it is missing or extra, so the runner would pass these values under another"
                          " flag (tipcgen lint shows where)")


def check_devices(path, lines, numbers, index):
    """The inference device values (the line at INDEX) are ones the runner runs: True/gpu or False/cpu, in any case
    (upstream's runners skip any other with a line of output; this one would fail at inference, after the training:
    here it fails before)."""
    if index is None or ":" not in lines[index] or is_null(lines[index].split(":", 1)[1]):
        return
    for item in items(lines[index].split(":", 1)[1]):
        if item.lower() not in ("true", "false", "gpu", "cpu"):
            raise Refused("%s:%d: inference device value '%s' on non-blank line %d is neither True/gpu nor False/cpu"
                          % (path, numbers[index], item, index + 1),
                          "the runner infers on the CPU (False or cpu) and on a GPU (True or gpu): write those")


def slot_value(lines, layout, name):
    """A slot's value as the scripts' slot_value reads it: after the line's first ':' ('' without one), null where
    the layout has no such slot."""
    index = layout["slots"].get(name)
    if index is None:
        return "null"
    return lines[index].split(":", 1)[1] if ":" in lines[index] else ""


def check_whole_infer(path, mode, lines, layout, known):
    """In whole_infer, the infer_model line names a trained model (the mode infers on those alone; a null or ##
    entry names none)."""
    whole = known["whole_infer"]
    value = slot_value(lines, layout, whole["slot"])
    if mode == whole["mode"] and all(is_null(item) or item == "##" for item in items(value)):
        raise Refused("%s: %s needs trained models in the %s line" % (path, mode, whole["slot"]),
                      "list model folders there (| separated)")


def table(layout):
    """The table the runner reads: its layout, then the line of each slot."""
    out = ["layout %s %d" % (layout["name"], layout["lines"])]
    out += ["slot %s %d" % (name, index) for name, index in sorted(layout["slots"].items())]
    return "\n".join(out)


def sections(lines, first):
    """The trailing sections' values (from line FIRST on) as the runners look them up (section_value): `section
    NAME:KEY VALUE` for the first line keyed KEY in a ===NAME=== section (a name or key with a space is never looked
    up, and would not read as one word)."""
    out, seen, name = [], set(), None
    for line in lines[first:]:
        if len(line) >= 2 and line.startswith("=") and line.endswith("="):
            name = line_name(line)
            continue
        key, colon, value = line.partition(":")
        where = "%s:%s" % (name, key)
        if name is None or where in seen or not where.isprintable() or any(c in where for c in SPACE):
            continue
        seen.add(where)
        out.append("section %s %s" % (where, value if colon else line))
    return out


def check_mode(mode, modes, known):
    """MODE is one of MODES (the script's); a first-version name is refused with the name it has now."""
    if mode in modes:
        return
    if mode in known["legacy_modes"]:
        raise Refused("mode '%s' is a legacy name" % mode, "use %s (modes: %s)" % (known["legacy_modes"][mode], " ".join(modes)))
    raise Refused("unknown mode '%s'" % mode, "use one of: %s" % " ".join(modes))


def config_lines(lines, numbers):
    """The lines the runners read by index (TIPC_LINES) and their line numbers (TIPC_LINENOS)."""
    return ["line %d %s" % (number, line) for line, number in zip(lines, numbers)]


def open_config(path, mode, *modes, known):
    """The mode; the config's lines."""
    check_mode(mode, modes, known)
    return "\n".join(config_lines(*load(path)))


def check(path, mode, *modes, known):
    """The mode; the config against the layout it was meant to follow (of KNOWN, tipc_layouts.json's), and its
    model's keys; the config's lines, its layout's table and its sections."""
    check_mode(mode, modes, known)
    lines, numbers = load(path)
    check_markers(path, lines, numbers)
    layout, held = pick(lines, known["layouts"])
    check_layout(path, lines, numbers, layout, held)
    model = slot_value(lines, layout, known["model_slot"])
    check_keys(path, lines, numbers, known["models"].get(model, []))
    check_shapes(path, lines, numbers, layout)
    check_devices(path, lines, numbers, layout["slots"].get(known.get("device_slot", "")))
    check_whole_infer(path, mode, lines, layout, known)
    check_begin(path, model, os.environ.get("TIPC_PYTHON") or slot_value(lines, layout, known["python_slot"]), known)
    return "\n".join(config_lines(lines, numbers) + [table(layout)] + sections(lines, layout["lines"]))


def named_layout(name, known):
    for layout in known["layouts"]:
        if name == layout["name"] or name in layout["also"]:
            return table(layout)
    raise Refused("internal: no layout table '%s' in tipc_layouts.json" % name, "render test_tipc/ again with tipcgen init")


def section_values(path, first):
    """The values of the sections after non-blank line FIRST (the paddle2onnx runner's, after its header)."""
    return "\n".join(sections(load(path)[0], first))


def check_lines(path, *indices):
    """No conflict marker; each line at INDICES (those the file has) a clean key:value line."""
    lines, numbers = load(path)
    check_markers(path, lines, numbers)
    for index in indices:
        if index < len(lines):
            check_kv_line(path, lines, numbers, index)


def no_links(path, what="the run folder"):
    """No component of PATH (from the repository root, the current folder) is a symbolic link: a committed
    test_tipc/output -> ~ (or train_data -> ~/data) would take the scripts' rm -rf and every file they write out of
    the repository. A folder outside the repository, named by the user, is theirs."""
    if path.startswith("/"):
        return
    walked = ""
    for part in path.split("/"):
        if part in ("", "."):
            continue
        walked = walked + "/" + part if walked else part
        if os.path.islink(walked):
            raise Refused("%s is a symbolic link to %s, on the way to %s %s: the scripts write and delete through no"
                          " link" % (walked, os.readlink(walked), what, path),
                          "remove the link (rm %s; the scripts create a real folder there), then run again" % walked)


def check_lock(run_folder):
    """Stop if a live tipcgen run other than ours holds RUN_FOLDER.lock (its pid and run id, as tipcgen/run/guard.py
    writes them): emptying the folder would mix two runs."""
    lock = run_folder + ".lock"
    if not os.path.isfile(lock):
        return
    with open(lock, encoding="utf-8", errors="replace") as f:
        text = f.read(65536)  # a record is a line of JSON
    run_id = os.environ.get("TIPC_RUN_ID", "")
    if run_id and '"run_id": "%s"' % run_id in text:
        return
    found = re.search(r'"pid": ([0-9]+)', text)
    if found:
        try:
            os.kill(int(found.group(1)), 0)
        except (OSError, OverflowError):
            return
        raise Refused("another run (tipcgen run, pid %s) is writing %s (lock: %s)" % (found.group(1), run_folder, lock),
                      "wait for it to finish, or stop it (kill %s)" % found.group(1))


def is_weight_file(path, suffixes):
    """A weight file by its name, or a pickle whatever its name: what tipcgen's records count as a checkpoint."""
    if path.endswith(tuple(suffixes)):
        return True
    try:
        with open(path, "rb") as f:
            return f.read(1) == b"\x80"
    except OSError:
        return False


def keep_previous(run_folder, suffixes):
    """The last run's folder, where there is one, moved aside to RUN_FOLDER.previous (an older one replaced; a link
    there refused), then emptied of what it must not keep: every link, FIFO or socket, and every weight file, so
    that its summary, junit.xml, report and logs survive a run that fails early or is stopped, and no checkpoint of
    it can pass for a new training or be the newest train run. tipcgen run does the same before prepare.sh
    (run/pipeline.py keep_previous): under it, the folder is gone by the time the runner starts."""
    previous = run_folder + ".previous"
    if not os.path.lexists(run_folder) or (os.path.isdir(run_folder) and not os.listdir(run_folder)):
        return
    no_links(previous, "the previous run's folder")
    if os.path.lexists(previous) and not os.path.isdir(previous):
        raise Refused("%s is a file, where the scripts keep the previous run's folder" % previous,
                      "move it away, then run again")
    shutil.rmtree(previous, ignore_errors=True)
    try:
        os.rename(run_folder, previous)
    except OSError:
        raise Refused("cannot move %s aside to %s" % (run_folder, previous), "check the folder's permissions")
    for folder, dirs, files in os.walk(previous):
        for name in dirs + files:
            path = os.path.join(folder, name)
            mode = os.lstat(path).st_mode
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)) or (stat.S_ISREG(mode) and is_weight_file(path, suffixes)):
                os.unlink(path)
        dirs[:] = [name for name in dirs if os.path.isdir(os.path.join(folder, name))]


def gpu_count(python):
    """How many CUDA devices paddle can use here, as PYTHON's paddle says (TIPC_GPU_COUNT overrides; no nvidia-smi
    means none, and paddle is not imported)."""
    if os.environ.get("TIPC_GPU_COUNT"):
        return os.environ["TIPC_GPU_COUNT"]
    if shutil.which("nvidia-smi") is None:
        return "0"
    probe = "import paddle; print(paddle.device.cuda.device_count() if paddle.device.is_compiled_with_cuda() else 0)"
    try:
        out = subprocess.run([python, "-c", probe], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL, universal_newlines=True).stdout.strip()
    except OSError:
        return "0"
    return out if out.isdigit() else "0"


def settings(model, known):
    """The model's step time limit (TIPC_STEP_TIMEOUT overrides it: whole seconds) and the env prefix of its export
    and inference steps, with the note its records carry: `timeout - N`, `env - WORD`, `note - TEXT`."""
    own = known["settings"].get(model, {})
    timeout = os.environ.get("TIPC_STEP_TIMEOUT") or str(own.get("timeout", known["default_timeout"]))
    if not (timeout.isascii() and timeout.isdigit() and 0 < int(timeout) <= known["max_timeout"]):
        raise Refused("TIPC_STEP_TIMEOUT=%s is not a step time limit" % timeout[:40],
                      "set it to whole seconds from 1 to %d, or unset it (the model's limit applies)" % known["max_timeout"])
    env = own.get("env", [])
    if env and (env[0] != "env" or not all(ENV_WORD.match(word) for word in env[1:])):
        raise Refused(("tipc_layouts.json: model %s's step env %s is not env NAME=VALUE..." % (model, env))[:300],
                      "render test_tipc/ again with tipcgen init (the words prefix each export and inference step)")
    return ["timeout - %s" % timeout, "note - %s" % own.get("note", "")] + ["env - %s" % word for word in env]


def check_model(config, model, known):
    """MODEL names a folder (the run folder's): letters, digits, '_', '-' and '.', no '..'."""
    if not re.search(known["model_name_re"], model) or "\n" in model or ".." in model:
        raise Refused("%s: model_name '%s' cannot name a folder" % (config, model), "use letters, digits, '_', '-' and '.'")


def check_begin(config, model, python, known):
    """The model's name (check_model) and its interpreter, on PATH (check, with the config's slots: tipcgen run's
    check of the config; start, for every script)."""
    check_model(config, model, known)
    if shutil.which(python) is None:
        raise Refused("the config's interpreter '%s' (line python:) is not on PATH" % python,
                      "write python:python in the config, or set TIPC_PYTHON to the interpreter to use")


def start(run_folder, python, config, model, known):
    """The model's name, the interpreter and the model's settings; the run folder made safe to write (no link on the
    way, no other live run, the last run moved aside) and the CUDA devices the run can use (`gpus - N`)."""
    check_begin(config, model, python, known)
    out = settings(model, known)
    no_links(run_folder)
    check_lock(run_folder)
    keep_previous(run_folder, known["weight_suffixes"])
    return "\n".join(out + ["gpus - %s" % gpu_count(python)])


# Each command: its function (those that answer return the text of their records, the others None), how many
# arguments it takes at least and at most (None: any), whether it reads the tables (tipc_layouts.json).
COMMANDS = {"open": (open_config, 2, None, True), "check": (check, 2, None, True), "layout": (named_layout, 1, 1, True),
            "start": (start, 4, 4, True), "lines": (check_lines, 1, None, False), "sections": (section_values, 2, 2, False),
            "links": (no_links, 2, 2, False)}


def main(argv):
    name, args = (argv[0], argv[1:]) if argv else ("", [])
    function, least, most, reads = COMMANDS.get(name, (None, 0, 0, False))
    if name in ("lines", "sections"):  # a file, then line indices
        if not all(arg.isascii() and arg.isdigit() for arg in args[1:]):
            function = None
        args = args[:1] + [int(arg) for arg in args[1:] if arg.isascii() and arg.isdigit()]
    if function is None or len(args) < least or (most is not None and len(args) > most):
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    try:
        out = function(*args, known=tables()) if reads else function(*args)
    except Refused as refused:
        message = "tipc error: %s\n" % refused.what + ("  hint: %s\n" % refused.hint if refused.hint else "")
        sys.stderr.buffer.write(message.encode("utf-8", "surrogateescape"))
        return 2
    if out is not None:  # an answer's last record: the scripts refuse one without it (an interpreter that is not Python)
        sys.stdout.buffer.write(((out + "\n" if out else "") + "end - 0\n").encode("utf-8", "surrogateescape"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
