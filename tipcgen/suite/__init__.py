"""Many configs and modes in one command, on this machine or as Ray tasks, and their table."""
