"""No silent miss (issue 17): a save reports the generators that live in the
process but are in no checkpoint, by type and where they live; a warning
by default, UntrackedGeneratorError (nothing written) under
Context(untracked="error"), nothing under "ignore"; register_generator,
ignore_generator and the process-wide generators of track() count as
tracked.  The scan imports nothing and looks only for the types of
modules already imported.

The exact reports run in a fresh interpreter (this one holds the
generators of other tests); the rest filter the report by object."""
import gc
import os
import random
import textwrap

import numpy as np
import pytest
import torch

import rngsnap
from rngsnap._context import hooks as _hooks
from rngsnap._context import untracked as _untracked
from rngsnap._context import comm as _comm
from conftest import run_py

TAIL = ("register each with ctx.register_generator(name, gen), or mark it "
        "deliberate with ctx.ignore_generator(gen) "
        "(Context(untracked=\"ignore\") turns this report off)")

# The script, as python.md's rngsnap.torch section had it: track()
# only, while the job's own generators drive the data.
TRACK_ONLY = textwrap.dedent("""\
    import sys, warnings
    import numpy as np, torch
    import rngsnap, rngsnap.torch

    def main():
        ctx = rngsnap.Context(untracked=sys.argv[2])
        ctx.seed_all(1)
        rngsnap.torch.track(ctx)
        g = torch.Generator().manual_seed(1234)
        rng = np.random.default_rng(2718)
        loader = torch.utils.data.DataLoader(list(range(8)), batch_size=2,
                                             shuffle=True, generator=g)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                ctx.save(sys.argv[1])
            except rngsnap.Error as e:
                print("raised", type(e).__name__, e.name)
                print(e)
        for w in seen:
            print("warned", w.category.__name__, w.filename, w.lineno)
            print(w.message)
        print("written", __import__("os").path.exists(sys.argv[1]))

    main()
    """)
SAVE_LINE = TRACK_ONLY.splitlines().index(
    "            ctx.save(sys.argv[1])") + 1
REPORT = ("2 generators live in this process but are in no checkpoint, so a "
          "resumed run would not restore them:\n"
          "  numpy.random.Generator(PCG64) at main() local rng\n"
          "  torch.Generator (cpu) at DataLoader.generator, "
          "RandomSampler.generator, main() local g\n" + TAIL)


def test_warning_names_type_and_place(tmp_path):
    out = run_py(TRACK_ONLY, tmp_path / "c", "warn").stdout
    assert out == ("warned UntrackedGeneratorWarning <string> %d\n"
                   "rngsnap: %s\nwritten True\n" % (SAVE_LINE, REPORT))


def test_error_mode_refuses_the_save(tmp_path):
    out = run_py(TRACK_ONLY, tmp_path / "c", "error").stdout
    assert out == ("raised UntrackedGeneratorError RNGSNAP_E_INVALID\n"
                   "save refused, nothing written (untracked=\"error\"): %s\n"
                   "written False\n" % REPORT)


def test_ignore_mode_is_silent(tmp_path):
    out = run_py(TRACK_ONLY, tmp_path / "c", "ignore").stdout
    assert out == "written True\n"


def test_process_wide_generators_are_not_reported(tmp_path):
    code = textwrap.dedent("""\
        import random, sys, tempfile, warnings
        import numpy as np, torch
        import rngsnap, rngsnap.torch
        tempfile.mkstemp()  # tempfile's own random.Random
        import multiprocessing
        lock = multiprocessing.Lock()  # SemLock._rand, another sequence
        np.random.random(); random.random(); torch.rand(1)
        ctx = rngsnap.Context(untracked="error")
        rngsnap.torch.track(ctx)  # holds the globals (else reported:
        ctx.seed_all(1)           # test_untracked_globals.py)
        ctx.save(sys.argv[1])
        print(ctx.untracked_generators())
        """)
    assert run_py(code, tmp_path / "c").stdout == "[]\n"


def test_sympy_generators_are_not_reported(tmp_path):
    """torch 2.x imports SymPy with the first optimizer (torch._dynamo),
    and SymPy makes three random.Random of its own (sympy.core.random's
    rng and _assumptions_rng, Dummy._prng): the epoch loop saw them
    reported on torch 2.13.  A random.Random of the job's beside them
    still is."""
    pytest.importorskip("sympy")
    code = textwrap.dedent("""\
        import random, sys
        import torch
        import rngsnap
        torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
        import sympy  # torch 1.x does not import it
        from sympy.core import random as sympy_random
        sympy.Dummy(); sympy_random.random()
        mine = random.Random(3)
        ctx = rngsnap.Context(untracked="error")
        print([f.label for f in ctx.untracked_generators()])
        ctx.register_generator("sympy", sympy_random.rng)  # who draws from it
        ctx.register_generator("mine", mine)
        ctx.seed_all(1)
        ctx.save(sys.argv[1])
        """)
    assert run_py(code, tmp_path / "c").stdout == "['random.Random']\n"


def test_scan_imports_nothing(tmp_path):
    code = textwrap.dedent("""\
        import random, sys
        import rngsnap
        r = random.Random(3)
        ctx = rngsnap.Context()
        ctx.seed_all(1)
        print([f.label for f in ctx.untracked_generators()])
        ctx.save(sys.argv[1])
        print("torch" in sys.modules, "numpy" in sys.modules)
        """)
    out = run_py(code, tmp_path / "c").stdout
    assert out == "['random.Random']\nFalse False\n"


# ---- in this process: the report filtered to the test's own objects ------

class Holder:
    pass


def _report_of(ctx, obj):
    mine = [f for f in ctx.untracked_generators() if f.obj is obj]
    return mine[0] if mine else None


@pytest.fixture
def ctx():
    c = rngsnap.Context(untracked="ignore")
    c.seed_all(5)
    yield c
    c.close()


def test_places(ctx):
    h = Holder()
    h.gen = torch.Generator()
    h.gens = {"a": torch.Generator(), "b": np.random.SFC64(1)}
    h.items = [np.random.RandomState(1)]
    h.only = {"x": torch.Generator()}  # a dict the collector does not track
    assert not gc.is_tracked(h.only)
    local = random.Random(1)
    looping = iter(torch.utils.data.RandomSampler(range(4)))
    next(looping)  # the sampler's own generator, inside its __iter__
    assert "Holder.gen" in _report_of(ctx, h.gen).places
    assert "Holder.gens['a']" in _report_of(ctx, h.gens["a"]).places
    assert "Holder.gens['b']" in _report_of(ctx, h.gens["b"]).places
    assert "Holder.items[0]" in _report_of(ctx, h.items[0]).places
    assert "Holder.only['x']" in _report_of(ctx, h.only["x"]).places
    assert "test_places() local local" in _report_of(ctx, local).places
    inner = [f for f in ctx.untracked_generators()
             if "RandomSampler.__iter__() local generator" in f.places]
    assert len(inner) == 1 and inner[0].label == "torch.Generator (cpu)"


def test_labels_and_bit_generator_inside(ctx):
    g = np.random.Generator(np.random.Philox(2))
    rs = np.random.RandomState(np.random.PCG64(3))
    bare = np.random.MT19937(4)
    assert _report_of(ctx, g).label == "numpy.random.Generator(Philox)"
    assert _report_of(ctx, rs).label == "numpy.random.RandomState(PCG64)"
    assert _report_of(ctx, bare).label == "numpy.random.MT19937"
    # their bit generators are their state, not generators of their own
    assert _report_of(ctx, g.bit_generator) is None
    assert _report_of(ctx, rs._bit_generator) is None


def test_registered_and_ignored_are_tracked(ctx):
    g, t, r = np.random.default_rng(1), torch.Generator(), random.Random(2)
    for x in (g, t, r):
        assert _report_of(ctx, x) is not None
    ctx.register_generator("g", g)
    assert ctx.ignore_generator(t) is t
    ctx.ignore_generator(r)
    for x in (g, g.bit_generator, t, r):
        assert _report_of(ctx, x) is None
    ctx.unregister_state("g")
    assert _report_of(ctx, g) is not None


def test_tracked_by_any_open_context(ctx):
    g = torch.Generator()
    other = rngsnap.Context(untracked="ignore")
    other.register_generator("g", g)
    assert _report_of(ctx, g) is None  # in other's checkpoints
    other.close()
    assert _report_of(ctx, g) is not None


def test_a_closed_context_lets_go():
    """What a closed context registered or ignored is neither tracked nor
    kept alive by it."""
    import weakref
    c = rngsnap.Context(untracked="ignore")
    r1, r2 = random.Random(1), random.Random(2)
    c.register_generator("r", r1)
    c.ignore_generator(r2)
    refs = weakref.ref(r1), weakref.ref(r2)
    del r1, r2
    c.close()
    c.untracked_generators()  # a scan: it lets go of them
    assert refs[0]() is None and refs[1]() is None


def test_modes_checked(ctx):
    with pytest.raises(ValueError) as e:
        rngsnap.Context(untracked="loud")
    msg = "untracked must be one of 'warn', 'error', 'ignore', not 'loud'"
    assert str(e.value) == msg
    with pytest.raises(ValueError) as e:
        ctx.untracked = "loud"
    assert str(e.value) == msg
    assert ctx.untracked == "ignore"
    with pytest.raises(TypeError) as e:
        ctx.ignore_generator(object())
    assert str(e.value).startswith("ignore_generator: object is not a "
                                   "supported generator; supported: ")


class Clock:
    """A monotonic clock that moves 1 s per reading (a scan costs 1 s)."""

    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        self.t += 1
        return self.t


def _warned(ctx, path, recwarn):
    n = len(recwarn)
    ctx.save(path, replace=True)
    return [w for w in list(recwarn)[n:]
            if w.category is rngsnap.UntrackedGeneratorWarning]


def test_when_a_save_scans(ctx, tmp_path, monkeypatch, recwarn):
    """"warn": a save scans again once 100 times the last scan's cost (of
    any context: the scan sees the whole process) has passed since it
    ("error": every save; "ignore": never).  The first save of a process:
    test_warning_names_type_and_place."""
    clock = Clock()
    monkeypatch.setattr(_untracked, "_clock", clock)
    path = str(tmp_path / "c")
    for f in ctx.untracked_generators():  # what other tests left: a scan
        ctx.ignore_generator(f.obj)
    ctx.untracked = "warn"
    stray = torch.Generator()
    assert _warned(ctx, path, recwarn) == []  # 1 s after a 1 s scan
    with rngsnap.Context() as fresh:  # its first save, 2 s after
        fresh.seed_all(1)
        assert _warned(fresh, path, recwarn) == []
    clock.t += 96
    assert _warned(ctx, path, recwarn) == []  # 99 s after
    # 100 s after: 100 times the last scan's cost has passed
    warned = _warned(ctx, path, recwarn)
    assert len(warned) == 1 and "Generator (cpu)" in str(warned[0].message)
    assert _warned(ctx, path, recwarn) == []
    ctx.untracked = "error"  # every save scans
    with pytest.raises(rngsnap.UntrackedGeneratorError):
        ctx.save(path, replace=True)
    ctx.ignore_generator(stray)
    ctx.save(path, replace=True)
    ctx.untracked = "ignore"
    monkeypatch.setattr(_untracked, "scan", None)  # a scan would fail
    assert _warned(ctx, path, recwarn) == []


def test_bytes_and_state_dict_report_too():
    code = textwrap.dedent("""\
        import random, warnings
        import rngsnap
        r = random.Random(3)
        for call in ("save_bytes", "state_dict"):
            ctx = rngsnap.Context()
            ctx.seed_all(1)
            rngsnap._context.untracked._schedule.last_end = None  # a first save
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                getattr(ctx, call)()
            print(call, [str(w.message).splitlines()[1] for w in seen])
        """)
    assert run_py(code).stdout == (
        "save_bytes ['  random.Random at __main__.r']\n"
        "state_dict ['  random.Random at __main__.r']\n")


def test_every_save_method_runs_the_check():
    """Each save and load method the context has goes through the hooks
    (the ones added by other changes too: the names are the contract)."""
    for name in _hooks.SAVES + _hooks.LOADS:
        method = getattr(rngsnap.Context, name, None)
        if method is not None:
            assert getattr(method, "rngsnap_hooked", False), name


def test_nested_save_checks_once():
    class Fake:
        def __init__(self):
            self.calls = []

        def _before_save(self, method, args, kw):
            self.calls.append("check " + method)

        def save(self):
            self.calls.append("save")

        def state_dict(self):
            self.save()
            return {}
    _hooks.install(Fake)
    f = Fake()
    f.state_dict()
    f.save()
    assert f.calls == ["check state_dict", "save", "check save", "save"]


@pytest.mark.parametrize("method", ["save_ranks", "state_dict"])
def test_collective_save_refusal(tmp_path, monkeypatch, method):
    """Under "error", save_ranks and state_dict(gather=True) ask every
    rank (ranks_flagged, an all_reduce) and refuse on all when one found
    something, before their own collectives."""
    asked = []

    def ranks_flagged(flag, group):
        asked.append((flag, group))
        return _comm.Flagged(1, 1)  # another rank found one
    monkeypatch.setattr(_comm, "ranks_flagged", ranks_flagged)
    with rngsnap.Context(untracked="error") as c:
        c.seed_all(1)
        monkeypatch.setattr(_untracked, "scan", lambda *tracked: [])
        with pytest.raises(rngsnap.UntrackedGeneratorError) as e:
            if method == "save_ranks":
                c.save_ranks(str(tmp_path / "d"), "grp")
            else:
                c.state_dict(gather=True, group="grp")
        assert str(e.value) == ("%s refused on every rank, nothing "
                                "written (untracked=\"error\"): rank 1 found "
                                "generators in no checkpoint" % method)
        assert asked == [(False, "grp")]
        assert not os.path.exists(tmp_path / "d")
        c.state_dict()  # not collective: nothing found here, so no refusal
        assert len(asked) == 1
