"""What a run is turned into: the report, goldens, the acceptance checklist, the support table."""
