"""fork() and DataLoader workers (issue 31, item 4; docs/python.md,
"Processes: fork()").

After fork() the child holds a copy of the parent's contexts: every
non-keyed stream at the parent's position.  A child's draw from such a
stream, its save and its load are refused (OrderError, naming keyed
streams, s.derive(), as the fix); keyed draws work and give what the
parent's keyed draws give; the parent is unaffected.  A context or stream
cannot be sent to a worker started by spawn or forkserver (pickling
refused, saying why); keys can, and a keyed loader gives the same batches
under every start method.
"""
import gc
import os
import pickle
import random
import traceback

import numpy as np
import pytest

import rngsnap

torch = pytest.importorskip("torch")
import rngsnap.torch  # noqa: E402

SEED = 31
DRAW_REFUSED = (
    "s.generate() on stream cpu:0/dropout refused: this process is a fork() "
    "child of the process that opened the context, and its copy of the "
    "stream sits at the parent's position, so it would draw exactly the "
    "numbers the parent draws. Draw from a keyed stream instead (s.derive() "
    "with a key unique to this process, such as the worker's id or the "
    "sample's index, then k.generate()), or open a context of this "
    "process's own (rngsnap.Context())")
SAVE_REFUSED = (
    "ctx.save() refused: this process is a fork() child of the process "
    "that opened the context; its streams and app states are this "
    "process's copy, not the job's, so the checkpoint would be no run's "
    "state. Save in the process that opened the context")
LOAD_REFUSED = (
    "ctx.load() refused, nothing restored: this process is a fork() child "
    "of the process that opened the context, so a load here would restore "
    "this process's copy only, never the job's. Load in the process that "
    "opened the context (or open a context of this process's own: "
    "rngsnap.Context())")


def _in_child(body):
    """Run body() in a fork() child; its return value (picklable), or the
    exception it raised as (class name, message, traceback text)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without cleanup
        os.close(r)
        try:
            out = ("ok", body())
        except BaseException as e:
            out = ("raised", type(e).__name__, str(e),
                   traceback.format_exc())
        with os.fdopen(w, "wb") as f:
            pickle.dump(out, f)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = pickle.load(f)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    return out


@pytest.fixture(autouse=True)
def _collect():
    """The loaders, samplers and contexts of a test are let go of here
    (DataLoader iterators hold reference cycles), so that their
    generators do not reach a later test's untracked report."""
    yield
    gc.collect()


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _context(**kw):
    ctx = rngsnap.Context(untracked="ignore", **kw)
    ctx.seed_all(SEED)
    return ctx


def _twin_draws(n_before, n):
    """What cpu:0/dropout of a context seeded with SEED that drew
    n_before words gives next, in a process that never forked."""
    with _context() as twin:
        s = twin.stream("cpu", 0, "dropout")
        s.generate("u32", n_before)
        return s.generate("u32", n).tolist()


def test_child_draw_from_an_inherited_stream_is_refused():
    ctx = _context()
    s = ctx.stream("cpu", 0, "dropout")
    s.generate("u32", 3)

    def child():
        before = s.position()
        out = []
        for call in (lambda: s.generate("u32", 4),
                     lambda: s.generate("u32", out=np.zeros(2, np.uint32)),
                     lambda: s.reserve(5)):
            try:
                call()
                out.append(None)
            except rngsnap.Error as e:
                out.append((type(e).__name__, str(e)))
        return out, before == s.position(), s.reserve(0) == before
    got, unmoved, reserve0 = _in_child(child)[1]
    assert got[0] == ("OrderError", DRAW_REFUSED)
    assert got[1] == ("OrderError", DRAW_REFUSED)
    assert got[2] == ("OrderError", DRAW_REFUSED.replace(
        "s.generate()", "s.reserve()"))
    assert unmoved and reserve0  # reading the position stays allowed
    # the parent is unaffected: it draws what a process that never forked
    # draws after the same 3 words
    assert s.generate("u32", 6).tolist() == _twin_draws(3, 6)
    ctx.close()


def test_keyed_draw_in_the_child_works_and_equals_the_parent():
    ctx = _context()
    s = ctx.stream("cpu", 0, "dropout")
    s.generate("u32", 2)
    got = _in_child(lambda: s.derive(4, 17).generate("u32", 8).tolist())
    assert got == ("ok", s.derive(4, 17).generate("u32", 8).tolist())
    assert s.generate("u32", 3).tolist() == _twin_draws(2, 3)
    ctx.close()


def test_child_save_and_load_are_refused(tmp_path):
    p = str(tmp_path / "ck.rngsnap")
    ctx = rngsnap.Context(untracked="error")  # the fork refusal comes first
    ctx.seed_all(SEED)
    rngsnap.torch.track(ctx)
    for found in ctx.untracked_generators():  # left by earlier tests
        ctx.ignore_generator(found.obj)
    ctx.save(p)
    stray = np.random.default_rng(1)  # the child's scan would find it
    before = _read(p)
    child_p = str(tmp_path / "child.rngsnap")

    def child():
        torch.manual_seed(SEED + 1)  # a worker seeds its own copies
        torch.rand(2)
        out = []
        for call in (lambda: ctx.save(child_p),
                     lambda: ctx.save(p, replace=True),
                     lambda: ctx.save_bytes(),
                     lambda: ctx.state_dict(),
                     lambda: ctx.load(p),
                     lambda: ctx.load_bytes(before)):
            try:
                call()
                out.append(None)
            except rngsnap.Error as e:
                out.append((type(e).__name__, str(e)))
        return out
    got = _in_child(child)[1]
    assert got[0] == got[1] == ("OrderError", SAVE_REFUSED)
    assert got[2] == ("OrderError", SAVE_REFUSED.replace(
        "ctx.save()", "ctx.save_bytes()"))
    assert got[3] == ("OrderError", SAVE_REFUSED.replace(
        "ctx.save()", "ctx.state_dict()"))
    assert got[4] == ("OrderError", LOAD_REFUSED)
    assert got[5] == ("OrderError", LOAD_REFUSED.replace(
        "ctx.load()", "ctx.load_bytes()"))
    assert not os.path.exists(child_p)
    assert _read(p) == before
    ctx.ignore_generator(stray)
    ctx.save(p, replace=True)  # the parent saves on
    ctx.close()


def test_a_context_opened_in_the_child_is_the_childs_own(tmp_path):
    def child():
        with rngsnap.Context(untracked="ignore") as own:
            own.seed_all(SEED)
            own.save(str(tmp_path / "own.rngsnap"))
            return own.stream("cpu", 0, "dropout").generate("u32", 3).tolist()
    assert _in_child(child) == ("ok", _twin_draws(0, 3))


# ---- DataLoader workers ---------------------------------------------------

METHODS = ["fork", "spawn", "forkserver"]


class Drawing(torch.utils.data.Dataset):
    """A dataset that draws from an rngsnap stream it holds (the mistake:
    a worker's copy of a non-keyed stream)."""

    def __init__(self, stream):
        self.stream = stream

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.from_numpy(self.stream.generate("u32", 2).astype(
            np.int64))


class Saving(torch.utils.data.Dataset):
    """A dataset whose worker saves the job's context (the mistake of a
    checkpoint written from inside the data pipeline)."""

    def __init__(self, ctx, path):
        self.ctx, self.path = ctx, path

    def __len__(self):
        return 2

    def __getitem__(self, i):
        self.ctx.save(self.path, replace=True)
        return i


class KeyedByIndex(torch.utils.data.Dataset):
    """Draws from stream.derive(0, index) in the worker (fork only: the
    stream itself does not cross)."""

    def __init__(self, stream):
        self.stream = stream

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return torch.from_numpy(self.stream.derive(0, i).generate(
            "u32", 3).astype(np.int64))


def _loader(data, method, workers=1, **kw):
    return torch.utils.data.DataLoader(
        data, batch_size=2, num_workers=workers,
        multiprocessing_context=method, **kw)


@pytest.mark.parametrize("method", METHODS)
def test_worker_draw_from_an_inherited_stream(method):
    ctx = _context()
    s = ctx.stream("cpu", 0, "dropout")
    s.generate("u32", 1)
    loader = _loader(Drawing(s), method)
    if method == "fork":
        with pytest.raises(rngsnap.OrderError) as e:
            list(loader)
        assert "Caught OrderError in DataLoader worker process 0" in str(
            e.value)
        assert DRAW_REFUSED in str(e.value)
    else:  # the stream cannot even reach the worker
        with pytest.raises(TypeError) as e:
            list(loader)
        assert str(e.value).startswith(
            "cannot pickle an rngsnap.Stream: a stream's position belongs to "
            "the process that opened its rngsnap.Context")
        assert "rngsnap.torch.ResumableSampler with KeyedDataset" in str(
            e.value)
    assert s.generate("u32", 4).tolist() == _twin_draws(1, 4)
    ctx.close()


@pytest.mark.parametrize("method", METHODS)
def test_worker_save_is_refused(method, tmp_path):
    p = str(tmp_path / "ck.rngsnap")
    ctx = _context()
    rngsnap.torch.track(ctx)
    loader = _loader(Saving(ctx, p), method)
    if method == "fork":
        with pytest.raises(rngsnap.OrderError) as e:
            list(loader)
        assert SAVE_REFUSED in str(e.value)
    else:
        with pytest.raises(TypeError,
                           match="^cannot pickle an rngsnap.Context: its "
                                 "streams and app states belong to the "
                                 "process that opened it"):
            list(loader)
    assert not os.path.exists(p)
    ctx.save(p)  # in the process that opened it
    ctx.close()


def test_keyed_draws_in_fork_workers_equal_the_main_process():
    ctx = _context()
    s = ctx.stream("cpu", 0, "augment")
    data = KeyedByIndex(s)
    main = [b.tolist() for b in _loader(data, None, workers=0)]
    forked = [b.tolist() for b in _loader(data, "fork", workers=2)]
    assert forked == main
    ctx.close()


@pytest.mark.parametrize("method", METHODS)
def test_keyed_loader_gives_the_same_batches_under_every_start_method(
        method):
    """Only keys cross into a worker (ResumableSampler + KeyedDataset):
    every start method gives the main process's batches."""
    def batches(workers, method):
        ctx = _context()
        sampler = rngsnap.torch.ResumableSampler(
            ctx, ctx.stream("cpu", 0, "default"), 8, 2, 1)
        data = rngsnap.torch.KeyedDataset(Noisy())
        loader = torch.utils.data.DataLoader(
            data, batch_sampler=sampler, num_workers=workers,
            multiprocessing_context=method)
        out = [b.tolist() for b in sampler.batches(loader)]
        ctx.close()
        return out
    assert batches(2, method) == batches(0, None)


class Noisy(torch.utils.data.Dataset):
    """A sample with augmentation from torch, NumPy and random (seeded per
    sample by KeyedDataset)."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.tensor([i, int(torch.randint(0, 1000, ())),
                             int(np.random.randint(1000)),
                             random.randrange(1000)])
