"""Configs for tests, written by the one writer of the layout (repository.layout_text, the template), and the
round trip `tipcgen import` then `tipcgen init` make of one."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from tipcgen import descriptor
from tipcgen.configs.importer import import_config
from tipcgen.format import layout
from tipcgen.render import repository
from tipcgen.format.config import TipcConfig


def config_text(pairs: Mapping[str, tuple[str, str | None]],
                trailing: Sequence[tuple[str | None, Sequence[str]]] = ()) -> str:
    """The 51-line text from ``{slot_name: (key, value)}`` (a ``None`` value writes the key alone)."""
    lines = {name: key if value is None else f"{key}:{value}" for name, (key, value) in pairs.items()}
    return repository.layout_text("standard", lines, trailing)


def build(pairs: Mapping[str, tuple[str, str | None]],
          trailing: Sequence[tuple[str | None, Sequence[str]]] = ()) -> TipcConfig:
    return TipcConfig.parse(config_text(pairs, trailing))


def trailing_sections(config: TipcConfig) -> list[tuple[str | None, list[str]]]:
    """The logical lines after a conforming file's layout grouped by header, as ``build`` takes them:
    ``[(name, [line, ...])]``; lines before the first trailing header come first with the name ``None``."""
    table = layout.LAYOUTS[layout.LAYOUT_OF_KIND[config.kind]]
    sections: list[tuple[str | None, list[str]]] = []
    for line in config.logical_lines()[len(table):]:
        name = line.header_name
        if name is not None:
            sections.append((name, []))
        elif sections:
            sections[-1][1].append(line.text)
        else:
            sections.append((None, [line.text]))
    return sections


def round_trip(text: str, source: str = "t.txt") -> str:
    """import -> load the descriptor text -> render the config, as `tipcgen import` then `tipcgen init` do
    (independently of import_descriptor, which loads what it wrote itself)."""
    return repository.render_config(descriptor.load_text(import_config(text, source), source="t.yaml"))


def sample_slots() -> dict[str, tuple[str, str | None]]:
    """The bert-sst2 sample's slots: {slot_name: (key, value)}."""
    return {name: (value.key, value.value) for name, value in descriptor.load("bert-sst2").slots.items()}


def sample_config_text(**pairs: tuple[str, str | None]) -> str:
    """A 51-line config: the bert-sst2 sample's slots with some replaced."""
    return build({**sample_slots(), **pairs}).render()
