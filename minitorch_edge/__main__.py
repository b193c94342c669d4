"""``python -m minitorch_edge ...`` runs the command-line tools (see cli.py)."""
import sys

from .cli import main

sys.exit(main())
