"""rngsnap: checkpoint and restore every random-number stream of a process.

    import rngsnap
    with rngsnap.Context() as ctx:
        ctx.seed_all(1234)
        s = ctx.stream("cpu", 0, "dropout")
        a = s.generate("f32", 1000)
        ctx.register_state("sampler", save=lambda: b"...", load=lambda b: None)
        ctx.save("ck.rngsnap")

See docs/python.md.  The rules this package keeps:

- Errors: every failed C call raises rngsnap.Error or its subclass for the
  code (MismatchError, CorruptError, OrderError, ... one per code), with
  .code, .name ("RNGSNAP_E_MISMATCH") and str() = the library's message.
- Callables of register_state(name, save=, load=) are kept alive by the
  context until close().  An exception raised in one (or a save returning
  something other than bytes: TypeError) fails the C call cleanly: save
  writes nothing, load rolls every state back.  ctx.save/ctx.load then
  raise the rngsnap.Error of the C call *from* that exception: it is the
  Error's __cause__, with its traceback; a KeyboardInterrupt or
  SystemExit in one is raised as itself.  save() is called once per C
  size/save pair (its bytes are kept between the two); a load calls it
  too, for the size hint and for the backup it rolls back to.
- register_generator(name, gen) saves a generator the job owns (torch,
  NumPy, random) as an app state in a versioned, pickle-free encoding;
  unregister_state(name) removes any app state.  Every save method first
  reports the generators of the process that no open context tracks
  (UntrackedGeneratorWarning, or UntrackedGeneratorError under
  Context(untracked="error")); every load method first refuses a load of
  a resumed context after a registered generator was drawn (OrderError).
- Draws, save, load and the multi-rank calls release the GIL; callables
  and collectives take it back.  A Stream keeps its Context alive; after
  close() every call on either raises Error.  A KeyedStream (s.derive)
  keeps its own position: use one per thread.

The package, in layers, each importing only from its own layer and the
ones below (tests/python/test_layers.py checks every import):

    core          rngsnap._rngsnap (the C binding), rngsnap._core: the
                  errors and the byte encodings
    context       rngsnap._context: what Context adds in Python (the
                  generators it owns, the checks of every save and load)
    api           this file, the public names; `python -m rngsnap`
    torch         rngsnap.torch: track(), keyed seeding, the sampler
    integrations  rngsnap.integrations: one module per framework

`import rngsnap` imports the first three only: no torch, NumPy or
framework.
"""
import pkgutil as _pkgutil

# In the build tree the extension lies in <build>/python/rngsnap and these
# files in <source>/python/rngsnap: one package from both folders.
__path__ = _pkgutil.extend_path(__path__, __name__)

from . import _rngsnap  # noqa: E402
from ._rngsnap import KeyedStream, Stream, dist_size  # noqa: E402,F401
from ._core.errors import (  # noqa: E402,F401
    BackendError, ConfigError, CorruptError, DurabilityError, Error,
    ExistsError, InvalidError, IOFailedError, MismatchError, NoMemoryError,
    OrderError, PluginError, UnavailableError, UntrackedGeneratorError,
    UntrackedGeneratorWarning)
from ._context.config import (  # noqa: E402,F401
    find_config, in_build_tree as _in_build_tree)
from ._context.context import Context  # noqa: E402,F401

__version__ = _rngsnap.version

DISTS = ("u32", "u64", "f32", "f64", "normal_f32", "normal_f64",
         "curand_uniform_f32", "curand_uniform_f64",
         "curand_normal_f32", "curand_normal_f64")
