"""Layer core: rngsnap's exception classes and the helpers that raise them
as the C extension does (docs/python.md, "The API").

The classes are the binding's, one per C error code (rngsnap._rngsnap),
plus the untracked report's warning and error.  error() builds an error
of ours with .code and .name set, marked as raised by the Python layer;
raised_by_python() finds such an error behind the core's report of a
failed callable.  rngsnap re-exports every class under its public name.
"""

from .._rngsnap import (  # noqa: F401 (re-exported by rngsnap)
    BackendError, ConfigError, CorruptError, DurabilityError, Error,
    ExistsError, InvalidError, IOFailedError, MismatchError, NoMemoryError,
    OrderError, PluginError, UnavailableError)


class UntrackedGeneratorWarning(UserWarning):
    """A save found generators that are in no checkpoint."""


class UntrackedGeneratorError(InvalidError):
    """A save refused (Context(untracked="error")): generators that are
    in no checkpoint live in the process."""


# Where users name them (the binding's classes say "rngsnap" too).
UntrackedGeneratorWarning.__module__ = "rngsnap"
UntrackedGeneratorError.__module__ = "rngsnap"

# Every error class, by name: the one another rank's failure names.
BY_NAME = {c.__name__: c for c in (
    BackendError, ConfigError, CorruptError, DurabilityError, Error,
    ExistsError, InvalidError, IOFailedError, MismatchError, NoMemoryError,
    OrderError, PluginError, UnavailableError, UntrackedGeneratorError)}

# The C codes of the classes raised here (rngsnap.h), for .code/.name
# as the extension sets them on the errors it raises.
_CODES = {ConfigError: (1, "RNGSNAP_E_CONFIG"),
          CorruptError: (6, "RNGSNAP_E_CORRUPT"),
          MismatchError: (7, "RNGSNAP_E_MISMATCH"),
          OrderError: (8, "RNGSNAP_E_ORDER"),
          InvalidError: (9, "RNGSNAP_E_INVALID")}


def error(cls, message):
    """An rngsnap error of class cls with message, .code and .name, marked
    as raised by rngsnap's Python layer (rngsnap.torch re-raises it from a
    failed load instead of the core's BackendError)."""
    e = cls(message)
    # A subclass of ours (UntrackedGeneratorError) takes its base's code.
    e.code, e.name = next(v for k, v in _CODES.items() if issubclass(cls, k))
    e.rngsnap_python = True
    return e


def raised_by_python(e):
    """The error to raise for e, an rngsnap.Error of the core whose cause
    is an error of ours raised in a callable (a malformed state, a kind
    mismatch): the cause's class, its text first, then the core's in
    parentheses, less its copy of the cause's text; else None."""
    c = e.__cause__
    if not getattr(c, "rngsnap_python", False):
        return None
    core = str(e).split("; the callable raised ")[0]
    return error(type(c), "%s\n(%s)" % (c, core))
