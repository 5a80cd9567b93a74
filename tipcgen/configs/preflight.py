"""Config-level refusals before `tipcgen run` starts anything: a config with lint errors.

ARCHITECTURE.md layers run.py under the config model (run imports results, never lint), so this gate
lives one level up: the CLI hands ``refuse_lint_errors`` to ``run.run_chain(check_config=...)``, which
calls it where a refusal belongs (after the config is found, before any script or probe starts). It
uses ``lint.refusals``, the function ``tipcgen doctor --config`` reports with, so both refuse the same.
"""
from __future__ import annotations

from pathlib import Path

from tipcgen.core.errors import RunError


def refuse_lint_errors(root: Path, config_path: Path) -> None:
    """A RunError listing the first lint errors of the config (config_path relative to root)."""
    from tipcgen.configs import lint

    errors = lint.refusals(root / config_path, repo_root=root)
    if errors:
        shown = "; ".join(f"{config_path}:{f.line}: {f.message}" for f in errors[:5])
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise RunError(f"the config has {len(errors)} lint error(s): {shown}{more}",
                       "fix them (tipcgen lint lists every finding), or run from the repository root")
