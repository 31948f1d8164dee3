"""ResumableSampler through a loader wrapper like accelerate's
DataLoaderShard (what accelerator.prepare() returns): its __iter__ is a
generator that iterates the wrapped DataLoader at the first next() and
fetches one batch ahead.  The batches are those of the plain loader, and
the generator batches() gives is the wrapped DataLoader's, the one that
draws the base seed at iter() (tests/frameworks/bugs runs the real
accelerate)."""
import pytest

torch = pytest.importorskip("torch")
import rngsnap.torch as rt  # noqa: E402


class Shard:
    """DataLoaderShard's shape: base_dataloader, attributes delegated, a
    generator __iter__ one batch ahead."""

    def __init__(self, base):
        self.base_dataloader = base

    def __getattr__(self, name):
        if name == "base_dataloader":
            raise AttributeError(name)
        return getattr(self.base_dataloader, name)

    def __iter__(self):
        it = iter(self.base_dataloader)
        current = next(it, None)
        for following in it:
            yield current
            current = following
        if current is not None:
            yield current


class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return torch.tensor([float(i), torch.rand(1).item()])


def batches(ctx, wrap, name):
    sampler = rt.ResumableSampler(ctx, ctx.stream("cpu", 0, "augment"), 10,
                                  3, 2, name=name)
    base = torch.utils.data.DataLoader(rt.KeyedDataset(Data()),
                                       batch_sampler=sampler)
    loader = wrap(base)
    got = [b for _ in sampler.epochs() for b in sampler.batches(loader)]
    return got, base, torch.get_rng_state()


def test_wrapped_loader_gives_the_plain_loaders_batches(ctx):
    torch.manual_seed(0)
    plain, _, after_plain = batches(ctx, lambda base: base, "plain")
    torch.manual_seed(0)
    wrapped, base, after_wrapped = batches(ctx, Shard, "wrapped")
    assert [b.tolist() for b in wrapped] == [b.tolist() for b in plain]
    # iter() drew the base seed from the DataLoader's own generator, not
    # from torch's default one, which the checkpoint holds
    assert base.generator is not None
    assert torch.equal(after_wrapped, after_plain)
    assert torch.equal(after_plain, torch.manual_seed(0).get_state())
