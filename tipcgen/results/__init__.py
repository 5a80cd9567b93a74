"""A chain's records and logs into a Summary, and its text forms (terminal table, JUnit XML)."""
