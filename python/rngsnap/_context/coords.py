"""Layer context: ctx.set_coords(**coords) and ctx.coords, a rank's
parallel coordinates (docs/python.md, "Parallel coordinates").

The core keeps them as text in canonical form ("dp=3,ep=2,pp=0,tp=1":
sorted by name, rngsnap_set_coords) and checks the names and the upper
bound itself, naming the pair.  What only Python can get wrong is checked
here first, in Python's words: a value that is not an int (a bool counts
as not: True would be saved as 1), and a negative one (the core would
call "-1" a non-digit).
"""

import operator
import types

from .._core.errors import InvalidError, error

CALL = "ctx.set_coords(...)"


def text(coords):
    """The core's text for keyword arguments {name: int}."""
    pairs = []
    for name, value in coords.items():
        if isinstance(value, bool) or not hasattr(type(value), "__index__"):
            raise TypeError("%s: %s=%r is a %s; a coordinate is an int "
                            "(e.g. dp=3)" % (CALL, name, value,
                                             type(value).__name__))
        number = operator.index(value)
        if number < 0:
            raise error(InvalidError, "%s: %s=%d is negative; a coordinate "
                        "is an int in 0 .. 2**31 - 1" % (CALL, name, number))
        pairs.append("%s=%d" % (name, number))
    return ",".join(pairs)


def parse(canonical):
    """A read-only {name: int} of the core's canonical text, in its order
    (sorted by name); empty for ""."""
    pairs = (p.split("=", 1) for p in canonical.split(",") if p)
    return types.MappingProxyType({n: int(v) for n, v in pairs})
