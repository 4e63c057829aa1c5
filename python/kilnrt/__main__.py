"""`python -m kilnrt ...` and the `kilnrt` console script: run the command-line tool shipped in the package."""
import os
import sys

from . import cli_path


def main():
    path = cli_path()
    if path is None:
        sys.stderr.write("kilnrt: the command-line tool is not part of this installation\n")
        return 2
    os.execv(path, [path] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
