"""The sweep of issue 22: ordinary mistakes, each made the way a PyTorch
job makes it; none may resume wrong silently.  Each is refused (the exact
exception class, and the message's key words, the fix among them) with
nothing changed by the refusal (stream positions, torch's, NumPy's and
random's generators, registered generators, files), or warned about with
what to do.  docs/python.md, "Mistakes rngsnap catches", has one row for
each."""
import gc
import itertools
import os
import random
import warnings

import numpy as np
import pytest

import rngsnap

torch = pytest.importorskip("torch")
import rngsnap.torch  # noqa: E402


# ---- what a refusal must leave alone ---------------------------------------

def _position(s):
    try:
        return s.position()
    except rngsnap.Error as e:  # a context awaiting its load: still gated
        return type(e).__name__


def snapshot(ctx=None, gens=(), files=()):
    """Everything a refusal must not change."""
    st = [torch.get_rng_state().numpy().tobytes(),
          repr(np.random.get_state()), random.getstate()]
    if ctx is not None and not ctx.closed:
        st += [(s.backend, s.device, s.name, _position(s))
               for s in ctx.streams()]
    for g in gens:
        st.append(g.get_state().numpy().tobytes()
                  if isinstance(g, torch.Generator) else repr(g.getstate()))
    for f in files:
        st.append(open(f, "rb").read() if os.path.exists(f) else None)
    return st


def refused(call, cls, words, before):
    """call() raises exactly cls, whose message has every one of words,
    and before() is what it was."""
    was = before()
    with pytest.raises(rngsnap.Error) as e:
        call()
    assert type(e.value) is cls, "%s: %s" % (type(e.value).__name__, e.value)
    for w in words:
        assert w in str(e.value), "%r not in: %s" % (w, e.value)
    assert before() == was, "changed by a refusal: %s" % e.value
    return str(e.value)


# ---- checkpoints ---------------------------------------------------------------

def _checkpoint(path, track=True, setup=lambda c: None, **save):
    with rngsnap.Context(untracked="ignore") as c:
        c.seed_all(7)
        if track:
            rngsnap.torch.track(c)
        setup(c)
        c.stream("cpu", 0, "dropout").generate("u32", 5)
        c.save(str(path), **save)
    return str(path)


def _resumed(path, track=True, setup=lambda c: None):
    """A resumed context that loaded path."""
    ctx = rngsnap.Context(resume=True, untracked="ignore")
    if track:
        rngsnap.torch.track(ctx)
    setup(ctx)
    ctx.load(path)
    return ctx


def _sampler(ctx, batch_size=10):
    return rngsnap.torch.ResumableSampler(
        ctx, ctx.stream("cpu", 0, "default"), 100, batch_size, 2)


@pytest.fixture(autouse=True)
def _seeded_globals():
    torch.manual_seed(1)
    np.random.seed(1)
    random.seed(1)
    gc.collect()  # no context of an earlier test holds the globals
    yield


# ---- the mistakes ----------------------------------------------------------------

def m_never_seeded(tmp_path):
    with rngsnap.Context() as ctx:
        s = ctx.stream("cpu", 0, "dropout")
        refused(lambda: s.generate("u32", 4), rngsnap.OrderError,
                ["neither seeded nor loaded", "ctx.seed_all()"],
                lambda: snapshot(ctx))


def _only_new_ones(ctx):
    """Generators other tests of this process left alive are not this
    job's: ignored.  The scan also records the global generators' states
    (a later scan reports those that drew since)."""
    for found in ctx.untracked_generators():
        ctx.ignore_generator(found.obj)


def m_forgot_track(tmp_path):
    with rngsnap.Context(untracked="error") as ctx:
        ctx.seed_all(1)
        _only_new_ones(ctx)
        ctx.save(str(tmp_path / "first"))
        torch.rand(3)  # the loop draws from torch's global generator
        p = str(tmp_path / "second")
        refused(lambda: ctx.save(p), rngsnap.UntrackedGeneratorError,
                ["torch.Generator (cpu)", "rngsnap.torch.track(ctx)",
                 "nothing written"],
                lambda: snapshot(ctx, files=[p]))


def m_reseed_torch_after_load(tmp_path):
    ctx = _resumed(_checkpoint(tmp_path / "ck"))
    refused(lambda: torch.manual_seed(0), rngsnap.OrderError,
            ["torch.manual_seed() refused", "torch.cpu",
             "Seed before ctx.load(), or don't re-seed"],
            lambda: snapshot(ctx))
    ctx.close()


def m_reseed_numpy_after_load(tmp_path):
    ctx = _resumed(_checkpoint(tmp_path / "ck"))
    refused(lambda: np.random.seed(0), rngsnap.OrderError,
            ["numpy.random.seed() refused", "numpy.global",
             "Seed before ctx.load(), or don't re-seed"],
            lambda: snapshot(ctx))
    ctx.close()


def m_second_load_after_draws(tmp_path):
    p = _checkpoint(tmp_path / "ck")
    ctx = _resumed(p)
    ctx.stream("cpu", 0, "dropout").generate("u32", 3)
    refused(lambda: ctx.load(p), rngsnap.OrderError,
            ["cpu:0/dropout", "Load once, before the first draw"],
            lambda: snapshot(ctx))
    ctx.close()


def m_seed_all_after_load(tmp_path):
    ctx = _resumed(_checkpoint(tmp_path / "ck"))
    refused(lambda: ctx.seed_all(3), rngsnap.OrderError,
            ["ctx.seed_all() refused", "this context has loaded a "
             "checkpoint, so it resumes that run",
             "throw the restored positions away",
             "Leave the seeding out when resuming", "call ctx.branch() "
             "first"],
            lambda: snapshot(ctx))
    ctx.close()


def m_two_files_mismatched(tmp_path):
    p = _checkpoint(tmp_path / "ck", tag=1)  # the model file says step 2
    ctx = rngsnap.Context(resume=True, untracked="ignore")
    rngsnap.torch.track(ctx)
    refused(lambda: ctx.load(p, tag=2), rngsnap.MismatchError,
            ["saved with tag=1, not 2", "nothing restored",
             "ctx.state_dict()"], lambda: snapshot(ctx))
    ctx.close()


def m_app_state_lacking(tmp_path):
    p = _checkpoint(tmp_path / "ck")
    loads = []
    ctx = rngsnap.Context(resume=True, untracked="ignore")
    rngsnap.torch.track(ctx)
    ctx.register_state("aug", save=lambda: b"a", load=loads.append)
    refused(lambda: ctx.load(p), rngsnap.MismatchError,
            ["app state aug", "ctx.register_state()",
             "ctx.register_generator()"], lambda: snapshot(ctx) + loads)
    ctx.close()


def m_tracked_checkpoint_loaded_without_track(tmp_path):
    p = _checkpoint(tmp_path / "ck")
    with rngsnap.Context(resume=True) as ctx:
        refused(lambda: ctx.load(p), rngsnap.MismatchError,
                ["app state rngsnap.fingerprint",
                 "did you call rngsnap.torch.track(ctx) before load?"],
                lambda: snapshot(ctx))


def m_another_rng_ini(tmp_path):
    mine = os.environ["RNGSNAP_CONFIG"]
    text = open(mine).read().replace(
        "../plugins", os.path.join(os.path.dirname(os.path.abspath(mine)),
                                   "..", "plugins"))
    other = tmp_path / "other.ini"
    other.write_text(text.replace("augment", "augment, noise"))
    with rngsnap.Context(config=str(other)) as c:
        c.seed_all(1)
        c.save(str(tmp_path / "ck"))
    with rngsnap.Context(resume=True) as ctx:
        refused(lambda: ctx.load(str(tmp_path / "ck")), rngsnap.MismatchError,
                ["cpu:0/noise", "Context(config=...)", "RNGSNAP_CONFIG"],
                lambda: snapshot(ctx))


def m_batch_fetched_before_load(tmp_path):
    p = _checkpoint(tmp_path / "ck")
    ctx = rngsnap.Context(resume=True, untracked="ignore")
    rngsnap.torch.track(ctx)
    loader = torch.utils.data.DataLoader(list(range(16)), batch_size=4,
                                         shuffle=True)
    next(iter(loader))  # the shuffle drew from torch's global generator
    refused(lambda: ctx.load(p), rngsnap.OrderError,
            ["torch.cpu", "rngsnap.torch.track()", "load first, then draw"],
            lambda: snapshot(ctx))
    ctx.close()


def m_track_before_the_model(tmp_path):
    p = _checkpoint(tmp_path / "ck")
    ctx = rngsnap.Context(resume=True, untracked="ignore")
    rngsnap.torch.track(ctx)
    torch.nn.Linear(8, 8)
    refused(lambda: ctx.load(p), rngsnap.OrderError,
            ["torch.cpu", "Building the model", "after the model is built"],
            lambda: snapshot(ctx))
    ctx.close()


def m_save_over_without_replace(tmp_path):
    p = _checkpoint(tmp_path / "ck")
    with rngsnap.Context() as ctx:
        ctx.seed_all(2)
        refused(lambda: ctx.save(p), rngsnap.ExistsError,
                ["exists", "replace=True"], lambda: snapshot(ctx, files=[p]))


def m_register_state_after_load(tmp_path):
    ctx = _resumed(_checkpoint(tmp_path / "ck"))
    refused(lambda: ctx.register_state("late", save=lambda: b"",
                                       load=lambda b: None),
            rngsnap.OrderError, ["ctx.register_state('late')",
                                 "before the load"], lambda: snapshot(ctx))
    ctx.save(str(tmp_path / "next"))  # nothing was registered
    ctx.close()


def m_register_generator_after_load(tmp_path):
    ctx = _resumed(_checkpoint(tmp_path / "ck"))
    g = torch.Generator().manual_seed(4)
    refused(lambda: ctx.register_generator("g", g), rngsnap.OrderError,
            ["ctx.register_generator('g')", "before the load"],
            lambda: snapshot(ctx, gens=[g]))
    ctx.close()


def m_track_after_load(tmp_path):
    ctx = _resumed(_checkpoint(tmp_path / "ck", track=False), track=False)
    refused(lambda: rngsnap.torch.track(ctx), rngsnap.OrderError,
            ["rngsnap.torch.track(ctx)", "before the load"],
            lambda: snapshot(ctx))
    ctx.close()


def m_dataloader_generator_not_registered(tmp_path):
    with rngsnap.Context(untracked="error") as ctx:
        ctx.seed_all(1)
        rngsnap.torch.track(ctx)
        _only_new_ones(ctx)
        g = torch.Generator().manual_seed(3)
        loader = torch.utils.data.DataLoader(list(range(8)), shuffle=True,
                                             generator=g)
        p = str(tmp_path / "ck")
        refused(lambda: ctx.save(p), rngsnap.UntrackedGeneratorError,
                ["DataLoader.generator", "ctx.register_generator(name, gen)",
                 "nothing written"], lambda: snapshot(ctx, [g], [p]))
        ctx.register_generator("loader", loader.generator)  # the fix
        ctx.save(p)


def m_truncated_file(tmp_path):
    p = _checkpoint(tmp_path / "ck")
    data = open(p, "rb").read()
    with open(p, "wb") as f:
        f.write(data[:len(data) // 2])  # a copy cut short
    ctx = rngsnap.Context(resume=True, untracked="ignore")
    rngsnap.torch.track(ctx)
    refused(lambda: ctx.load(p), rngsnap.CorruptError,
            [p, "truncated", "nothing restored"], lambda: snapshot(ctx))
    ctx.close()


def m_flipped_bit(tmp_path):
    p = _checkpoint(tmp_path / "ck")
    data = bytearray(open(p, "rb").read())
    data[100] ^= 1  # inside cpu:0/default's state
    open(p, "wb").write(bytes(data))
    ctx = rngsnap.Context(resume=True, untracked="ignore")
    rngsnap.torch.track(ctx)
    refused(lambda: ctx.load(p), rngsnap.CorruptError,
            ["cpu:0/default", "checksum mismatch", "nothing restored"],
            lambda: snapshot(ctx))
    ctx.close()


def m_state_dict_of_another_world_size(tmp_path):
    with rngsnap.Context() as c:
        c.seed_all(1)
        state = c.state_dict()
    state = dict(state, world_size=2, **{"rank/1": state["rank/0"]})
    with rngsnap.Context(resume=True) as ctx:
        refused(lambda: ctx.load_state_dict(state), rngsnap.MismatchError,
                ["saved by 2 ranks", "this job has 1",
                 "Resume with the world size that saved"],
                lambda: snapshot(ctx))


def m_model_state_dict_passed(tmp_path):
    model = torch.nn.Linear(2, 2)
    with rngsnap.Context(resume=True) as ctx:
        refused(lambda: ctx.load_state_dict(model.state_dict()),
                rngsnap.CorruptError, ["not an rngsnap state dict"],
                lambda: snapshot(ctx))


def m_file_of_another_rank(tmp_path):
    p = _checkpoint(tmp_path / "ck", track=False)
    with rngsnap.Context(resume=True) as ctx:
        ctx.set_rank(1, 2)
        refused(lambda: ctx.load(p), rngsnap.MismatchError,
                ["rank 0 of 1", "rank 1 of 2", "ctx.set_rank()"],
                lambda: snapshot(ctx))


def m_closed_context(tmp_path):
    ctx = rngsnap.Context()
    ctx.seed_all(1)
    ctx.close()
    p = str(tmp_path / "ck")
    refused(lambda: ctx.save(p), rngsnap.InvalidError,
            ["rngsnap.Context is closed"],
            lambda: snapshot(files=[p]))


def m_save_before_load(tmp_path):
    p = _checkpoint(tmp_path / "ck")
    with rngsnap.Context(resume=True, untracked="ignore") as ctx:
        rngsnap.torch.track(ctx)
        refused(lambda: ctx.save(p, replace=True), rngsnap.OrderError,
                ["has not loaded a checkpoint yet", "ctx.load()"],
                lambda: snapshot(ctx, files=[p]))


def m_sampler_changed(tmp_path):
    p = _checkpoint(tmp_path / "ck", setup=_sampler)
    ctx = rngsnap.Context(resume=True, untracked="ignore")
    rngsnap.torch.track(ctx)
    s = _sampler(ctx, batch_size=5)
    refused(lambda: ctx.load(p), rngsnap.MismatchError,
            ["batch size: checkpoint 10, this job 5", "nothing restored"],
            lambda: snapshot(ctx) + [s.position])
    ctx.close()


def m_sampler_built_after_load(tmp_path):
    ctx = _resumed(_checkpoint(tmp_path / "ck"))
    refused(lambda: _sampler(ctx), rngsnap.OrderError,
            ["built after ctx.load()", "Build the sampler before the load"],
            lambda: snapshot(ctx))
    ctx.close()


def m_sampler_missing_at_load(tmp_path):
    p = _checkpoint(tmp_path / "ck", setup=_sampler)
    ctx = rngsnap.Context(resume=True, untracked="ignore")
    rngsnap.torch.track(ctx)
    refused(lambda: ctx.load(p), rngsnap.MismatchError,
            ["app state rngsnap.sampler", "ResumableSampler before load"],
            lambda: snapshot(ctx))
    ctx.close()


# ---- issue 31: the mistakes that still passed silently ----------------------------

def _plain_loaded(path, setup=lambda c: None):
    """A context opened WITHOUT resume=True (a minimal adaptation) that
    loaded path: strict by default, it is a resumed one all the same."""
    ctx = rngsnap.Context(untracked="ignore")
    rngsnap.torch.track(ctx)
    setup(ctx)
    ctx.load(path)
    return ctx


def m_reseed_after_load_without_resume_flag(tmp_path):
    ctx = _plain_loaded(_checkpoint(tmp_path / "ck"))
    refused(lambda: random.seed(0), rngsnap.OrderError,
            ["random.seed() refused", "python.random",
             "a context that has loaded a checkpoint resumes that run",
             "Seed before ctx.load(), or don't re-seed",
             "call ctx.branch() first"],
            lambda: snapshot(ctx))
    ctx.close()


def m_seed_all_after_load_without_resume_flag(tmp_path):
    ctx = _plain_loaded(_checkpoint(tmp_path / "ck"))
    refused(lambda: ctx.seed_all(3), rngsnap.OrderError,
            ["ctx.seed_all() refused", "this context has loaded a "
             "checkpoint, so it resumes that run", "call ctx.branch() first"],
            lambda: snapshot(ctx))
    ctx.close()


def m_second_load_after_draws_without_resume_flag(tmp_path):
    p = _checkpoint(tmp_path / "ck")
    ctx = _plain_loaded(p)
    torch.rand(2)
    ctx.stream("cpu", 0, "dropout").generate("u32", 3)
    refused(lambda: ctx.load(p), rngsnap.OrderError,
            ["generator torch.cpu changed", "stream cpu:0/dropout drew",
             "Load once, before the first draw", "call ctx.branch() first"],
            lambda: snapshot(ctx))
    ctx.close()


def m_registered_generator_reseeded_by_its_own_method(tmp_path):
    """The loader's generator re-seeded with its own seed after the load
    (g.manual_seed(42), a C method), then the loader drew an epoch: the
    next save is refused, naming it."""
    def loader_gen(c):
        c.g = c.register_generator("loader", torch.Generator().manual_seed(42))
        for _ in range(3):  # three epochs before the checkpoint
            list(torch.utils.data.DataLoader(list(range(16)), shuffle=True,
                                             generator=c.g))
    p = _checkpoint(tmp_path / "ck", setup=loader_gen)
    ctx = _plain_loaded(p, setup=loader_gen)
    ctx.g.manual_seed(42)
    list(torch.utils.data.DataLoader(list(range(16)), shuffle=True,
                                     generator=ctx.g))
    out = str(tmp_path / "next")
    refused(lambda: ctx.save(out), rngsnap.OrderError,
            ["ctx.save() refused, nothing written",
             "loader was re-seeded or set", "past a fresh manual_seed(42)",
             "Seed before ctx.load(), or don't re-seed"],
            lambda: snapshot(ctx, gens=[ctx.g], files=[out]))
    ctx.close()


def m_resumed_job_forgot_its_load(tmp_path):
    p = str(tmp_path / "ck")
    ctx = rngsnap.Context(resume=True, untracked="ignore")
    rngsnap.torch.track(ctx)
    g = ctx.register_generator("loader", torch.Generator().manual_seed(3))
    for _ in torch.utils.data.DataLoader(list(range(8)), shuffle=True,
                                         generator=g):
        torch.rand(2)  # trains from torch's generators: nothing refuses
    refused(lambda: ctx.save(p), rngsnap.OrderError,
            ["opened with resume=True and has not loaded a checkpoint yet",
             "ctx.load()", "On a first run, with no checkpoint yet, open "
             "the context without resume=True"],
            lambda: snapshot(ctx, gens=[g], files=[p]))
    ctx.close()  # reports the missing load on stderr (test_messages.py)


def _in_child(body):
    """body() in a fork() child: its AssertionError or exception text, or
    None when it returned."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            body()
            out = b""
        except BaseException as e:  # noqa: B902 (reported to the parent)
            out = ("%s: %s" % (type(e).__name__, e)).encode()
        with os.fdopen(w, "wb") as f:
            f.write(out)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read().decode()
    os.waitpid(pid, 0)
    return out or None


def m_draw_in_a_fork_child_from_an_inherited_stream(tmp_path):
    ctx = rngsnap.Context(untracked="ignore")
    ctx.seed_all(5)
    s = ctx.stream("cpu", 0, "dropout")
    twin_pos = s.position()
    failed = _in_child(lambda: refused(
        lambda: s.generate("u32", 4), rngsnap.OrderError,
        ["fork() child", "draw exactly the numbers the parent draws",
         "s.derive()"], lambda: snapshot(ctx)))
    assert failed is None, failed
    assert s.position() == twin_pos  # the parent's stream: untouched
    ctx.close()


def m_save_in_a_forked_dataloader_worker(tmp_path):
    p = str(tmp_path / "ck")
    ctx = rngsnap.Context(untracked="ignore")
    ctx.seed_all(5)
    rngsnap.torch.track(ctx)

    def worker():  # what a dataset's __getitem__ in a fork worker did
        torch.manual_seed(99)  # torch's worker loop seeds its copies
        refused(lambda: ctx.save(p), rngsnap.OrderError,
                ["ctx.save() refused", "fork() child",
                 "Save in the process that opened the context"],
                lambda: snapshot(ctx, files=[p]))
    failed = _in_child(worker)
    assert failed is None, failed
    assert not os.path.exists(p)
    ctx.close()


def m_track_twice(tmp_path):
    with rngsnap.Context(untracked="ignore") as ctx:
        ctx.seed_all(1)
        rngsnap.torch.track(ctx)
        before = ctx.save_bytes()
        refused(lambda: rngsnap.torch.track(ctx), rngsnap.InvalidError,
                ["rngsnap.torch.track(ctx) refused", "already tracked",
                 "Call rngsnap.torch.track(ctx) once per context"],
                lambda: snapshot(ctx) + [ctx.save_bytes() == before])


def m_first_run_opened_with_resume(tmp_path):
    p = str(tmp_path / "ck")  # no checkpoint yet
    ctx = rngsnap.Context(resume=True, untracked="ignore")
    rngsnap.torch.track(ctx)
    refused(lambda: ctx.load(p), rngsnap.IOFailedError,
            ["No such file", "on a first run, with no checkpoint yet, open "
             "it without resume=True", "ctx.seed_all()"],
            lambda: snapshot(ctx, files=[p]))
    ctx.close()


def m_sampler_of_another_dataset_length(tmp_path):
    p = _checkpoint(tmp_path / "ck", setup=_sampler)
    ctx = rngsnap.Context(resume=True, untracked="ignore")
    rngsnap.torch.track(ctx)
    s = rngsnap.torch.ResumableSampler(
        ctx, ctx.stream("cpu", 0, "default"), 90, 10, 2)
    refused(lambda: ctx.load(p), rngsnap.MismatchError,
            ["dataset length: checkpoint 100, this job 90",
             "nothing restored"],
            lambda: snapshot(ctx) + [s.position])
    ctx.close()


MISTAKES = [v for k, v in sorted(globals().items()) if k.startswith("m_")]


def test_at_least_fifteen_mistakes():
    assert len(MISTAKES) >= 15


@pytest.mark.parametrize("mistake", MISTAKES,
                         ids=[m.__name__[2:] for m in MISTAKES])
def test_mistake_is_refused_and_changes_nothing(mistake, tmp_path):
    mistake(tmp_path)


# ---- warned, with what to do ----------------------------------------------------

def w_fingerprint_difference(tmp_path, monkeypatch):
    p = _checkpoint(tmp_path / "ck")
    old = torch.backends.cudnn.benchmark
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", not old)
    with rngsnap.Context(resume=True, untracked="ignore") as ctx:
        rngsnap.torch.track(ctx)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            ctx.load(p)
    text = [str(x.message) for x in w
            if "determinism fingerprint" in str(x.message)]
    assert len(text) == 1
    assert ("torch.cudnn.benchmark: checkpoint %s, this process %s"
            % (old, not old)) in text[0]
    assert w[0].filename == __file__


def w_forgot_track_saving_often(tmp_path, monkeypatch):
    """Issue 31 item 1: a job without track() that saves every step, far
    more often than the rate-limited scan of the process runs (the clock
    here advances one tick per reading: no save after the scan is due
    another).  Every save after the first warns, naming torch's global
    generator and the fix."""
    monkeypatch.setattr(rngsnap._context.untracked, "_clock",
                        itertools.count().__next__)
    with rngsnap.Context(untracked="warn") as ctx:
        ctx.seed_all(1)
        _only_new_ones(ctx)  # a scan: it records the globals too
        p = str(tmp_path / "ck")
        warned = []
        for step in range(4):
            torch.rand(3)  # the loop draws from torch's global generator
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                ctx.save(p, replace=True)
            warned.append([str(x.message) for x in w if x.category
                           is rngsnap.UntrackedGeneratorWarning])
    assert [len(x) for x in warned] == [1, 1, 1, 1]
    for x in warned:
        assert "torch.Generator (cpu) at torch.default_generator" in x[0]
        assert "rngsnap.torch.track(ctx)" in x[0]


WARNED = [v for k, v in sorted(globals().items()) if k.startswith("w_")]


@pytest.mark.parametrize("mistake", WARNED,
                         ids=[m.__name__[2:] for m in WARNED])
def test_mistake_is_warned_with_what_to_do(mistake, tmp_path, monkeypatch):
    mistake(tmp_path, monkeypatch)


# ---- docs/python.md's table: one row per mistake above ---------------------

# Each mistake's row in "Mistakes rngsnap catches", by the start of its
# first column.
ROWS = {
    "never_seeded": "drawing from a context never seeded nor loaded",
    "forgot_track_saving_often": "forgetting `rngsnap.torch.track(ctx)` "
                                 "in a job",
    "forgot_track": "the same, under `untracked=\"error\"`",
    "dataloader_generator_not_registered": "a generator of the job's own",
    "reseed_torch_after_load": "`torch.manual_seed` (or",
    "reseed_numpy_after_load": "`np.random.seed` after the load",
    "reseed_after_load_without_resume_flag": "`random.seed` after the load",
    "registered_generator_reseeded_by_its_own_method":
        "the DataLoader's generator re-seeded by its own method",
    "seed_all_after_load": "`ctx.seed_all(seed)` after the load |",
    "seed_all_after_load_without_resume_flag":
        "`ctx.seed_all(seed)` after the load of a context opened without",
    "second_load_after_draws": "a second load after draws |",
    "second_load_after_draws_without_resume_flag":
        "a second load after draws, in a context opened without",
    "batch_fetched_before_load": "creating a DataLoader iterator",
    "track_before_the_model": "building the model between `track()`",
    "register_state_after_load": "`ctx.register_state` after the load",
    "register_generator_after_load": "`ctx.register_generator` after",
    "track_after_load": "`rngsnap.torch.track(ctx)` after the load",
    "track_twice": "`rngsnap.torch.track(ctx)` called twice",
    "save_before_load": "saving a context opened with `resume=True`",
    "resumed_job_forgot_its_load": "a job opened with `resume=True` whose "
                                   "load line was forgotten",
    "first_run_opened_with_resume": "a first run opened with `resume=True`",
    "draw_in_a_fork_child_from_an_inherited_stream":
        "after `os.fork()` (or in a DataLoader worker started by fork)",
    "save_in_a_forked_dataloader_worker": "`ctx.save()` in a DataLoader "
                                          "worker",
    "two_files_mismatched": "two files (the job's `torch.save`",
    "app_state_lacking": "an app state registered here that the checkpoint",
    "another_rng_ini": "a checkpoint written under another rng.ini",
    "tracked_checkpoint_loaded_without_track": "a checkpoint of a tracked "
                                               "job loaded without",
    "sampler_changed": "a `ResumableSampler` with another batch size",
    "sampler_of_another_dataset_length": "a `ResumableSampler` over a "
                                         "dataset of another length",
    "sampler_built_after_load": "a `ResumableSampler` built after the load",
    "sampler_missing_at_load": "a checkpoint with a sampler position",
    "save_over_without_replace": "saving over an existing file",
    "truncated_file": "a truncated file",
    "flipped_bit": "a damaged file or state dict",
    "state_dict_of_another_world_size": "a state dict of another world size",
    "file_of_another_rank": "a file of another rank",
    "model_state_dict_passed": "passing the model's state dict",
    "closed_context": "using a closed context",
    "fingerprint_difference": "another torch, NumPy, cuDNN flag",
}
# Rows whose mistake another test makes (it needs a second device, or
# ranks of torch.distributed).
ELSEWHERE = {"a device generator on one side only":
             "test_torch_track.py::test_device_generators_must_match",
             "ranks mapped to other parallel groups":
             "test_nodes_ranks.py::test_nodes_save_load_and_coordinates"}


def _docs_rows():
    path = os.path.join(os.environ["RNGSNAP_SOURCE_ROOT"], "docs",
                        "python.md")
    with open(path) as f:
        text = f.read()
    table = text.split("## Mistakes rngsnap catches", 1)[1].split("\n###", 1)[0]
    rows = [ln for ln in table.splitlines() if ln.startswith("| ")]
    return [ln[2:] for ln in rows[2:]]  # past the header and the rule


def test_docs_table_matches_the_sweep():
    """Row for row: every mistake of the sweep has exactly one row in
    docs/python.md's table, and every row is a mistake of the sweep (or
    of the test ELSEWHERE names)."""
    names = sorted(m.__name__[2:] for m in MISTAKES + WARNED)
    assert sorted(ROWS) == names
    rows = _docs_rows()
    for name, start in ROWS.items():
        hits = [r for r in rows if r.startswith(start)]
        assert len(hits) == 1, "%s: %d rows start %r" % (name, len(hits),
                                                          start)
    starts = list(ROWS.values()) + list(ELSEWHERE)
    for r in rows:
        assert sum(r.startswith(s) for s in starts) == 1, r
    assert len(rows) == len(ROWS) + len(ELSEWHERE)
