"""Messages that send the user the right way (issue 22 item 7): each
mistake's exact message, in Python words, naming what to call or change.

Every test here failed with the package before item 7 (the message it
asserts said something else, or nothing was refused)."""
import os
import random
import struct
import warnings

import numpy as np
import pytest

import rngsnap

torch = pytest.importorskip("torch")
import rngsnap.torch  # noqa: E402

REGISTER = "ctx.register_state() or ctx.register_generator()"
ANY_LOAD = ("ctx.load(), ctx.load_state_dict(), ctx.load_bytes() or "
            "ctx.load_ranks(), whichever this job resumes with,")


def _save(path, setup=lambda c: None, config=None):
    with rngsnap.Context(config=config, untracked="ignore") as c:
        c.seed_all(1)
        setup(c)
        c.save(str(path))
    return str(path)


# ---- app states come from calls, not from rng.ini ---------------------------

def test_app_state_the_checkpoint_lacks_names_the_call(tmp_path):
    p = _save(tmp_path / "ck")
    with rngsnap.Context() as c:
        c.register_state("aug", save=lambda: b"x", load=lambda b: None)
        with pytest.raises(rngsnap.MismatchError) as e:
            c.load(p)
    assert str(e.value) == (
        "%s: this context has app state aug (registered with %s), which "
        "the checkpoint lacks; nothing restored" % (p, REGISTER))


def test_app_state_only_the_checkpoint_has_names_the_call(tmp_path):
    p = _save(tmp_path / "ck", lambda c: c.register_state(
        "aug", save=lambda: b"x", load=lambda b: None))
    with rngsnap.Context() as c:
        with pytest.raises(rngsnap.MismatchError) as e:
            c.load(p)
    assert str(e.value) == (
        "%s: checkpoint has app state aug, which this context did not "
        "register (%s before the load); nothing restored" % (p, REGISTER))


# ---- a checkpoint of another rng.ini ------------------------------------------

def _other_ini(tmp_path):
    """The test's rng.ini with one stream more, its plugins where they are."""
    mine = os.environ["RNGSNAP_CONFIG"]
    with open(mine) as f:
        text = f.read()
    plugins = os.path.join(os.path.dirname(os.path.abspath(mine)), "..",
                           "plugins")
    text = text.replace("../plugins", plugins)
    assert "streams = default, dropout, augment" in text
    other = tmp_path / "other.ini"
    other.write_text(text.replace("augment", "augment, noise"))
    return str(other)


def test_checkpoint_of_another_rng_ini_says_how_to_point_at_it(tmp_path):
    other = _other_ini(tmp_path)
    mine = os.environ["RNGSNAP_CONFIG"]
    theirs = _save(tmp_path / "theirs", config=other)
    ours = _save(tmp_path / "ours")
    how = ("If the checkpoint was written under another rng.ini, open this "
           "job with that one (Context(config=...), or RNGSNAP_CONFIG); "
           "'rngsnap inspect %s' lists the streams it holds")
    with rngsnap.Context() as c:
        with pytest.raises(rngsnap.MismatchError) as e:
            c.load(theirs)
    assert str(e.value) == (
        "%s: checkpoint has cpu:0/noise, which this configuration does not "
        "load; nothing restored (configuration %s). " % (theirs, mine)
        + how % theirs)
    with rngsnap.Context(config=other) as c:
        with pytest.raises(rngsnap.MismatchError) as e:
            c.load(ours)
    assert str(e.value) == (
        "%s: this configuration has cpu:0/noise, which the checkpoint "
        "lacks; nothing restored (configuration %s). " % (ours, other)
        + how % ours)
    with rngsnap.Context(config=other) as c:  # the way out works
        c.load(theirs)


# ---- drawn before the restore ---------------------------------------------------

def _tracked_checkpoint(path, gen=None):
    def setup(c):
        rngsnap.torch.track(c)
        if gen is not None:
            c.register_generator("g", gen)
    return _save(path, setup)


def _globals():
    return (torch.get_rng_state().numpy().tobytes(),
            np.random.get_state()[1].tobytes(), random.getstate())


def test_drawn_before_restore_names_every_generator_that_moved(tmp_path):
    p = _tracked_checkpoint(tmp_path / "ck", torch.Generator())
    ctx = rngsnap.Context(resume=True, untracked="ignore")
    g = torch.Generator().manual_seed(2)
    rngsnap.torch.track(ctx)
    ctx.register_generator("g", g)
    torch.rand(1)
    random.random()
    torch.rand(1, generator=g)
    before, g_before = _globals(), g.get_state()
    with pytest.raises(rngsnap.OrderError) as e:
        ctx.load(p)
    assert str(e.value) == (
        "load refused, nothing restored: generators torch.cpu, "
        "python.random changed between rngsnap.torch.track() and load(); "
        "generator g changed between ctx.register_generator() and load() "
        "(something drew from them before the restore). Building the "
        "model draws from torch.cpu too (torch.nn layers take their "
        "initial weights from it), as do creating a DataLoader iterator "
        "and fetching a batch: call rngsnap.torch.track(ctx) after the "
        "model is built, right before the load; a DataLoader iterator "
        "created or a batch fetched draws from its generator: call "
        "ctx.register_generator() right before the load; load first, then "
        "draw")
    assert _globals() == before and torch.equal(g.get_state(), g_before)
    ctx.close()


def test_track_before_the_model_says_where_track_belongs(tmp_path):
    p = _tracked_checkpoint(tmp_path / "ck")
    ctx = rngsnap.Context(resume=True, untracked="ignore")
    rngsnap.torch.track(ctx)
    torch.nn.Linear(4, 4)  # building the model draws its weights
    with pytest.raises(rngsnap.OrderError) as e:
        ctx.load(p)
    assert str(e.value) == (
        "load refused, nothing restored: generator torch.cpu changed "
        "between rngsnap.torch.track() and load() (something drew from it "
        "before the restore). Building the model draws from torch.cpu too "
        "(torch.nn layers take their initial weights from it), as do "
        "creating a DataLoader iterator and fetching a batch: call "
        "rngsnap.torch.track(ctx) after the model is built, right before "
        "the load; load first, then draw")
    ctx.close()
    # where the message says: track() after the model, then load
    with rngsnap.Context(resume=True, untracked="ignore") as ctx:
        torch.nn.Linear(4, 4)
        rngsnap.torch.track(ctx)
        ctx.load(p)


# ---- the fingerprint warning: at the job's line --------------------------------

def test_fingerprint_warning_points_at_the_jobs_line(tmp_path):
    p = _tracked_checkpoint(tmp_path / "ck")
    old = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = not old
    try:
        with rngsnap.Context(untracked="ignore") as ctx:
            rngsnap.torch.track(ctx)
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                line = _line_after()
                ctx.load(p)
    finally:
        torch.backends.cudnn.benchmark = old
    fp = [x for x in w if "determinism fingerprint" in str(x.message)]
    assert len(fp) == 1
    assert (fp[0].filename, fp[0].lineno) == (__file__, line)


def _line_after():
    """The line number after the caller's."""
    import sys
    return sys._getframe(1).f_lineno + 1


# ---- a refused draw names the loads a job may use ----------------------------

def test_refused_draw_names_load_state_dict(tmp_path):
    with rngsnap.Context() as c:
        c.seed_all(1)
        state = c.state_dict()
    with rngsnap.Context(resume=True) as ctx:
        s = ctx.stream("cpu", 0, "dropout")
        with pytest.raises(rngsnap.OrderError) as e:
            s.generate("u32", 1)
        assert str(e.value) == (
            "s.generate() on stream cpu:0/dropout refused: the context was "
            "opened with resume=True and no checkpoint has been loaded yet "
            "(call %s first). On a first run, with no checkpoint yet, open "
            "the context without resume=True and seed it (ctx.seed_all())"
            % ANY_LOAD)
        ctx.load_state_dict(state)  # the load it names
        s.generate("u32", 1)


# ---- a flipped bit names the entry --------------------------------------------

def _section_offsets(blob):
    """Where each section starts: after the 64-byte header, each one's
    u32 kind then u32 size, up to the 24-byte trailer (docs/format.md)."""
    out, at = [], 64
    while at < len(blob) - 24:
        out.append(at)
        at += struct.unpack_from("<I", blob, at + 4)[0]
    return out


def test_bit_flip_in_state_dict_names_the_entry():
    with rngsnap.Context() as c:
        c.seed_all(1)
        state = c.state_dict()
    blob = state["rank/0"]
    at = _section_offsets(blob)[2]
    with rngsnap.Context() as ctx:
        ctx.seed_all(2)
        before = ctx.stream("cpu", 0, "augment").position()
        # Issue 31 item 5: a damaged section is named by its place; its
        # label only as read from the damaged bytes, then what this
        # context saves there.
        for flip, label in (
                (at, "its label cannot be read from the damaged bytes"),
                (at + 12, "its label as read from the damaged bytes: "
                          "cpq:0/augment")):
            bad = bytearray(blob)
            bad[flip] ^= 4
            with pytest.raises(rngsnap.CorruptError) as e:
                ctx.load_state_dict(dict(state, **{"rank/0": bytes(bad)}))
            assert str(e.value) == (
                "checkpoint bytes: section 2 at byte %d: checksum mismatch "
                "(%s); this context saves cpu:0/augment there; nothing "
                "restored" % (at, label))
        assert ctx.stream("cpu", 0, "augment").position() == before


# ---- the resumable sampler ------------------------------------------------------

def _sampler(ctx, **kw):
    args = dict(length=100, batch_size=10, epochs=2)
    args.update(kw)
    return rngsnap.torch.ResumableSampler(
        ctx, ctx.stream("cpu", 0, "default"), args.pop("length"),
        args.pop("batch_size"), args.pop("epochs"), **args)


@pytest.mark.parametrize("field,kw,line", [
    ("batch size", dict(batch_size=5), "batch size: checkpoint 10, this job 5"),
    ("dataset length", dict(length=90),
     "dataset length: checkpoint 100, this job 90"),
    ("shuffle", dict(shuffle=False), "shuffle: checkpoint True, this job False"),
    ("epochs", dict(epochs=3), "epochs: checkpoint 2, this job 3"),
    ("drop_last", dict(drop_last=True),
     "drop_last: checkpoint False, this job True"),
])
def test_sampler_refusal_in_python_words(tmp_path, field, kw, line):
    p = _save(tmp_path / "ck", _sampler)
    with rngsnap.Context(resume=True) as ctx:
        s = _sampler(ctx, **kw)
        with pytest.raises(rngsnap.MismatchError) as e:
            ctx.load(p)
        assert s.position == (0, 0)
    assert str(e.value) == (
        "rngsnap.sampler: this sampler differs from the checkpoint's, so "
        "the resumed job would see other batches; nothing restored:\n"
        "  %s\n(load %s: app state rngsnap.sampler: its load callable "
        "failed; everything rolled back)" % (line, p))
    assert "callback" not in str(e.value)


def test_sampler_built_after_the_load_is_refused(tmp_path):
    p = _save(tmp_path / "ck")  # a checkpoint without a sampler
    with rngsnap.Context(resume=True) as ctx:
        ctx.load(p)
        with pytest.raises(rngsnap.OrderError) as e:
            _sampler(ctx)
    assert str(e.value) == (
        "rngsnap.sampler: ResumableSampler built after ctx.load(); it "
        "registers its position with the context when it is built, so that "
        "load restored none and the resumed job would start again at epoch "
        "0, batch 0. Build the sampler before the load")


def test_checkpoint_sampler_without_a_sampler_says_build_it_first(tmp_path):
    p = _save(tmp_path / "ck", _sampler)
    with rngsnap.Context(resume=True) as ctx:
        with pytest.raises(rngsnap.MismatchError) as e:
            ctx.load(p)
        _sampler(ctx)  # the way out: built before the load
        ctx.load(p)
    assert str(e.value) == (
        "%s: checkpoint has app state rngsnap.sampler, which this context "
        "did not register (%s before the load); nothing restored; did you "
        "build the rngsnap.torch.ResumableSampler before load? it registers "
        "its position when it is built, and the load restores it"
        % (p, REGISTER))


# ---- issue 31: track() twice, a first run opened as a resumed one, a
# resumed job that never loaded --------------------------------------------

FIRST_RUN = ("On a first run, with no checkpoint yet, open the context "
             "without resume=True and seed it (ctx.seed_all())")


def test_track_twice_says_so_and_gives_the_fix(tmp_path):
    """Issue 31 item 5: the second call used to fail inside
    ctx.register_state() ("app state rngsnap.fingerprint is already
    registered"), blaming a call the job never made."""
    with rngsnap.Context(untracked="ignore") as ctx:
        ctx.seed_all(1)
        first = rngsnap.torch.track(ctx)
        before = ctx.save_bytes()
        with pytest.raises(rngsnap.InvalidError) as e:
            rngsnap.torch.track(ctx, fingerprint="strict")
        assert type(e.value) is rngsnap.InvalidError
        assert str(e.value) == (
            "rngsnap.torch.track(ctx) refused: this context is already "
            "tracked (an earlier track(ctx) registered rngsnap.fingerprint, "
            "%s), and one context holds each generator once. Call "
            "rngsnap.torch.track(ctx) once per context, after building the "
            "model and before the load; keep the Tracker it returned if you "
            "need it again" % ", ".join(first.names[1:]))
        assert ctx._trackers == [first]  # nothing registered, nothing set
        assert ctx.save_bytes() == before


def test_first_run_opened_with_resume_says_how_to_start_one(tmp_path,
                                                            capfd):
    """Issue 31 item 5: Context(resume=True) on a first run (no checkpoint
    yet): the load of the missing file, a draw, a save and the close each
    say how to start a first run."""
    p = str(tmp_path / "ck.rngsnap")
    ctx = rngsnap.Context(resume=True, untracked="ignore")
    rngsnap.torch.track(ctx)
    with pytest.raises(rngsnap.IOFailedError) as e:
        ctx.load(p)
    assert str(e.value) == (
        "load %s: cannot open: No such file or directory. This context was "
        "opened with resume=True: on a first run, with no checkpoint yet, "
        "open it without resume=True and seed it (ctx.seed_all())" % p)
    with pytest.raises(rngsnap.OrderError) as e:
        ctx.stream("cpu", 0, "dropout").generate("u32", 1)
    assert str(e.value).endswith("(call %s first). %s" % (ANY_LOAD,
                                                          FIRST_RUN))
    with pytest.raises(rngsnap.OrderError) as e:
        ctx.save(p)
    assert str(e.value) == (
        "save %s: this context was opened with resume=True and has not "
        "loaded a checkpoint yet (call %s first). %s" % (p, ANY_LOAD,
                                                          FIRST_RUN))
    assert not os.path.exists(p)
    capfd.readouterr()
    ctx.close()
    assert capfd.readouterr().err == (
        "rngsnap warn: ctx.close(): this context was opened with "
        "resume=True but never loaded a checkpoint, so this job resumed "
        "nothing (its draws and saves, if any, were refused). Call %s right "
        "after opening; for a first run, open without resume=True\n"
        % ANY_LOAD)


def test_a_missing_file_of_a_context_that_resumes_nothing_else(tmp_path):
    """The hint is for a context awaiting its first load only: a plain
    context's missing file is the plain IOFailedError."""
    p = str(tmp_path / "ck.rngsnap")
    with rngsnap.Context() as ctx:
        with pytest.raises(rngsnap.IOFailedError) as e:
            ctx.load(p)
    assert str(e.value) == "load %s: cannot open: No such file or directory" % p


def test_resumed_job_that_forgot_its_load_is_refused_and_reported(
        tmp_path, capfd):
    """Issue 31 item 3: opened with resume=True, tracked, a registered
    generator, the load line forgotten (or a framework hook that never
    called it); the job trains from torch's generators (no rngsnap
    stream), then saves: the save is refused naming the missing load,
    nothing written, before the untracked report (untracked="error")
    could say anything else, and close() reports it."""
    p = str(tmp_path / "ck.rngsnap")
    ctx = rngsnap.Context(resume=True, untracked="error")
    rngsnap.torch.track(ctx)
    g = ctx.register_generator("loader", torch.Generator().manual_seed(3))
    stray = np.random.default_rng(4)  # in no checkpoint
    loader = torch.utils.data.DataLoader(list(range(8)), batch_size=2,
                                         shuffle=True, generator=g)
    for batch in loader:  # trains: draws from g and torch's generator
        torch.nn.functional.dropout(torch.ones(4), 0.5)
    for call, what in ((lambda: ctx.save(p), "save %s" % p),
                       (lambda: ctx.state_dict(),
                        "save checkpoint bytes")):
        with pytest.raises(rngsnap.OrderError) as e:
            call()
        assert str(e.value) == (
            "%s: this context was opened with resume=True and has not "
            "loaded a checkpoint yet (call %s first). %s" % (
                what, ANY_LOAD, FIRST_RUN))
    assert not os.path.exists(p)
    capfd.readouterr()
    ctx.close()
    err = capfd.readouterr().err
    assert err.startswith("rngsnap warn: ctx.close(): this context was "
                          "opened with resume=True but never loaded a "
                          "checkpoint, so this job resumed nothing")
    del stray
