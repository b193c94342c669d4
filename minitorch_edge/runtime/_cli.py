"""The `mte-run` command: find the C executable mte-run (built by setup.py into this
package's bin/, or by `make -C native mte-run` in a source checkout) and replace this Python
process with it, passing the arguments through unchanged.

This module imports nothing from minitorch_edge.runtime so that the command works whatever
that package's loader needs.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CANDIDATES = (
    os.path.join(HERE, "bin", "mte-run"),  # installed: setup.py's build
    os.path.join(HERE, os.pardir, os.pardir, "native", "build", "mte-run"),  # source checkout
)


def binary():
    """Path of the mte-run executable ($MTE_RUN overrides), or None if none was built."""
    override = os.environ.get("MTE_RUN")
    for path in ((override,) if override else CANDIDATES):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.normpath(path)
    return None


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    path = binary()
    if path is None:
        where = os.environ.get("MTE_RUN") or " or ".join(os.path.normpath(c) for c in CANDIDATES)
        sys.stderr.write(
            f"mte-run: the mte-run executable was not found ({where}): it is built with "
            "the package's C parts, which were skipped (no C compiler at install time?). "
            "Reinstall with a C compiler, or build it in a checkout with "
            "`make -C native mte-run`.\n")
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [path] + args)


if __name__ == "__main__":
    sys.exit(main())
