"""The package's footing: its errors, the one safe reader of a user's files, the one safe writer, optional packages."""
