"""The acceptance items checked on the repository alone: lite_data archive, entry points, READMEs.

Reading only: archives are listed, never extracted; scripts are found, never run (tipcgen.accept
puts these items together with those that need a run).
"""
from __future__ import annotations

import lzma
import re
import tarfile
import zipfile
from pathlib import Path

from tipcgen.core import inputs
from tipcgen.core.errors import TipcgenError
from tipcgen.core.text import terminal
from tipcgen.format.chains import BASIC
from tipcgen.format.config import TipcConfig
from tipcgen.format.paths import CONFIG_NAMES, CONFIGS, OUTPUT
from tipcgen.outputs.accept_archive import ArchiveLimit, archive_members, archive_problems
from tipcgen.outputs.checklist import Item
from tipcgen.results.summary import Summary
from tipcgen.results.summary_check import inside

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")
SEARCH_DEPTH = 3
MAX_ARCHIVES = 4  # archives checked, nearest first: a repository ships one
_SKIP_DIRS = {"output", "train_data", "log", "node_modules", "__pycache__", "site-packages", "build", "dist"}
_EXCERPT = 160


# ---------------------------------------------------------------- finding things

def _walk(root: Path, depth: int = SEARCH_DEPTH):
    """Files under root, at most depth folders down, skipping hidden and output folders."""
    stack = [(root, 0)]
    while stack:
        folder, level = stack.pop()
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(".") or entry.is_symlink():
                continue
            if entry.is_dir():
                if level < depth and entry.name not in _SKIP_DIRS and entry != root / OUTPUT:
                    stack.append((entry, level + 1))
            elif entry.is_file():
                yield entry


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _config(root: Path, summary: Summary | None) -> tuple[Path | None, TipcConfig | None]:
    path = inside(root, summary.config) if summary is not None else None  # never a config outside the root
    if path is None:
        found = sorted((root / CONFIGS).glob("*/" + CONFIG_NAMES[BASIC]))
        path = found[0] if found else None
    if path is None:
        return None, None
    return path, TipcConfig.parse(inputs.read_bytes(path, "config").decode("utf-8", errors="surrogateescape"))


def doc_text(path: Path) -> str:
    """A README or doc read through core.inputs (a regular file, at most 16 MiB), leniently decoded;
    "" for one that cannot be read (the item then says what is missing)."""
    try:
        return inputs.read_bytes(path, "document").decode("utf-8", errors="replace")
    except TipcgenError:
        return ""


def _script(config: TipcConfig | None, key: str) -> str | None:
    """The .py file a config line names (`norm_train:tools/train.py -c x.yml` → tools/train.py)."""
    value = config.get(key) if config else None
    return next((word for word in (value or "").split() if word.endswith(".py")), None)


def _script_dirs(root: Path, config: TipcConfig | None) -> list[Path]:
    """Where entry points live: beside the scripts the config names, the root, tools/, deploy/…/."""
    dirs = []
    for key in ("norm_train", "eval", "norm_export", "inference"):
        script = _script(config, key)
        if script:
            dirs.append((root / script).parent)
    dirs += [root, root / "tools", root / "deploy" / "inference_python"]
    return [d for d in dict.fromkeys(p.resolve() for p in dirs) if d.is_dir()]


def _find(dirs: list[Path], name: str) -> Path | None:
    return next((d / name for d in dirs if (d / name).is_file()), None)


# ---------------------------------------------------------------- 2.2.1 lite_data

def check_lite_data(root: Path, dirs: tuple[Path, ...] | list[Path] = ()) -> Item:
    """The first good archive, looking beside the entry points (dirs) first, then nearest the root."""
    title = "lite_data archive that unpacks to lite_data/"
    archives = sorted((p for p in _walk(root) if "lite_data" in p.name and p.name.endswith(ARCHIVE_SUFFIXES)),
                      key=lambda p: (p.parent.resolve() not in dirs, len(p.relative_to(root).parts), p.as_posix()))
    if not archives:
        return Item("2.2.1", title, False, "./",
                    f"no lite_data archive ({', '.join(ARCHIVE_SUFFIXES)}) within {SEARCH_DEPTH} folders of the root",
                    "tar -czf lite_data.tar.gz lite_data (the folder with a few train and eval samples) and commit it")
    failures = []
    if len(archives) > MAX_ARCHIVES:  # each is listed within its own budget: their number is bounded too
        failures.append(f"{len(archives) - MAX_ARCHIVES} more lite_data archive(s) not checked")
    for path in archives[:MAX_ARCHIVES]:
        try:
            members = archive_members(path)
        except ArchiveLimit as exc:
            failures.append(f"{terminal(_rel(path, root))}: not checked: {exc}")
            continue
        except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError, lzma.LZMAError) as exc:
            failures.append(f"{terminal(_rel(path, root))}: not a readable archive ({terminal(exc)})")
            continue
        problems = archive_problems(members)
        if not problems:
            files = sum(kind == "file" for _, kind in members)
            return Item("2.2.1", title, True, _rel(path, root), f"{files} file(s) under lite_data/")
        failures.append(f"{terminal(_rel(path, root))}: {'; '.join(problems)}")
    fix = "rebuild it from the folder itself: tar -czf lite_data.tar.gz lite_data"
    if all("it unpacks to " in failure for failure in failures):  # it exists and is safe, but its folder is another
        fix = ("rename the folder it holds to lite_data and pack it again (mv FOLDER lite_data && tar -czf lite_data.tar.gz "
               "lite_data), then point prepare.sh and the config at lite_data/")
    return Item("2.2.1", title, False, _rel(archives[0], root), " | ".join(failures), fix)


# ---------------------------------------------------------------- 2.2.2, 3.2: entry points

def check_entry_points(root: Path, dirs: list[Path], config: TipcConfig | None, item: str, names: tuple[str, ...],
                       keys: dict[str, str], title: str) -> Item:
    found, missing = [], []
    for name in names:
        path = _find(dirs, name)
        if path is None:
            named = _script(config, keys.get(name, ""))
            missing.append(f"{name}" + (f" (the config names {named})" if named and Path(named).name != name else ""))
        else:
            found.append(_rel(path, root))
    searched = ", ".join(_rel(d, root) or "." for d in dirs)
    if missing:
        return Item(item, title, False, searched, f"missing: {', '.join(missing)}" + (f"; found {', '.join(found)}" if found else ""),
                    "add the scripts under these names (the tutorial asks for them by name)")
    return Item(item, title, True, ", ".join(found), "all found")


# ---------------------------------------------------------------- documents

def readmes(root: Path, dirs: list[Path]) -> list[Path]:
    """The READMEs a reviewer reads: beside the entry points, then the root's."""
    found = [p for d in dirs for p in sorted(d.glob("README*.md")) if p.is_file()]
    return list(dict.fromkeys(found))


def _blocks(lines: list[str]) -> list[tuple[int, bool, str]]:
    """(line number, inside a fenced block, text) for every line; fence lines are outside."""
    out, fenced = [], False
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            out.append((number, False, line))
            continue
        out.append((number, fenced, line))
    return out


def _command_line(text: str, script: str) -> bool:
    """A command that runs script (`python tools/predict.py --img x.jpg`), not a mention in prose."""
    return bool(re.search(rf"(?:^|[\s/`]){re.escape(script)}(?:\s|`|$)", text)) and "python" in text


def check_predict_docs(root: Path, docs: list[Path], predict: Path | None) -> Item:
    title = "prediction on the training engine: predict.py, a demo input and its result documented"
    if predict is None:
        return Item("2.2.4", title, False, "-", "no predict.py (see 2.2.2)", "add predict.py: dygraph prediction on a demo input")
    for doc in docs:
        lines = doc_text(doc).splitlines()
        marked = _blocks(lines)
        for index, (number, fenced, text) in enumerate(marked):
            if not (fenced and _command_line(text, "predict.py")) or not re.search(r"predict\.py\S*\s+\S", text):
                continue
            after = marked[index + 1:]
            end = next((i for i, (_, f, t) in enumerate(after) if not f and t.startswith("#")), len(after))
            fences = [n for n, f, t in after[:end] if not f and t.lstrip().startswith(("```", "~~~"))]
            images = [n for n, f, t in after[:end] if not f and ("![" in t or "<img" in t)]
            result = fences[1] if len(fences) > 1 else images[0] if images else None  # fences[0] closes the command
            if result is not None:
                return Item("2.2.4", title, True, f"{_rel(doc, root)}:{number}",
                            f"command `{text.strip()[:_EXCERPT]}`; its result at line {result}")
    where = ", ".join(_rel(d, root) for d in docs) or "no README.md beside the entry points or at the root"
    return Item("2.2.4", title, False, where,
                "no README shows a `python ... predict.py <demo input>` command in a code block followed, before the "
                "next heading, by its result (a second code block or an image)",
                "document the demo command and paste what it printed under it")


def check_commands_documented(root: Path, docs: list[Path]) -> Item:
    title = "export_model.py and infer.py commands documented"
    found: list[str] = []
    missing: list[str] = []
    for script in ("export_model.py", "infer.py"):
        hit = next((f"{_rel(doc, root)}:{number}" for doc in docs
                    for number, line in enumerate(doc_text(doc).splitlines(), 1)
                    if _command_line(line, script)), None)
        (found if hit else missing).append(f"{script} at {hit}" if hit else script)
    if missing:
        where = ", ".join(_rel(d, root) for d in docs) or "no README.md"
        return Item("3.2.2", title, False, where, f"no `python ... {' / '.join(missing)}` command in the README(s)",
                    "document how to export the model and run Paddle Inference on it")
    return Item("3.2.2", title, True, "; ".join(found), "both documented")
