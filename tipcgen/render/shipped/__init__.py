"""The Python scripts test_tipc/ ships beside the runner, as real modules (linted, tested, measured by
coverage). `render` copies each into test_tipc/ under its own name with a header line
(templates/runner/shipped.py.j2). They import nothing from tipcgen, only each other (`tipc_compare`,
found beside them in test_tipc/): a reviewer runs them with paddle and numpy alone."""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = ("check_inference.py", "compare_results.py", "tipc_compare.py", "benchmark_analysis.py", "check_quant.py",
           "unpack_archive.py", "check_dy2static.py", "check_fleet.py", "tipc_preflight.py")


def source(name: str) -> str:
    """The text of one shipped script, as this package holds it."""
    if name not in SCRIPTS:
        raise ValueError(f"not a shipped script: {name}")
    return (HERE / name).read_text(encoding="utf-8")
