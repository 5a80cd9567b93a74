from tipcgen.cli.app import main

main()
