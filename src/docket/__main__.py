from docket.cli import main

main()
