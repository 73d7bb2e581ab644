"""``python -m ragloom`` runs the command line."""

from .cli.app import main

if __name__ == "__main__":
    main()
