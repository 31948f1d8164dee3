"""Layer core: where a warning of rngsnap points, the job's own line, past
rngsnap's frames between the job and the code that warns."""
import sys


def ours(frame):
    """Is frame one of rngsnap's (any module of the package)?"""
    name = frame.f_globals.get("__name__", "")
    return name == "rngsnap" or name.startswith("rngsnap.")


def stacklevel():
    """warnings.warn's stacklevel, for a warn() called by the caller of
    this function, that points at the first frame outside rngsnap."""
    level, f = 1, sys._getframe(1)
    while f is not None and ours(f):
        level += 1
        f = f.f_back
    return level
