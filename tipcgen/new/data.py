"""What ``tipcgen new`` needs to know about data and flag values on real repositories.

Lite data may be a file, a folder or an archive (prepare.sh unpacks .tar/.tgz/.zip into a folder);
a flag that takes a folder gets a folder, whatever the user shipped; a value fits the flag's help
(``--amp_level`` whose help says O1/O2 gets O1, never fp32; ``--amp`` taking ``O1 or none`` gets none).
"""
from __future__ import annotations

import re
from pathlib import Path

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")
# Names of flags that take a folder (compared as script_help.norm does: no dashes, '-' as '_', lower case).
FOLDER_FLAGS = {"data_dir", "dataset_dir", "data_root", "dataset_root", "root", "train_dir", "val_dir", "eval_dir",
                "test_dir", "img_dir", "images_dir", "image_folder", "img_folder", "data_folder", "input_dir",
                "infer_dir", "dataset_path"}
_FOLDER_HELP = re.compile(r"\b(folder|directory)\b", re.IGNORECASE)
_FILE_HELP = re.compile(r"\bfile\b", re.IGNORECASE)
_AMP_LEVELS = re.compile(r"\bO([0-3])\b")


def kind(path: Path) -> str:
    """file, folder or archive: how prepare.sh puts this lite data in place."""
    if path.is_dir():
        return "folder"
    if path.name.lower().endswith(ARCHIVE_SUFFIXES):
        return "archive"
    return "file"


def entry_name(role: str, source: Path) -> str:
    """The name of the lite data in the data folder: a file keeps its suffix, a folder or archive is a folder."""
    if kind(source) == "file":
        return f"{role}{''.join(source.suffixes[-1:])}"
    return role


def takes_folder(norm_name: str, help_text: str) -> bool:
    """Whether a flag names a folder: by its name (data_dir, --data-root, ...) or its help (no 'file' in it)."""
    if _FILE_HELP.search(help_text):
        return False
    return norm_name in FOLDER_FLAGS or bool(_FOLDER_HELP.search(help_text))


def amp_level(help_text: str, choices: tuple[str, ...]) -> str | None:
    """An AMP level flag's float32-most value that its help or choices allow (O1 when it offers O1/O2)."""
    levels = sorted({f"O{n}" for n in _AMP_LEVELS.findall(" ".join([help_text, *choices]))})
    return levels[0] if levels else None


_NONE = re.compile(r"\bnone\b", re.IGNORECASE)
_FP32 = re.compile(r"\b(fp32|float32)\b", re.IGNORECASE)
_DEFAULT = re.compile(r"\(?default:?\s*[^\s)]*\)?", re.IGNORECASE)  # argparse's "(default: None)" names no value
_FLOAT32_CHOICES = ("fp32", "float32", "none", "o0", "false", "no", "off")


def autocast_value(norm_name: str, help_text: str, choices: tuple[str, ...]) -> str | bool:
    """The train.autocast value that fits the flag: training in float32 where the flag allows it.

    Its choices first (fp32, none, O0, False: the float32 one, else the lowest AMP level); then its help
    (``O1 or none`` → none, ``O1/O2`` → O1, ``fp32 or fp16`` → fp32); a --use_amp/--amp switch without any
    of these takes False; anything else fp32."""
    if choices:
        lowered = [c.lower() for c in choices]
        for wanted in _FLOAT32_CHOICES:
            if wanted in lowered:
                return choices[lowered.index(wanted)]
        return amp_level("", choices) or choices[0]
    text = _DEFAULT.sub(" ", help_text)
    if _FP32.search(text):
        return "fp32"
    if _NONE.search(text):
        return "none"
    level = amp_level(text, ())
    if level is not None:
        return level
    return False if norm_name in ("use_amp", "amp", "enable_amp", "use_fp16", "fp16") else "fp32"


def kind_mismatch(norm_name: str, help_text: str, value: str) -> str | None:
    """What is wrong when a flag's help (else its name) says folder and it gets a file path, or says file and
    gets a folder; None when they agree or nothing says."""
    says_file, says_folder = bool(_FILE_HELP.search(help_text)), bool(_FOLDER_HELP.search(help_text))
    if says_file != says_folder:
        wants, why = ("file", "its help says file") if says_file else ("folder", "its help says folder")
    elif not says_file and (norm_name in FOLDER_FLAGS or norm_name.endswith("_dir")):
        wants, why = "folder", "by its name"
    else:
        return None
    is_file = Path(value.rstrip("/")).suffix != ""
    if wants == "folder" and is_file:
        return f"takes a folder ({why}), but gets the file {value}"
    if wants == "file" and not is_file:
        return f"takes a file ({why}), but gets the folder {value}"
    return None
