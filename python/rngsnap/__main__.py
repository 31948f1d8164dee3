"""Layer api: `python -m rngsnap` and the `rngsnap` console script of the
wheel, the C command itself, exec'd, so its output and exit codes are the C
command's.

The wheel carries it in rngsnap/_bin (python/meson.build); a module built in
the build tree runs <build>/tools/rngsnap.  A `meson install` puts the
command in bindir instead, which the package does not know."""
import os
import sys

import rngsnap

_PACKAGED = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         "_bin", "rngsnap")


def command_path():
    """The rngsnap command this package runs, or None."""
    if os.path.isfile(_PACKAGED):
        return _PACKAGED
    if rngsnap._in_build_tree():
        built = os.path.join(rngsnap._rngsnap.BUILD_ROOT, "tools", "rngsnap")
        if os.path.isfile(built):
            return built
    return None


def main():
    exe = command_path()
    if exe is None:
        sys.stderr.write(
            "rngsnap: the rngsnap command is not inside this install of the "
            "package (%s); it comes with the wheel (pip install rngsnap, or "
            "pip install . from the sources); a `meson install` puts it in "
            "the prefix's bin folder: run it from there\n"
            % os.path.dirname(os.path.abspath(__file__)))
        sys.stderr.flush()
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    # argv[0] as a shell gives it; the command finds its files through
    # /proc/self/exe, not argv[0].
    os.execv(exe, ["rngsnap"] + sys.argv[1:])
    return 2  # not reached: execv returns only by raising


if __name__ == "__main__":
    sys.exit(main())
