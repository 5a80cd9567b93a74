"""Running a chain: the generated scripts as subprocesses, the run guard, provenance, a kept runner, doctor."""
