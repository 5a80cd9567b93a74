"""`python -m tipcgen`: the same entry point as the `tipcgen` command."""
from tipcgen.cli.app import main

main()
