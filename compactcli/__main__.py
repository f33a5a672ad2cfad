from compactcli.cli import main

main()
