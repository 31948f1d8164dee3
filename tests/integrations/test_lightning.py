"""rngsnap.integrations.lightning.RngsnapCallback against the real
Lightning (lightning.pytorch and pytorch_lightning): a job killed right
after a ModelCheckpoint(every_n_train_steps=k) checkpoint, inside an epoch
or at its end, with 0 or 2 DataLoader workers, one process or
strategy="ddp" on 2 (gloo), resumed with fit(ckpt_path=...) in a new
process, prints every loss and the final parameters of the uninterrupted
run, bit for bit, on every rank; the same job plain does not; and each
refusal, word for word."""
import pytest

pytest.importorskip("lightning.pytorch", reason="lightning does not import "
                    "for this interpreter (tests/requirements.txt)")
pytest.importorskip("pytorch_lightning", reason="pytorch-lightning does not "
                    "import for this interpreter (tests/requirements.txt)")

import os  # noqa: E402

import torch  # noqa: E402

import rngsnap  # noqa: E402
from jobs import killed_at, losses, params, run  # noqa: E402
from rngsnap.integrations import _keyed_loader as kl  # noqa: E402

JOB = "lightning_job.py"


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """The uninterrupted run, 0 workers: the reference of every resume
    (checkpoints and the worker count draw nothing, so one run serves)."""
    rc, out, err = run(JOB, "--dir", str(tmp_path_factory.mktemp("whole")))
    assert rc == 0, err[-3000:]
    assert len(losses(out)) == 12 and params(out)
    return out


# (every, kill at, workers of the killed run, of the resumed run, package).
# 6 steps an epoch.  Samples are a pure function of their keys, so one
# reference serves every worker count, killed with one and resumed with
# another too.
@pytest.mark.parametrize("every,tag,killed_workers,workers,package", [
    (4, 4, 0, 0, "lightning.pytorch"),  # inside epoch 0 (step 4 of 6)
    (6, 6, 0, 0, "lightning.pytorch"),  # at the end of epoch 0
    (4, 8, 2, 2, "lightning.pytorch"),  # inside epoch 1, 2 workers
    (4, 4, 0, 2, "pytorch_lightning"),  # killed with 0, resumed with 2
    (6, 6, 2, 0, "pytorch_lightning"),  # epoch end, killed with 2, 0 after
])
def test_resume_exact(whole, tmp_path, every, tag, killed_workers, workers,
                      package):
    args = ["--dir", str(tmp_path), "--every", str(every), "--package",
            package]
    before = killed_at(JOB, tag, *args, "--workers", str(killed_workers))
    rc, after, err = run(JOB, *args, "--workers", str(workers), "--resume")
    assert rc == 0, err[-3000:]
    assert "not resumable" not in err  # Lightning sees a stateful loader
    assert len(losses(before)) == tag
    assert losses(before) + losses(after) == losses(whole)
    assert params(after) == params(whole)


def test_plain_job_differs(whole, tmp_path):
    """The same job without the callback, killed inside epoch 0 and
    resumed: Lightning restarts the loader; count the resumed steps that
    differ (docs/integrations/lightning.md's table)."""
    rc, plain, err = run(JOB, "--dir", str(tmp_path / "w"), "--plain")
    assert rc == 0, err[-3000:]
    before = killed_at(JOB, 4, "--dir", str(tmp_path / "j"), "--plain")
    rc, after, err = run(JOB, "--dir", str(tmp_path / "j"), "--plain",
                         "--resume")
    assert rc == 0, err[-3000:]
    assert losses(before) == losses(plain)[:4]
    resumed, want = losses(after), losses(plain)[4:]
    assert len(resumed) == len(want) == 8
    differ = sum(a != b for a, b in zip(resumed, want))
    print("plain Lightning, killed at step 4 of 12: %d of %d resumed steps "
          "differ" % (differ, len(want)))
    assert differ > 0


def test_plain_checkpoint_refused(tmp_path):
    """A checkpoint written without the callback, resumed with it."""
    killed_at(JOB, 4, "--dir", str(tmp_path), "--plain")
    rc, out, err = run(JOB, "--dir", str(tmp_path), "--resume")
    assert rc != 0 and not losses(out)
    assert "rngsnap.MismatchError: rngsnap.integrations.lightning: the " \
        "checkpoint holds no rngsnap state (it was written without " \
        "RngsnapCallback); nothing restored" in err


class _Stream(torch.utils.data.IterableDataset):
    def __iter__(self):
        return iter(range(4))


def test_loaders_that_cannot_be_keyed():
    ctx = rngsnap.Context()
    ctx.seed_all(1)
    s, pos = ctx.stream("cpu", 0, "augment"), kl.LoaderPosition("p")
    data = torch.utils.data.TensorDataset(torch.zeros(8, 2))
    with pytest.raises(rngsnap.InvalidError, match="reads an IterableDataset"
                       "; its samples have no index to key"):
        kl.keyed_loader(torch.utils.data.DataLoader(_Stream()), s, pos)
    weighted = torch.utils.data.WeightedRandomSampler([1.0] * 8, 8)
    with pytest.raises(rngsnap.InvalidError, match=r"has a sampler of its "
                       r"own \(WeightedRandomSampler\)"):
        kl.keyed_loader(torch.utils.data.DataLoader(data, sampler=weighted),
                        s, pos)
    batches = torch.utils.data.BatchSampler(range(8), 2, False)
    with pytest.raises(rngsnap.InvalidError, match="has a batch_sampler of "
                       "its own"):
        kl.keyed_loader(torch.utils.data.DataLoader(
            data, batch_sampler=batches), s, pos)
    with pytest.raises(rngsnap.InvalidError, match="not a torch DataLoader"):
        kl.keyed_loader([1, 2], s, pos)
    ctx.close()


def test_other_loader_shape_refused():
    """A checkpoint's position of 24 samples in batches of 4, resumed with
    another batch size: MismatchError naming both values."""
    saved = kl.LoaderPosition("p")
    saved.shape, saved.epoch, saved.taken = (24, 4), 0, 4
    data = saved.save()
    resumed = kl.LoaderPosition("p")
    resumed.load(data)
    assert (resumed.epoch, resumed.taken) == (0, 4)
    resumed.shape = (24, 8)
    with pytest.raises(rngsnap.MismatchError, match="batch size: checkpoint "
                       "4, this job 8"):
        resumed.check()
    with pytest.raises(rngsnap.CorruptError, match="37 bytes, not the 38 of a loader position"):
        kl.LoaderPosition("p").load(data[:-1])


def test_epochs_differ(whole):
    """Epoch 1 is not epoch 0 again: Lightning's set_epoch reaches the
    keyed order (dataloader.batch_sampler.sampler), so each epoch has its
    own order and draws.  (Before, it reached nothing and epoch 1 fetched
    epoch 0's batches again, bit for bit: the reference itself was wrong,
    and a resume at an epoch's end, which rolls over to epoch 1, differed
    from it.)"""
    batches = [x for x in whole if x.startswith("batch ")]
    assert len(batches) == 12 and len(set(batches)) == 12


def test_set_epoch_after_a_resumed_iterator_refused():
    """The framework names another epoch once an iterator resumed inside
    an epoch has begun (workers fetch at iter()): OrderError, never that
    epoch's batches served as this one's."""
    ctx = rngsnap.Context()
    ctx.seed_all(1)
    pos = kl.LoaderPosition("p")
    pos.epoch, pos.taken = 0, 2
    data = torch.utils.data.TensorDataset(torch.arange(24.0))
    loader = kl.keyed_loader(torch.utils.data.DataLoader(
        data, batch_size=4, shuffle=True), ctx.stream("cpu", 0, "augment"),
        pos)
    it = iter(loader)
    next(it)
    loader.batch_sampler.sampler.set_epoch(0)  # the same epoch: nothing
    with pytest.raises(rngsnap.OrderError) as e:
        loader.batch_sampler.sampler.set_epoch(1)
    assert str(e.value) == (
        "p: the framework starts epoch 1, but the loader resumed at batch 2 "
        "of epoch 0 and has begun fetching it; nothing of epoch 1 is "
        "fetched.  The checkpoint's position and the framework's epoch "
        "counter disagree: resume from a checkpoint written by the same job "
        "and integration")
    ctx.close()


# ---- strategy="ddp": 2 processes (gloo), Lightning's own launcher ------
DDP = ("--devices", "2")


def _rank(lines, r):
    """One rank's lines of a DDP run ("loss 1 <hex>": rank 1's)."""
    return [x for x in lines if x.split()[1] == str(r)]


@pytest.fixture(scope="module")
def whole_ddp(tmp_path_factory):
    rc, out, err = run(JOB, "--dir", str(tmp_path_factory.mktemp("wddp")),
                       *DDP)
    assert rc == 0, err[-3000:]
    for r in (0, 1):  # 24 samples: 12 a rank, 3 steps an epoch
        assert len(_rank(losses(out), r)) == 6 and _rank(params(out), r)
    assert _rank(losses(out), 0) != _rank(losses(out), 1)  # own shards
    return out


@pytest.mark.parametrize("every,tag,killed_workers,workers,package", [
    (2, 2, 0, 0, "lightning.pytorch"),  # inside epoch 0 (step 2 of 3)
    (4, 4, 2, 2, "pytorch_lightning"),  # inside epoch 1, 2 workers
])
def test_ddp_resume_exact(whole_ddp, tmp_path, every, tag, killed_workers,
                          workers, package):
    """Rank 0 writes the one checkpoint; it holds both ranks' states and
    each rank takes its own back."""
    args = ["--dir", str(tmp_path), "--every", str(every), "--package",
            package, *DDP]
    before = killed_at(JOB, tag, *args, "--workers", str(killed_workers))
    held = torch.load(os.path.join(tmp_path, "step=%d.ckpt" % tag),
                      weights_only=True)["callbacks"]["RngsnapCallback"]
    assert held["world_size"] == 2 and held["rank/0"] != held["rank/1"]
    rc, after, err = run(JOB, *args, "--workers", str(workers), "--resume")
    assert rc == 0, err[-3000:]
    for r in (0, 1):
        assert len(_rank(losses(before), r)) == tag
        assert _rank(losses(before) + losses(after), r) == \
            _rank(losses(whole_ddp), r)
        assert _rank(params(after), r) == _rank(params(whole_ddp), r)


def test_ddp_plain_differs_and_other_world_size_refused(whole_ddp, tmp_path):
    """The same DDP job plain, killed at step 2 of 6 and resumed: count
    the resumed steps that differ on each rank (the docs' table).  The
    callback's 2-rank checkpoint resumed by 1 process: MismatchError."""
    rc, plain, err = run(JOB, "--dir", str(tmp_path / "w"), "--plain", *DDP)
    assert rc == 0, err[-3000:]
    before = killed_at(JOB, 2, "--dir", str(tmp_path / "j"), "--plain",
                       "--every", "2", *DDP)
    rc, after, err = run(JOB, "--dir", str(tmp_path / "j"), "--plain",
                         "--every", "2", "--resume", *DDP)
    assert rc == 0, err[-3000:]
    for r in (0, 1):
        assert _rank(losses(before), r) == _rank(losses(plain), r)[:2]
        resumed, want = _rank(losses(after), r), _rank(losses(plain), r)[2:]
        assert len(resumed) == len(want) == 4
        differ = sum(a != b for a, b in zip(resumed, want))
        print("plain Lightning ddp, rank %d, killed at step 2 of 6: %d of "
              "%d resumed steps differ" % (r, differ, len(want)))
        assert differ > 0

    killed_at(JOB, 2, "--dir", str(tmp_path / "r"), "--every", "2", *DDP)
    rc, out, err = run(JOB, "--dir", str(tmp_path / "r"), "--every", "2",
                       "--resume")
    assert rc != 0 and not losses(out)
    assert "rngsnap.MismatchError: load_state_dict: the state dict was " \
        "saved by 2 ranks, this job has 1 (this is rank 0); nothing " \
        "restored. Resume with the world size that saved" in err


def test_distributed_sampler_seed_checked():
    """A DDP checkpoint's order comes from Lightning's DistributedSampler
    (its seed: seed_everything's); resumed with another seed, the shards
    would differ: MismatchError naming both seeds."""
    saved = kl.LoaderPosition("p")
    saved.shape, saved.seed, saved.epoch, saved.taken = (24, 4), 1234, 0, 2
    data = saved.save()
    assert len(data) == 46  # v2: v1's 38 bytes and the seed
    resumed = kl.LoaderPosition("p")
    resumed.load(data)
    resumed.shape, resumed.seed = (24, 4), 1234
    resumed.check()
    resumed.seed = 7
    with pytest.raises(rngsnap.MismatchError) as e:
        resumed.check()
    assert str(e.value).endswith(
        "  DistributedSampler seed: checkpoint 1234, this job 7 (the seed "
        "given to seed_everything)")
    with pytest.raises(rngsnap.CorruptError, match="45 bytes, not the 46 "
                       "of a loader position"):
        kl.LoaderPosition("p").load(data[:-1])


@pytest.mark.parametrize("package", ["lightning.pytorch",
                                     "pytorch_lightning"])
def test_other_multiprocess_strategy_refused(package):
    """ddp_spawn (a DDPStrategy whose processes are started by
    torch.multiprocessing) is not verified: refused in setup, before any
    context or loader, on a Trainer that starts nothing yet."""
    import importlib
    from rngsnap.integrations.lightning import RngsnapCallback
    pl = importlib.import_module(package)
    trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp_spawn",
                         logger=False, enable_progress_bar=False)
    with pytest.raises(rngsnap.InvalidError) as e:
        RngsnapCallback().setup(trainer, None, "fit")
    assert str(e.value) == (
        "rngsnap.integrations.lightning: DDPStrategy(start_method='spawn') "
        "on 2 processes is not covered; RngsnapCallback restores every rank"
        " of strategy=\"ddp\"; nothing trained: use strategy=\"ddp\" (or one "
        "device)")
