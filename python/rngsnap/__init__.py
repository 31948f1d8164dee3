"""rngsnap: checkpoint and restore every random-number stream of a process.

    import rngsnap
    with rngsnap.Context() as ctx:
        ctx.seed_all(1234)
        s = ctx.stream("cpu", 0, "dropout")
        a = s.generate("f32", 1000)
        ctx.register_state("sampler", save=lambda: b"...", load=lambda b: None)
        ctx.save("ck.rngsnap")

See docs/python.md.  Errors are rngsnap.Error subclasses; an exception raised
by a save/load callable is the __cause__ of the Error the call raises (the
load has then rolled back).
"""
import os as _os
import pkgutil as _pkgutil

# In the build tree the extension lies in <build>/python/rngsnap and these
# files in <source>/python/rngsnap: one package from both folders.
__path__ = _pkgutil.extend_path(__path__, __name__)

from . import _rngsnap  # noqa: E402
from ._rngsnap import (  # noqa: E402,F401
    BackendError, ConfigError, CorruptError, DurabilityError, Error,
    ExistsError, InvalidError, IOFailedError, KeyedStream, MismatchError,
    NoMemoryError, OrderError, PluginError, Stream, UnavailableError,
    dist_size)

__version__ = _rngsnap.version

DISTS = ("u32", "u64", "f32", "f64", "normal_f32", "normal_f64",
         "curand_uniform_f32", "curand_uniform_f64",
         "curand_normal_f32", "curand_normal_f64")

# rng.ini shipped inside the package by a pip (meson-python) install, with
# its plugins next to it; absent from a `meson install`.
_PACKAGE_CONFIG = _os.path.join(_os.path.dirname(__file__), "rng.ini")


def _secure_process():
    """True in a setuid/setgid process, where RNGSNAP_CONFIG is ignored."""
    try:
        return _os.getuid() != _os.geteuid() or _os.getgid() != _os.getegid()
    except AttributeError:
        return False


def _in_build_tree():
    """True when this _rngsnap is the one built in <build>/python/rngsnap."""
    root = _os.path.realpath(_rngsnap.BUILD_ROOT)
    here = _os.path.realpath(_os.path.dirname(_rngsnap.__file__))
    return here == _os.path.join(root, "python", "rngsnap")


def find_config():
    """The rng.ini a Context(config=None) opens, and why, in the order the
    rngsnap command uses: RNGSNAP_CONFIG; the build tree's rng.ini for the
    module built there; the package's own rng.ini (pip install); the
    installed default."""
    env = _os.environ.get("RNGSNAP_CONFIG")
    if env and not _secure_process():
        return env, "RNGSNAP_CONFIG"
    if _in_build_tree():
        return _rngsnap.BUILD_CONFIG, "build tree"
    if _os.path.exists(_PACKAGE_CONFIG):
        return _PACKAGE_CONFIG, "package"
    return _rngsnap.DEFAULT_CONFIG, "installed default"


class Context(_rngsnap.Context):
    """Context(config=None, resume=False): one rngsnap context.

    config None: see find_config().  resume=True: draws raise OrderError
    until load() succeeds, and seed_all after it.  A context manager;
    close() ends it, after which it and its streams raise Error."""

    def __init__(self, config=None, resume=False):
        if config is None:
            config = find_config()[0]
        super().__init__(config, resume)

    def __repr__(self):
        state = "closed" if self.closed else "open"
        return "<rngsnap.Context %s>" % state
