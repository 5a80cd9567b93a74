"""Descriptor to files: the Jinja environment, the rendered test_tipc/ tree, update's three-way merge, .gitignore."""
