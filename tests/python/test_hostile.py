"""What a hostile caller does to the C module: Python code run in the
middle of a call (closing the context), integers out of range, messages
that are not UTF-8, Ctrl-C inside a callable, and a second thread using
the context while a save/load holds it with callables running."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rngsnap
from conftest import export_held, while_drawing


class _ClosesCtx:
    """An n whose __index__ closes the context mid-call."""

    def __init__(self, ctx):
        self.ctx = ctx

    def __index__(self):
        self.ctx.close()
        return 4


def test_generate_n_that_closes_the_context(ctx):
    # parse_generate runs __index__ after the closed check: the draw must
    # see the context closed, not use its freed stream.
    s = ctx.stream("cpu", 0, "default")
    with pytest.raises(rngsnap.InvalidError, match="closed"):
        s.generate("u32", _ClosesCtx(ctx))
    assert ctx.closed


def test_keyed_generate_n_that_closes_the_context(ctx):
    k = ctx.stream("cpu", 0, "default").derive(1, 2)
    with pytest.raises(rngsnap.InvalidError, match="closed"):
        k.generate("u32", _ClosesCtx(ctx))


def test_derive_keys_out_of_range(ctx):
    s = ctx.stream("cpu", 0, "default")
    top = s.derive(2**64 - 1, 0).generate("u64", 3)
    # a negative key or one past 64 bits used to wrap silently onto
    # another key's stream
    for bad in ((-1, 0), (0, -1), (2**64, 0), (0, 2**64 + 5)):
        with pytest.raises(OverflowError):
            s.derive(*bad)
    with pytest.raises(TypeError):
        s.derive(1.5)
    assert (s.derive(np.uint64(2**64 - 1)).generate("u64", 3) == top).all()


def test_seed_and_reserve_take_numpy_integers(ctx):
    big = 2**63 + 12345
    ctx.seed_all(big)
    a = ctx.stream("cpu", 0, "default").generate("u64", 4)
    ctx.seed_all(np.uint64(big))
    assert (ctx.stream("cpu", 0, "default").generate("u64", 4) == a).all()
    s = ctx.stream("cpu", 0, "default")
    off = s.position()[2]
    assert s.reserve(np.int64(6))[2] == off
    assert s.position()[2] == off + 6
    for bad in (-1, 2**64):
        with pytest.raises(OverflowError):
            ctx.seed_all(bad)
        with pytest.raises(OverflowError):
            s.reserve(bad)
    with pytest.raises(TypeError):
        ctx.seed_all(1.0)


def test_negative_device_is_a_clear_error(ctx):
    with pytest.raises(rngsnap.InvalidError, match="device -1"):
        ctx.stream("cpu", -1, "default")


def test_non_utf8_path_in_message(ctx, tmp_path):
    # The core's message names the path as bytes; an undecodable byte
    # must not turn the rngsnap error into a UnicodeDecodeError.
    bad = os.fsencode(str(tmp_path)) + b"/no-such-\xff.rngsnap"
    with pytest.raises(rngsnap.Error) as e:
        ctx.load(bad)
    assert "no-such-\\xff.rngsnap" in str(e.value)
    ctx.save(bad)  # a valid file name on Linux
    ctx.load(bad)


def test_keyboard_interrupt_in_callable_is_not_an_error(ctx, tmp_path):
    # Ctrl-C in a save callable stops the save and is raised as itself
    # (an `except rngsnap.Error` or `except Exception` must not eat it).
    def save():
        raise KeyboardInterrupt

    ctx.register_state("app", save=save, load=lambda b: None)
    with pytest.raises(KeyboardInterrupt) as e:
        ctx.save(tmp_path / "a")
    assert isinstance(e.value.__context__, rngsnap.Error)
    assert not (tmp_path / "a").exists()


def test_close_from_own_callable_says_so(ctx, tmp_path):
    ctx.register_state("app", save=lambda: ctx.close() or b"x",
                       load=lambda b: None)
    with pytest.raises(rngsnap.Error) as e:
        ctx.save(tmp_path / "a")
    assert "inside one of its own" in str(e.value.__cause__)
    assert not ctx.closed


# Prepended to the scripts below.  watch_calls(code), run by a thread,
# marks when that thread starts a C call from code (a function or lambda);
# wait_inside(thread, code) returns once the thread is inside that call:
# the caller holds the GIL then, so the thread has released it there (or
# it has finished the call).  No sleep decides what has happened.
_INSIDE = textwrap.dedent("""
    import sys, threading, time
    _entered = threading.Event()
    def _hook(frame, event, arg):
        if event == "c_call" and frame.f_code is _watched:
            _entered.set()
    def watch_calls(code):
        global _watched
        _watched = code
        sys.setprofile(_hook)
    def _in_hook(frame):
        while frame is not None:
            if frame.f_code is _hook.__code__:
                return True
            frame = frame.f_back
        return False
    def wait_inside(thread):
        _entered.wait()
        while _in_hook(sys._current_frames().get(thread.ident)):
            time.sleep(0.001)  # yields the GIL: the hook returns
""")

# A second thread calls into the context (GIL held) while a save or load
# holds the context's locks and waits for the GIL to run a callable: the
# C call must release the GIL, or both threads wait for ever.  The
# callable returns only once the other thread is inside its call.
_DEADLOCK = _INSIDE + textwrap.dedent("""
    import rngsnap
    what, path = sys.argv[1], sys.argv[2]
    ctx = rngsnap.Context()
    ctx.seed_all(1)
    s = ctx.stream("cpu", 0, "default")
    on_load = what in ("reserve", "position", "derive")
    inside, armed, other_thread = threading.Event(), [], []
    def slow(in_load):
        if armed and in_load == on_load:
            inside.set()
            wait_inside(other_thread[0])
        return b"x"
    ctx.register_state("app", save=lambda: slow(False),
                       load=lambda b: slow(True))
    ctx.save(path + ".first")
    armed.append(1)
    # seed_all: the C call itself, made from this frame (ctx.seed_all is
    # a Python function, it seeds track()'s generators after the C call)
    calls = {"seed_all": lambda: rngsnap._rngsnap.Context.seed_all(ctx, 2),
             "rank": lambda: getattr(ctx, "rank"),
             "set_rank": lambda: ctx.set_rank(0, 1),
             # register_state too (a Python method: it refuses a late
             # registration of a resumed context before the C call)
             "register": lambda: rngsnap._rngsnap.Context.register_state(
                 ctx, "late", save=bytes, load=print),
             "reserve": lambda: s.reserve(1),
             "position": lambda: s.position(),
             "derive": lambda: s.derive(1)}
    def other():
        inside.wait()
        watch_calls(calls[what].__code__)
        calls[what]()
    t = threading.Thread(target=other)
    other_thread.append(t)
    t.start()
    if on_load:
        ctx.load(path + ".first")  # streams locked around load callables
    else:
        ctx.save(path)
    t.join()
    print("ok")
""")


@pytest.mark.parametrize("what", ["seed_all", "rank", "set_rank", "register",
                                  "reserve", "position", "derive"])
def test_other_thread_during_save_or_load(what, tmp_path):
    try:
        r = subprocess.run([sys.executable, "-c", _DEADLOCK, what,
                            str(tmp_path / "ck")], capture_output=True,
                           text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("deadlock: %s from another thread during a save/load"
                    % what)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


_TWO_SAVES = _INSIDE + textwrap.dedent("""
    import rngsnap
    path = sys.argv[1]
    ctx = rngsnap.Context()
    ctx.seed_all(1)
    a_inside, seen, threads = threading.Event(), [], {}
    def save():
        if not seen:  # thread A's save: wait until B is inside its own
            seen.append(1)
            a_inside.set()
            wait_inside(threads["b"])  # B now waits in the core for A's lock
            try:
                ctx.seed_all(2)  # into its own context: refused, per thread
            except rngsnap.InvalidError as e:
                seen.append(str(e))
        return b"x"
    ctx.register_state("app", save=save, load=lambda b: None)
    # B calls the C save itself: ctx.save is a Python function (the save
    # hooks, _context/hooks.py), so its C call would not be made from b's
    # frame.
    save_c = rngsnap._rngsnap.Context.save
    def b():
        watch_calls(b.__code__)
        save_c(ctx, path + ".b")
    threads["b"] = threading.Thread(target=b)
    a = threading.Thread(target=lambda: ctx.save(path + ".a"))
    a.start()
    a_inside.wait()
    threads["b"].start()
    a.join()
    threads["b"].join()
    print(seen[1])
""")


def test_own_callable_refused_while_another_thread_saves(tmp_path):
    # A second thread's save on the same context used to overwrite the
    # "inside a callable" mark: A's callable calling back in then waited
    # on the lock A itself holds.
    try:
        r = subprocess.run([sys.executable, "-c", _TWO_SAVES,
                            str(tmp_path / "ck")], capture_output=True,
                           text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("deadlock: callable called into its own context while "
                    "another thread saved it")
    assert r.returncode == 0, r.stderr
    assert "inside one of its own" in r.stdout


def test_closed_context_cannot_be_reopened(ctx):
    # Its old streams point into the freed context: re-running __init__
    # would make them look usable again.
    s = ctx.stream("cpu", 0, "default")
    k = s.derive(1)
    ctx.close()
    with pytest.raises(RuntimeError, match="cannot be reopened"):
        ctx.__init__()
    with pytest.raises(RuntimeError, match="cannot be reopened"):
        rngsnap._rngsnap.Context.__init__(ctx, None)
    for call in (lambda: s.generate("u32", 1), lambda: k.generate("u32", 1),
                 lambda: s.position()):
        with pytest.raises(rngsnap.InvalidError, match="closed"):
            call()


def test_dropped_context_in_a_cycle_through_a_stream_is_freed():
    # The usual app-state pattern: an object holds a stream and registers
    # its own methods.  ctx -> callable -> sampler -> stream -> ctx is a
    # cycle; the collector must free it once the job drops the context.
    import gc
    import weakref

    class Sampler:
        def __init__(self, ctx):
            ctx.seed_all(1)
            self.stream = ctx.stream("cpu", 0, "default")
            self.keyed = self.stream.derive(1)
            ctx.register_state("sampler", save=self.save, load=self.load)

        def save(self):
            return b""

        def load(self, data):
            pass

    c = rngsnap.Context()
    Sampler(c)
    ref = weakref.ref(c)
    del c
    gc.collect()
    assert ref() is None


def test_out_buffer_is_held_for_the_whole_draw(ctx):
    # Another thread resizing out= while the draw runs without the GIL
    # must be refused (BufferError): the draw holds the exported buffer...
    import array
    s = ctx.stream("cpu", 0, "default")
    n = 1 << 24  # 16 Mi normals
    buf = array.array("d", bytes(8 * n))
    assert while_drawing(lambda: s.generate("normal_f64", out=buf),
                         export_held(buf))
    # ...and releases it once it has returned
    buf.append(0.0)
    assert len(buf) == n + 1
