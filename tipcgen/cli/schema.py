"""`tipcgen schema`: the descriptor's JSON Schema, for editors with a YAML language server.

Thin: the schema is generated from the descriptor's model (tipcgen/descriptor/model.py); registered in cli.py with one line.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from tipcgen.cli.echo import echo


def schema(
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the schema to this file (default: print it)."),
    force: bool = typer.Option(False, "--force", help="Replace a different file at --output (the old one is kept under .tipcgen/backup/)."),
    path: bool = typer.Option(False, "--path", help="Print where the installed package keeps its copy (tipc.schema.json) instead."),
) -> None:
    """Print the JSON Schema of tipc.yaml, generated from tipcgen's own schema.

    With a YAML language server (VS Code's YAML extension, and others), put
    `# yaml-language-server: $schema=tipc.schema.json` on the first line of tipc.yaml to get
    completion and checks as you type (docs/DESCRIPTOR.md).

    Example: tipcgen schema -o tipc.schema.json
    """
    from tipcgen.core import writes
    from tipcgen.descriptor import model as descriptor_model
    from tipcgen.descriptor.schema import SCHEMA_FILE

    if path:
        echo(SCHEMA_FILE)
        return
    text = descriptor_model.json_text()
    if output is None:
        echo(text, nl=False)
        return
    writes.write_tree({output.name: text}, output.parent, force=force)
    echo(f"wrote {output}")
