from rankmap.cli import main

main()
