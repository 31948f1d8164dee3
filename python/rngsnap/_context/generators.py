"""Layer context: generators a job owns, as app states:
ctx.register_generator(name, gen) (docs/python.md, "register_generator").

An Adapter reads a live generator as its encoded state (genstate.py) and
sets it from one; a Registry keeps a context's registrations and the
state of each at registration, for the order check of a resumed context
(order.py: a generator drawn between register_generator() and the load
refuses the load, as rngsnap.torch.track() does for the global
generators).
Nothing here imports torch or NumPy: a generator of theirs exists only
once they are imported.
"""

import sys
import weakref

from . import reseed
from .order import awaiting_load
from .._core import genstate as _gs
from .._core import ledger_digest as _ld
from .._core.tensor_bytes import bytes_tensor, tensor_bytes

SUPPORTED = ("torch.Generator (any device); numpy.random.Generator or its "
             "bit generator (%s); numpy.random.RandomState; random.Random "
             "(not SystemRandom)" % ", ".join(_gs.numpy_names()))


class Adapter:
    """One live generator: .label (its kind, in messages), .objects (the
    Python objects it covers, for the untracked report), read(name) ->
    bytes, write(name, bytes), ledger_reader(name) -> what a ledger step
    digests (a callable returning bytes; None: read)."""

    def ledger_reader(self, name):
        return None


class _Torch(Adapter):
    def __init__(self, gen):
        self.gen = gen
        self.device = gen.device.type
        self.label = _gs.kind_label(_gs.torch_kind(self.device), self.device)
        self.objects = (gen,)

    def _raw(self):
        return tensor_bytes(self.gen.get_state())

    def read(self, name):
        return _gs.encode_torch(name, self.device, self._raw())

    def ledger_reader(self, name):
        return _ld.torch_raw(self.gen.get_state)

    def write(self, name, data):
        raw = _gs.decode_torch(name, data, self.device, self._raw())
        self.gen.set_state(bytes_tensor(raw))


class _BitGenerator(Adapter):
    """A numpy.random.Generator (its bit generator's state) or a bare bit
    generator."""

    def __init__(self, gen, bit_generator, kind):
        self.bg = bit_generator
        self.kind = kind
        self.label = _gs.kind_label(kind)
        self.objects = (gen, bit_generator)

    def read(self, name):
        return _gs.encode_numpy(self.bg.state)

    def write(self, name, data):
        self.bg.state = _gs.decode_numpy(name, data, self.kind)


class _RandomState(Adapter):
    def __init__(self, rs, kind):
        self.rs = rs
        self.kind = kind
        self.label = _gs.kind_label(kind)
        self.objects = (rs, rs._bit_generator)

    def read(self, name):
        return _gs.encode_numpy(self.rs.get_state(legacy=False))

    def ledger_reader(self, name):
        return _ld.numpy_legacy(self.rs, None)

    def write(self, name, data):
        self.rs.set_state(_gs.decode_numpy(name, data, self.kind))


class _Random(Adapter):
    label = _gs.kind_label(_gs.RANDOM)

    def __init__(self, r):
        self.r = r
        self.objects = (r,)

    def read(self, name):
        return _gs.encode_random(self.r.getstate(), name)

    def ledger_reader(self, name):
        return _ld.python_random(self.r, None)

    def write(self, name, data):
        self.r.setstate(_gs.decode_random(name, data))


def _unsupported(call, gen, why=""):
    return TypeError("%s: %s is not a supported generator%s; supported: %s"
                     % (call, type(gen).__qualname__, why, SUPPORTED))


def adapter_for(gen, call="register_generator"):
    """The Adapter of gen, or TypeError naming the supported types."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(gen, torch.Generator):
        return _Torch(gen)
    npr = sys.modules.get("numpy.random")
    if npr is not None:
        if isinstance(gen, npr.RandomState):
            state = gen.get_state(legacy=False)
            kind = _gs.numpy_kind(state)
            if kind is None:
                raise _unsupported(call, gen, " (over bit generator %s)"
                                   % state.get("bit_generator"))
            return _RandomState(gen, kind)
        bg = gen.bit_generator if isinstance(gen, npr.Generator) else gen
        if isinstance(bg, npr.BitGenerator):
            kind = _gs.numpy_kind(bg.state)
            if kind is None:
                raise _unsupported(call, gen, " (bit generator %s)"
                                   % type(bg).__qualname__)
            return _BitGenerator(gen, bg, kind)
    rnd = sys.modules.get("random")
    if (rnd is not None and isinstance(gen, rnd.Random)
            and not isinstance(gen, rnd.SystemRandom)):
        return _Random(gen)
    raise _unsupported(call, gen)


class _Registration:
    def __init__(self, adapter, at_register):
        self.adapter = adapter
        self.at_register = at_register  # bytes while awaiting a load


class Registry:
    """A context's register_generator() registrations."""

    def __init__(self, ctx):
        # Weak: ctx holds our callables, which hold the adapters only.
        self._ctx = weakref.ref(ctx)
        self._regs = {}

    def register(self, name, gen):
        self.register_adapter(name, adapter_for(gen))

    def register_adapter(self, name, adapter):
        ctx = self._ctx()
        snap = adapter.read(name) if awaiting_load(ctx) else None
        ledger = adapter.ledger_reader(name)
        ctx.register_state(name, save=lambda: adapter.read(name),
                           load=lambda data: adapter.write(name, data),
                           ledger=ledger)
        self._regs[name] = _Registration(adapter, snap)
        restored = getattr(ctx, "_restored", None)
        if restored is not None:  # re-seeding after the load (reseed.py)
            restored.add(name, lambda: adapter.read(name),
                         reseed.probe_for(adapter.objects[0]),
                         adapter.objects)

    def forget(self, name):
        self._regs.pop(name, None)
        restored = getattr(self._ctx(), "_restored", None)
        if restored is not None:
            restored.forget(name)

    def clear(self):
        """Forget every registration (the context is closed)."""
        self._regs.clear()
        restored = getattr(self._ctx(), "_restored", None)
        if restored is not None:
            restored.clear()

    def covered(self):
        """ids of every object a registration covers."""
        return {id(o) for r in self._regs.values() for o in r.adapter.objects}

    def drawn(self):
        """Names of the generators that changed since registration while
        the context still awaits its first load; else []."""
        waiting = {n: r for n, r in self._regs.items()
                   if r.at_register is not None}
        if waiting and not awaiting_load(self._ctx()):
            self.loaded()
            return []
        return [n for n, r in waiting.items()
                if r.adapter.read(n) != r.at_register]

    def loaded(self):
        for r in self._regs.values():
            r.at_register = None
