"""Errors in Python's words (issue 17, item 5): the core names the API as
the package spells it (core/words.c), a callable's own exception ends the
Error's first line, and a checkpoint of a tracked job loaded by an
untracked context asks whether track() was called."""
import os
import re
import threading

import numpy as np
import pytest

import rngsnap

from collectives import LinkDown, OneRank, Threads

C_SPELLING = re.compile(r"rngsnap_[a-z_]+|RNGSNAP_[A-Z_]+")
TRACK_HINT = "did you call rngsnap.torch.track(ctx) before load?"
REGISTER = "ctx.register_state() or ctx.register_generator()"
try:
    import torch  # noqa: F401  (rngsnap.torch needs it)
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


# Issue 31 item 5: how a job opened with resume=True on a first run starts
# one, at the end of every refusal of a context awaiting its load.
FIRST_RUN = ("On a first run, with no checkpoint yet, open the context "
             "without resume=True and seed it (ctx.seed_all())")

def config_of(ctx_config=None):
    """The configuration path as the core's messages name it."""
    return os.path.realpath(ctx_config or rngsnap.find_config()[0])


def write_ini(path, body, log=None):
    """An rng.ini in tmp_path using the build's (or package's) plugins."""
    plugins = os.path.join(os.path.dirname(config_of()), "..", "plugins")
    if not os.path.isdir(plugins):  # the pip-installed package's layout
        plugins = os.path.join(os.path.dirname(config_of()), "plugins")
    head = "[rngsnap]\nplugin_dir = %s\n" % os.path.realpath(plugins)
    if log:
        head += "log = %s\n" % log
    path.write_text(head + body)
    return str(path)


def message(call):
    with pytest.raises(rngsnap.Error) as e:
        call()
    return e.value


# ---- the spellings ---------------------------------------------------------

def test_exists_says_replace_true(ctx, tmp_path):
    p = str(tmp_path / "ck.rngsnap")
    ctx.save(p)
    e = message(lambda: ctx.save(p))
    assert isinstance(e, rngsnap.ExistsError)
    assert str(e) == "save %s exists; pass replace=True to replace it" % p


def test_resume_gate_says_ctx_load(ctx, tmp_path):
    p = str(tmp_path / "ck.rngsnap")
    ctx.save(p)
    with rngsnap.Context(resume=True) as r:
        s = r.stream("cpu", 0, "dropout")
        for call, word in (
                (lambda: s.generate("u32", 1), "s.generate()"),
                (lambda: s.generate("u32", out=np.zeros(1, np.uint32)),
                 "s.generate()"),
                (lambda: s.reserve(1), "s.reserve()"),
                (lambda: s.derive(1, 2), "s.derive()")):
            e = message(call)
            assert isinstance(e, rngsnap.OrderError)
            assert str(e) == (
                "%s on stream cpu:0/dropout refused: the context was opened "
                "with resume=True and no checkpoint has been loaded yet "
                "(call ctx.load(), ctx.load_state_dict(), ctx.load_bytes() "
                "or ctx.load_ranks(), whichever this job resumes with, "
                "first). " + FIRST_RUN) % word
        e = message(lambda: r.save(p + ".2"))
        assert str(e) == (
            "save %s.2: this context was opened with resume=True and has "
            "not loaded a checkpoint yet (call ctx.load(), "
            "ctx.load_state_dict(), ctx.load_bytes() or ctx.load_ranks(), "
            "whichever this job resumes with, first). " % p + FIRST_RUN)
        r.load(p)
        e = message(lambda: r.seed_all(1))
        # Strict by default (issue 31): the words no longer depend on
        # resume=True; the fix names ctx.branch().
        assert str(e) == (
            "ctx.seed_all() refused: this context has loaded a checkpoint, "
            "so it resumes that run, and seeding now would throw the "
            "restored positions away. Leave the seeding out when resuming "
            "(the load has set every stream); to start a new run from this "
            "checkpoint on purpose, call ctx.branch() first")


def test_save_ranks_before_load_says_ctx_load_ranks(tmp_path):
    d = str(tmp_path / "ck")
    with rngsnap.Context(resume=True) as r:
        e = message(lambda: r._save_ranks(d, OneRank(), 0, 1, False))
    assert isinstance(e, rngsnap.OrderError)
    assert str(e) == (
        "rank 0 of 1: save_ranks %s: this context was opened with "
        "resume=True and has not loaded a checkpoint yet (call "
        "ctx.load_ranks() first). " % d + FIRST_RUN)


def test_arguments_name_the_python_call(ctx):
    e = message(lambda: ctx.set_rank(5, 2))
    assert str(e) == ("ctx.set_rank(): rank 5 with world size 2 (need "
                      "world_size >= 1 and 0 <= rank < world_size)")
    e = message(lambda: ctx.stream("cpu", -1))
    assert str(e) == "ctx.stream(): device must be >= 0 (got device -1)"
    ctx.register_state("a", save=bytes, load=print)
    e = message(lambda: ctx.register_state("a", save=bytes, load=print))
    assert str(e) == "ctx.register_state(): app state a is already registered"
    e = message(lambda: ctx.register_state("", save=bytes, load=print))
    assert str(e) == "ctx.register_state(): name must be 1..255 bytes"


# ---- a callable's own words --------------------------------------------------

def test_callable_exception_ends_the_first_line(tmp_path):
    p = str(tmp_path / "ck.rngsnap")

    def no_sampler():
        raise KeyError("no sampler yet")

    with rngsnap.Context() as c:
        c.register_state("app", save=no_sampler, load=print)
        e = message(lambda: c.save(p))
    assert isinstance(e, rngsnap.BackendError)
    assert str(e) == ("save %s: app state app: its save callable failed; "
                      "the callable raised KeyError: 'no sampler yet'" % p)
    assert isinstance(e.__cause__, KeyError)  # still chained, with traceback
    assert e.__cause__.__traceback__ is not None

    def bad_load(data):
        raise ValueError("cannot take %r\nsecond line" % data)

    with rngsnap.Context() as c:
        c.register_state("bad", save=lambda: b"x", load=bad_load)
        c.save(p)
        e = message(lambda: c.load(p))
    assert str(e).splitlines()[0] == (
        "load %s: app state bad: its load callable failed; everything rolled "
        "back; the callable raised ValueError: cannot take b'x'" % p)
    assert str(e).splitlines()[1] == "second line"
    assert isinstance(e.__cause__, ValueError)


def test_load_calls_save_callables_for_its_backup(tmp_path):
    """docs/python.md: a load first calls every save callable, to back up
    the live state it rolls back to; a save callable that needs state made
    later (here: after the load) fails the load, nothing restored."""
    p = str(tmp_path / "ck.rngsnap")
    live = {"sampler": b"epoch-3"}
    calls = []

    def save():
        calls.append("save")
        if live["sampler"] is None:
            raise RuntimeError("sampler not built yet")
        return live["sampler"]

    with rngsnap.Context() as c:
        c.register_state("sampler", save=save,
                         load=lambda b: live.__setitem__("sampler", b))
        c.save(p)
        calls.clear()
        c.load(p)
        assert calls == ["save", "save"]  # size of the read, then backup
        live["sampler"] = None  # as if built only after the load
        e = message(lambda: c.load(p))
    assert str(e) == (
        "load %s: backing up app state sampler: its save callable failed; "
        "nothing restored; the callable raised RuntimeError: sampler not "
        "built yet" % p)
    assert live["sampler"] is None


def test_collective_exception_ends_the_first_line(ctx, tmp_path):
    d = str(tmp_path / "ck")
    e = message(lambda: ctx._save_ranks(d, LinkDown(), 0, 1, False))
    assert str(e).endswith("; the callable raised ConnectionError: link down")
    assert "\n" not in str(e)
    assert isinstance(e.__cause__, ConnectionError)


# ---- the track() hint ----------------------------------------------------------

def _tracked_checkpoint(tmp_path, before=(), after=()):
    torch_mod = pytest.importorskip("rngsnap.torch")
    p = str(tmp_path / "tracked.rngsnap")
    with rngsnap.Context() as c:
        for name in before:
            c.register_state(name, save=lambda: b"s", load=print)
        t = torch_mod.track(c)
        for name in after:
            c.register_state(name, save=lambda: b"s", load=print)
        c.save(p)
    return p, t.names


def test_untracked_load_asks_for_track(tmp_path):
    p, names = _tracked_checkpoint(tmp_path)
    with rngsnap.Context() as c:
        e = message(lambda: c.load(p))
    assert isinstance(e, rngsnap.MismatchError)
    assert str(e) == (
        "%s: checkpoint has app state rngsnap.fingerprint, which this "
        "context did not register (%s before the load) (and %d more); "
        "nothing restored; %s"
        % (p, REGISTER, len(names) - 1, TRACK_HINT))


def test_track_hint_found_past_the_first_extra_state(tmp_path):
    p, names = _tracked_checkpoint(tmp_path, before=["sampler"])
    with rngsnap.Context() as c:
        e = message(lambda: c.load(p))
    assert str(e) == (
        "%s: checkpoint has app state sampler, which this context did not "
        "register (%s before the load) (and %d more); nothing restored; "
        "%s" % (p, REGISTER, len(names), TRACK_HINT))


def test_no_track_hint_when_tracked_or_unrelated(tmp_path):
    torch_mod = pytest.importorskip("rngsnap.torch")
    # tracked, but the saving job had one more device: rngsnap.torch's own hint
    p, _ = _tracked_checkpoint(tmp_path, after=["torch.cuda:7"])
    with rngsnap.Context() as c:
        torch_mod.track(c, resume=False)
        e = message(lambda: c.load(p))
    first = str(e).splitlines()[0]
    assert first == (
        "%s: checkpoint has app state torch.cuda:7, which this context did "
        "not register (%s before the load); nothing restored"
        % (p, REGISTER))
    assert TRACK_HINT not in str(e)
    # a job's own state: nothing about track()
    q = str(tmp_path / "own.rngsnap")
    with rngsnap.Context() as c:
        c.register_state("sampler", save=lambda: b"s", load=print)
        c.save(q)
    with rngsnap.Context() as c:
        e = message(lambda: c.load(q))
    assert str(e) == (
        "%s: checkpoint has app state sampler, which this context did not "
        "register (%s before the load); nothing restored" % (q, REGISTER))


# ---- every mapped message: no C spelling ----------------------------------------

def _save_two_ranks(d):
    comm, errors = Threads(2), []

    def rank(r):
        try:
            with rngsnap.Context() as c:
                c.set_rank(r, 2)
                c.seed_all(9)
                c._save_ranks(d, comm.rank(r), r, 2, False)
        except Exception as e:  # reported by the test below
            errors.append(e)
            comm.abort()
    threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def _optional_backend_ini(tmp_path, name, devices):
    return write_ini(tmp_path / name, (
        "[backend.cpu]\nplugin = rngsnap_cpu\nrequired = true\n"
        "streams = default\n"
        "[backend.hpu]\nplugin = rngsnap_hpu\nrequired = false\n"
        "emulate_devices = %d\nstreams = default\n") % devices)


def _mapped_errors(tmp_path):
    """(what, the Error) for every error whose message names the API."""
    out = []

    def add(what, call):
        with pytest.raises(rngsnap.Error) as e:
            call()
        out.append((what, e.value))

    ck = str(tmp_path / "ck.rngsnap")
    c = rngsnap.Context()
    c.seed_all(1)
    c.save(ck)
    add("exists", lambda: c.save(ck))
    add("set_rank", lambda: c.set_rank(3, 2))
    add("stream device", lambda: c.stream("cpu", -1))
    c.register_state("a", save=bytes, load=print)
    add("register twice", lambda: c.register_state("a", save=bytes,
                                                   load=print))
    add("register empty", lambda: c.register_state("", save=bytes,
                                                   load=print))
    add("register long", lambda: c.register_state("x" * 300, save=bytes,
                                                  load=print))
    c.close()

    r = rngsnap.Context(resume=True)
    s = r.stream("cpu", 0, "default")
    add("gate generate", lambda: s.generate("f64", 2))
    add("gate generate out", lambda: s.generate("u64",
                                                out=np.zeros(2, np.uint64)))
    add("gate reserve", lambda: s.reserve(2))
    add("gate derive", lambda: s.derive(2, 3))
    add("save before load", lambda: r.save(ck + ".2"))
    add("save_ranks before load",
        lambda: r._save_ranks(str(tmp_path / "r0"), OneRank(), 0, 1, False))
    r.set_rank(1, 2)
    add("rank of the file", lambda: r.load(ck))
    r.set_rank(0, 1)
    r.load(ck)
    add("seed after load", lambda: r.seed_all(2))
    r.close()

    d1 = str(tmp_path / "one")
    with rngsnap.Context() as c:
        c._save_ranks(d1, OneRank(), 0, 1, False)
        add("save_ranks exists",
            lambda: c._save_ranks(d1, OneRank(), 0, 1, False))
        c.set_rank(0, 2)
        add("communicator rank",
            lambda: c._save_ranks(d1, OneRank(), 0, 1, True))
    d2 = str(tmp_path / "two")
    _save_two_ranks(d2)
    with rngsnap.Context() as c:
        add("fork", lambda: c._load_ranks(d2, OneRank(), 0, 1, False))

    # an optional backend present on one side only: "stops at ... open"
    with_hpu = _optional_backend_ini(tmp_path, "with.ini", 1)
    without = _optional_backend_ini(tmp_path, "without.ini", 0)
    for saved, loaded, what in ((with_hpu, without, "optional skipped"),
                                (without, with_hpu, "optional present")):
        p = str(tmp_path / (what + ".rngsnap"))
        with rngsnap.Context(saved) as c:
            c.save(p)
        with rngsnap.Context(loaded) as c:
            add(what, lambda: c.load(p))

    # callables and the track() hint (where torch is installed)
    with rngsnap.Context() as c:
        c.register_state("boom", save=lambda: 1 / 0, load=print)
        add("save callable", lambda: c.save(ck + ".3"))
    if HAVE_TORCH:
        from rngsnap import torch as tracking
        with rngsnap.Context() as c:
            tracking.track(c)
            c.save(ck + ".4")
        with rngsnap.Context() as c:
            add("untracked", lambda: c.load(ck + ".4"))
    return out


def test_no_c_spelling_in_any_mapped_error(tmp_path):
    errors = _mapped_errors(tmp_path)
    assert len(errors) == 20 + HAVE_TORCH
    for what, e in errors:
        text = str(e)
        for path in (str(tmp_path), os.path.realpath(str(tmp_path))):
            text = text.replace(path, "<tmp>")
        text = text.replace(config_of(), "<config>")
        assert not C_SPELLING.search(text), (what, str(e))
    words = " ".join(str(e) for _, e in errors)
    python_words = ["replace=True", "resume=True", "ctx.load()",
                    "ctx.load_ranks()", "fork=True to ctx.load_ranks()",
                    "ctx.set_rank()", "ctx.seed_all()", "ctx.stream()",
                    "ctx.register_state()", "s.generate()", "s.reserve()",
                    "s.derive()", "rngsnap.Context()",
                    "the callable raised ZeroDivisionError"]
    if HAVE_TORCH:
        python_words.append(TRACK_HINT)
    for word in python_words:
        assert word in words, word


def test_reorder_warning_names_ctx_streams(tmp_path, capfd):
    a = write_ini(tmp_path / "a.ini", "[backend.cpu]\nplugin = rngsnap_cpu\n"
                  "streams = default, dropout\n", log="warn")
    b = write_ini(tmp_path / "b.ini", "[backend.cpu]\nplugin = rngsnap_cpu\n"
                  "streams = dropout, default\n", log="warn")
    p = str(tmp_path / "ck.rngsnap")
    with rngsnap.Context(a) as c:
        c.save(p)
    with rngsnap.Context(b) as c:
        c.load(p)
    err = capfd.readouterr().err
    assert "a job that walks the registry by index (ctx.streams()) now " \
           "draws from other streams" in err, err
    assert not C_SPELLING.search(err.replace(str(tmp_path), "<tmp>")), err
