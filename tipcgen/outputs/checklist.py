"""An acceptance checklist as data: items passed or failed, each with where and why (tipcgen accept)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class Item:
    id: str  # the tutorial's section, e.g. 2.2.1
    title: str
    passed: bool
    where: str  # file:line, a log, or the folder searched
    detail: str
    hint: str = ""


@dataclass
class Acceptance:
    root: Path
    run_dir: Path | None
    items: list[Item]

    @property
    def ok(self) -> bool:
        return all(item.passed for item in self.items)

    def to_dict(self) -> dict:
        return {"root": str(self.root), "run": str(self.run_dir) if self.run_dir else None, "ok": self.ok,
                "passed": sum(i.passed for i in self.items), "failed": sum(not i.passed for i in self.items),
                "items": [asdict(item) for item in self.items]}
