"""Layer context: which rng.ini a Context(config=None) opens, and why
(docs/python.md, "Install"), in the order the rngsnap command uses."""
import os

from .. import _rngsnap

# rng.ini shipped inside the package by a pip (meson-python) install, with
# its plugins next to it; absent from a `meson install`.
PACKAGE_CONFIG = os.path.join(os.path.dirname(os.path.dirname(__file__)),
                              "rng.ini")

# What find_config()'s origin means, for the message of a failed open.
ORIGINS = {"RNGSNAP_CONFIG": "set by RNGSNAP_CONFIG",
           "build tree": "the build tree's rng.ini",
           "package": "the rng.ini installed inside the package",
           "installed default": "the installed default"}


def secure_process():
    """True in a setuid/setgid process, where RNGSNAP_CONFIG is ignored."""
    try:
        return os.getuid() != os.geteuid() or os.getgid() != os.getegid()
    except AttributeError:
        return False


def in_build_tree():
    """True when this _rngsnap is one built in <build>/python/rngsnap (or
    <build>/python/compat/rngsnap, for the -Dpython_compat interpreter)."""
    root = os.path.realpath(_rngsnap.BUILD_ROOT)
    here = os.path.realpath(os.path.dirname(_rngsnap.__file__))
    return here in (os.path.join(root, "python", "rngsnap"),
                    os.path.join(root, "python", "compat", "rngsnap"))


def find_config():
    """The rng.ini a Context(config=None) opens, and why, in the order the
    rngsnap command uses: RNGSNAP_CONFIG; the build tree's rng.ini for the
    module built there; the package's own rng.ini (pip install); the
    installed default."""
    env = os.environ.get("RNGSNAP_CONFIG")
    if env and not secure_process():
        return env, "RNGSNAP_CONFIG"
    if in_build_tree():
        return _rngsnap.BUILD_CONFIG, "build tree"
    if os.path.exists(PACKAGE_CONFIG):
        return PACKAGE_CONFIG, "package"
    return _rngsnap.DEFAULT_CONFIG, "installed default"
