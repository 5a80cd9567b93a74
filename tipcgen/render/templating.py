"""The Jinja environment every output format is rendered with (templates/ is their only home).

A leaf: the renderer of test_tipc/ (repository.py), the summary and report writers and the docs all take
their templates from here, so none of them needs another's module to format text.
"""
from __future__ import annotations

import functools
import json
import shlex
from pathlib import Path

import jinja2

from tipcgen import __version__
from tipcgen.core.errors import TipcgenError
from tipcgen.core.text import terminal
from tipcgen.descriptor.schema import MODEL_NAME_RE
from tipcgen.format import chain, layout, words


def templates_dir() -> Path:
    package = Path(__file__).resolve().parents[1]  # tipcgen/: the wheel keeps templates/ inside it
    for candidate in (package / "templates", package.parent / "templates"):
        if candidate.is_dir():
            return candidate
    raise TipcgenError("tipcgen's templates are missing from the installation", "reinstall tipcgen")


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """One per process: templates compile once however many files, reports or suite rows it renders
    (the loader still reloads a template whose file changed)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        # Bash's ${#array[@]} would open a Jinja comment: templates use <#-- --#> for comments.
        comment_start_string="<#--",
        comment_end_string="--#>",
    )
    env.filters["sh"] = shlex.quote
    env.filters["json"] = functools.partial(json.dumps, ensure_ascii=False)  # a value in a JSON file (tipc_layouts)
    env.filters["terminal"] = terminal  # text from files and logs on a terminal: escapes neutralised
    env.globals["header"] = layout.header_line
    env.globals["version"] = __version__
    env.globals.update(words.template_context())  # {{ status.passed }}: the words Python reads
    env.globals.update(chain.template_context())  # templates name slots by field: {{ f.train.epochs }}
    env.globals["model_name_re"] = MODEL_NAME_RE.pattern  # the runner refuses a model_name init would refuse
    return env
