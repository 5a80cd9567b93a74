"""The Typer commands: parse arguments, call one library function, print, map errors to exit codes."""
