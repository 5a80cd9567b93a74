"""``tipcgen new``'s view of a script's ``--help``: the probe moved to ``configs/script_help.py`` (run's
preflight, lint and import check flags with it too, and configs sits below new); these names stay here."""
from __future__ import annotations

from tipcgen.configs.script_help import (
    PROBE_TIMEOUT,
    SCRIPT_OPTION,
    Flag,
    Script,
    loose,
    norm,
    parse_help,
    probe,
)

__all__ = ["PROBE_TIMEOUT", "SCRIPT_OPTION", "Flag", "Script", "loose", "norm", "parse_help", "probe"]
