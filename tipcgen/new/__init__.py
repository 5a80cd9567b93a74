"""`tipcgen new`: probe a repository's scripts and write a descriptor for it."""
