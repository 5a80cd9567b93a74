"""Existing configs and repositories: lint, import into a descriptor, the legacy formats, submission mode's kept files, the run's preflight."""
