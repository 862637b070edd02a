"""The `kef` command of an installed wheel: the console entry point runs the kef executable that the
wheel carries in kef/bin (it finds libkef and the plugins through its relative run path)."""

import os
import sys


def executable():
    """The path of the wheel's kef executable (None when this package comes from a build tree)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "kef")
    return path if os.access(path, os.X_OK) else None


def main():
    exe = executable()
    if exe is None:
        sys.stderr.write("kef: this Python package has no kef executable (kef/bin/kef); it was not "
                         "installed from a wheel\n")
        return 2
    os.execv(exe, [exe] + sys.argv[1:])
    return 1  # not reached: execv replaces the process or raises OSError


if __name__ == "__main__":
    sys.exit(main())
