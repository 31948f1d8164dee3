"""rngsnap.torch.ResumableSampler, DistributedResumableSampler and
KeyedDataset in one process: keyed order and samples, shards, the position
counting batches taken (not fetched ahead), the loader's generator, the
saved state and its refusals (exact texts)."""
import os
import pickle
import random
import struct

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import rngsnap  # noqa: E402
import rngsnap.torch as rt  # noqa: E402
from rngsnap.torch import LOADER_KEY, ORDER_KEY  # noqa: E402


class Squares(torch.utils.data.Dataset):
    """index + a draw from each of torch, NumPy and random."""

    def __init__(self, n=10):
        self.n = n
        self.label = "squares"

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor([float(i), torch.rand(1).item(),
                             np.random.rand(), random.random()],
                            dtype=torch.float64)


def make(ctx, n=10, batch=3, epochs=2, **kw):
    return rt.ResumableSampler(ctx, ctx.stream("cpu", 0, "augment"), n, batch,
                               epochs, **kw)


def loader_of(sampler, data, **kw):
    return torch.utils.data.DataLoader(rt.KeyedDataset(data),
                                       batch_sampler=sampler, **kw)


def test_order_and_samples_are_keyed_by_epoch_and_index(ctx):
    s = ctx.stream("cpu", 0, "augment")
    sampler = make(ctx, n=10, batch=4)
    batches = list(sampler.batches(loader_of(sampler, Squares())))
    keys = s.derive(0, ORDER_KEY).generate("u64", 10)
    order = np.argsort(keys, kind="stable").tolist()
    got = [int(v) for b in batches for v in b[:, 0]]
    assert got == order and sorted(got) == list(range(10))
    assert [len(b) for b in batches] == [4, 4, 2]
    # Each sample: the draws of seed_from(stream.derive(epoch, index)).
    first = order[0]
    rt.seed_from(s.derive(0, first))
    want = [torch.rand(1).item(), np.random.rand(), random.random()]
    assert batches[0][0, 1:].tolist() == want
    # Epoch 1: another order, other draws; the stream's own draws matter
    # to neither.
    s.generate("u32", 1000)
    nxt = [int(v) for b in sampler.batches(loader_of(sampler, Squares()))
           for v in b[:, 0]]
    keys1 = s.derive(1, ORDER_KEY).generate("u64", 10)
    assert nxt == np.argsort(keys1, kind="stable").tolist() != order


def test_shuffle_false_keeps_the_dataset_order(ctx):
    sampler = make(ctx, n=7, batch=3, shuffle=False, drop_last=True)
    assert sampler.batches_per_epoch == 2
    got = [b[:, 0].tolist() for b in sampler.batches(
        loader_of(sampler, Squares(7)))]
    assert got == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_ranks_take_their_shards_of_one_padded_order(ctx, tmp_path):
    """3 ranks' samplers in one process, in a 1-process gloo group (so each
    is its group's rank 0 and broadcasts its order to itself)."""
    n, world = 11, 3

    def shard(r, name):
        return rt.DistributedResumableSampler(
            ctx, ctx.stream("cpu", 0, "augment"), n, 2, 1, rank=r,
            world_size=world, name=name)
    lonely = shard(2, "sampler.2")
    with pytest.raises(RuntimeError) as e:
        next(lonely.batches(loader_of(lonely, Squares(n))))
    assert str(e.value) == (
        "sampler.2: torch.distributed is not initialised: call "
        "torch.distributed.init_process_group first (every rank takes its "
        "shard of rank 0's order)")
    order = np.argsort(ctx.stream("cpu", 0, "augment").derive(
        0, ORDER_KEY).generate("u64", n), kind="stable").tolist()
    padded = order + order[:1]  # 12 = 4 per rank, as DistributedSampler
    torch.distributed.init_process_group(
        "gloo", init_method="file://" + str(tmp_path / "rdv"), rank=0,
        world_size=1)
    try:
        for r in range(world):
            sampler = shard(r, "rank %d" % r)
            assert sampler.batches_per_epoch == 2
            got = [int(v) for b in sampler.batches(
                loader_of(sampler, Squares(n))) for v in b[:, 0]]
            assert got == padded[r::world]
    finally:
        torch.distributed.destroy_process_group()
    # The default rank and world size are the context's.
    d = rt.DistributedResumableSampler(ctx, ctx.stream("cpu", 0, "augment"),
                                       n, 2, 1, name="sampler.ctx")
    assert (d.rank, d.world_size) == (ctx.rank, ctx.world_size) == (0, 1)


def test_position_counts_batches_taken_not_fetched_ahead(ctx, tmp_path):
    sampler = make(ctx, n=26, batch=3)
    made = []
    keys = sampler._keys
    sampler._keys = lambda *a: (made.append(b) or b for b in keys(*a))
    loader = loader_of(sampler, Squares(26), num_workers=2, prefetch_factor=4)
    it = sampler.batches(loader)
    next(it)
    assert sampler.position == (0, 1) and len(sampler) == 8
    assert len(made) > 2  # the loader fetched ahead of the loop
    path = str(tmp_path / "ck.rngsnap")
    ctx.save(path)
    rest = list(it)
    with rngsnap.Context(resume=True) as again:
        resumed = make(again, n=26, batch=3)
        again.load(path)
        assert resumed.position == (0, 1)
        got = list(resumed.batches(loader_of(resumed, Squares(26))))
    assert len(got) == len(rest) == 8
    for a, b in zip(got, rest):
        assert torch.equal(a, b)


def test_the_loader_gets_its_own_generator(ctx):
    sampler = make(ctx)
    loader = loader_of(sampler, Squares(), num_workers=1)
    before = torch.get_rng_state()
    for _ in sampler.batches(loader):
        pass
    # iter(loader) drew its workers' base seed from this generator, not
    # from torch's default one (which a checkpoint holds).
    assert torch.equal(torch.get_rng_state(), before)
    assert isinstance(loader.generator, torch.Generator)
    assert loader.generator.initial_seed() == int(
        ctx.stream("cpu", 0, "augment").derive(0, LOADER_KEY).generate(
            "u64", 1)[0])
    # A generator of the user's is left alone.
    mine = torch.Generator().manual_seed(3)
    other = make(ctx, name="other")
    for _ in other.batches(loader_of(other, Squares(), generator=mine)):
        pass
    assert mine.initial_seed() == 3


def test_main_process_samples_leave_the_loop_generators_alone(ctx):
    torch.manual_seed(1)
    np.random.seed(2)
    random.seed(3)
    states = (torch.get_rng_state(), np.random.get_state()[1].copy(),
              random.getstate())
    sampler = make(ctx)
    for _ in sampler.batches(loader_of(sampler, Squares())):
        pass
    assert torch.equal(torch.get_rng_state(), states[0])
    assert (np.random.get_state()[1] == states[1]).all()
    assert random.getstate() == states[2]


def test_epochs_run_from_the_position(ctx):
    sampler = make(ctx, n=4, batch=2, epochs=3)
    loader = loader_of(sampler, Squares(4))
    seen = []
    for epoch in sampler.epochs():
        for _ in sampler.batches(loader):
            seen.append((epoch,) + sampler.position)
    assert seen == [(0, 0, 1), (0, 0, 2), (1, 1, 1), (1, 1, 2), (2, 2, 1),
                    (2, 2, 2)]
    assert sampler.position == (3, 0) and list(sampler.epochs()) == []
    assert list(sampler.batches(loader)) == [] and sampler.position == (3, 0)


def test_misuse_is_an_error_naming_the_fix(ctx):
    sampler = make(ctx)
    loader = loader_of(sampler, Squares())
    with pytest.raises(RuntimeError) as e:
        next(iter(loader))
    assert str(e.value) == (
        "rngsnap.sampler: iterated outside sampler.batches(loader); its "
        "position counts the batches the loop takes, so iterate `for batch "
        "in sampler.batches(loader)`")
    other = torch.utils.data.DataLoader(Squares(), batch_size=3)
    with pytest.raises(ValueError) as e:
        next(sampler.batches(other))
    assert str(e.value) == (
        "rngsnap.sampler: this loader does not draw from this sampler; "
        "build it as DataLoader(KeyedDataset(data), batch_sampler=sampler, "
        "...)")
    with pytest.raises(RuntimeError) as e:
        for _ in sampler.epochs():
            pass
    assert str(e.value) == (
        "rngsnap.sampler: epoch 0 ended with no batch taken; iterate "
        "sampler.batches(loader) inside sampler.epochs()")
    with pytest.raises(TypeError) as e:
        rt.KeyedDataset(Squares())[3]
    assert str(e.value) == (
        "KeyedDataset takes the SampleKeys a ResumableSampler yields, not "
        "int; build the loader as DataLoader(KeyedDataset(data), "
        "batch_sampler=sampler, ...)")
    with pytest.raises(ValueError) as e:
        make(ctx, batch=0, name="zero")
    assert str(e.value) == "batch_size must be an int >= 1, not 0"
    with pytest.raises(ValueError) as e:
        rt.DistributedResumableSampler(ctx, ctx.stream("cpu", 0, "augment"),
                                       8, 2, 1, rank=2, world_size=2)
    assert str(e.value) == "rank 2 is not below world_size 2"


def test_keyed_dataset_pickles_and_forwards_attributes():
    data = rt.KeyedDataset(Squares(5))
    back = pickle.loads(pickle.dumps(data))
    assert len(back) == 5 and back.label == "squares"
    assert not hasattr(back, "__getitems__")  # torch 2's batched fetch
    key = rt.SampleKey(0, 3, bytes(range(40)))
    assert pickle.loads(pickle.dumps(key)) == key


# ---- the saved position ------------------------------------------------

def saved(tmp_path, **kw):
    """A checkpoint (tracked) whose sampler took 2 batches of epoch 1."""
    path = str(tmp_path / "ck.rngsnap")
    with rngsnap.Context() as c:
        c.seed_all(4)
        sampler = make(c, **kw)
        rt.track(c)
        loader = loader_of(sampler, Squares(kw.get("n", 10)))
        for _ in sampler.batches(loader):
            pass
        for i, _ in enumerate(sampler.batches(loader)):
            if i == 1:
                break
        assert sampler.position == (1, 2)
        c.save(path)
    return path


def load_into(path, **kw):
    with rngsnap.Context(resume=True) as c:
        sampler = make(c, **kw)
        rt.track(c)
        c.load(path)
        return sampler.position


def test_position_resumes(tmp_path):
    assert load_into(saved(tmp_path)) == (1, 2)


@pytest.mark.parametrize("kw,lines", [
    (dict(epochs=3), ["  epochs: checkpoint 2, this job 3"]),
    (dict(batch=4), ["  batch size: checkpoint 3, this job 4"]),
    (dict(n=12), ["  dataset length: checkpoint 10, this job 12"]),
    (dict(n=11, batch=2, epochs=5, drop_last=True, shuffle=False), [
        "  dataset length: checkpoint 10, this job 11",
        "  batch size: checkpoint 3, this job 2",
        "  epochs: checkpoint 2, this job 5",
        "  shuffle: checkpoint True, this job False",
        "  drop_last: checkpoint False, this job True"]),
])
def test_another_job_shape_is_refused_naming_what_differs(tmp_path, kw,
                                                          lines):
    path = saved(tmp_path)
    with rngsnap.Context(resume=True) as c:
        sampler = make(c, **kw)
        rt.track(c)
        with pytest.raises(rngsnap.MismatchError) as e:
            c.load(path)
        assert sampler.position == (0, 0)  # nothing restored
    assert str(e.value).split("\n(")[0] == "\n".join(
        ["rngsnap.sampler: this sampler differs from the checkpoint's, so "
         "the resumed job would see other batches; nothing restored:"] + lines)


def test_refusal_without_track_is_raised_as_itself(tmp_path):
    """Every load method of the context raises a refusal of rngsnap's own
    callables as itself (python/rngsnap/_context/hooks.py), track() or
    not."""
    path = str(tmp_path / "ck.rngsnap")
    with rngsnap.Context() as c:
        c.seed_all(4)
        make(c)
        c.save(path)
    with rngsnap.Context() as c:
        make(c, epochs=3)
        with pytest.raises(rngsnap.MismatchError) as e:
            c.load(path)
    assert isinstance(e.value.__cause__, rngsnap.BackendError)
    assert str(e.value).splitlines()[1] == "  epochs: checkpoint 2, this job 3"


def state_of(sampler):
    return sampler._save()


@pytest.mark.parametrize("mutate,cls,text", [
    (lambda b: b[:-1], rngsnap.CorruptError,
     "rngsnap.sampler: state is 59 bytes, version 1 is 60"),
    (lambda b: b"XXXX" + b[4:], rngsnap.CorruptError,
     "rngsnap.sampler: state starts with b'XXXX', expected magic b'RSSM'"),
    (lambda b: b[:4] + b"\2" + b[5:], rngsnap.MismatchError,
     "rngsnap.sampler: state encoding version 2, this rngsnap reads "
     "version(s) 1"),
    (lambda b: b[:52] + struct.pack("<Q", 9), rngsnap.CorruptError,
     "rngsnap.sampler: position epoch 0 batch 9 is out of range (2 epochs of "
     "4 batches)"),
    (lambda b: b[:44] + struct.pack("<QQ", 2, 1),
     rngsnap.CorruptError, "rngsnap.sampler: position epoch 2 batch 1 is out "
     "of range (2 epochs of 4 batches)"),
    (lambda b: b[:32] + b"\2" + b[33:], rngsnap.CorruptError,
     "rngsnap.sampler: malformed sampler state (dataset length 10, batch "
     "size 3, epochs 2, shuffle 2, drop_last 0, rank 0 of 1)"),
])
def test_malformed_states_are_refused(ctx, mutate, cls, text):
    sampler = make(ctx)
    good = state_of(sampler)
    assert len(good) == 60
    with pytest.raises(cls) as e:
        sampler._load(mutate(good))
    assert str(e.value) == text
    assert sampler.position == (0, 0)
    sampler._load(good[:44] + struct.pack("<QQ", 1, 4))
    assert sampler.position == (1, 4)
