"""`python -m tokenmill` runs the same command line as the `tokenmill` script."""

from tokenmill.cli import main

if __name__ == "__main__":
    main()
