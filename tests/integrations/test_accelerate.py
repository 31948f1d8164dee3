"""rngsnap.integrations.accelerate.attach against the real accelerate: a job
killed (SIGKILL) right after a save_state, inside an epoch or at its end,
resumed with load_state in a new process, prints every loss and the final
parameters of the uninterrupted run, bit for bit, with 0 and 2 DataLoader
workers and on 2 processes; the same job plain, resumed as accelerate
documents, does not; a folder written without rngsnap is adopted; and
each refusal, word for word."""
import os
import random
import shutil
import zipfile

import pytest

pytest.importorskip("accelerate", reason="accelerate does not import for "
                    "this interpreter (tests/requirements.txt)")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from accelerate import Accelerator  # noqa: E402
from accelerate.utils import DataLoaderConfiguration  # noqa: E402
from accelerate.utils import load as accelerate_load  # noqa: E402

import rngsnap  # noqa: E402
import rngsnap.torch  # noqa: E402
from jobs import killed_at, losses, params, run  # noqa: E402
from rngsnap.integrations import accelerate as ra  # noqa: E402
from rngsnap.integrations import _prepared_loader  # noqa: E402
from toyjob import Augmented, net  # noqa: E402

JOB = "accelerate_job.py"


def by_rank(lines):
    """{rank: [loss hex, ...]} of "loss <rank> <hex>" lines."""
    out = {}
    for line in losses(lines):
        _, rank, value = line.split()
        out.setdefault(rank, []).append(value)
    return out


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """The uninterrupted run, 0 workers: the reference of every
    single-process resume (checkpoints and the worker count draw nothing
    from the keyed job's generators, so one run serves)."""
    rc, out, err = run(JOB, "--dir", str(tmp_path_factory.mktemp("whole")))
    assert rc == 0, err[-3000:]
    assert len(losses(out)) == 12 and len(params(out)) == 1
    return out


def _restored(before, after, tag):
    """The resumed run's load_state gave back the generators the killed
    run had at checkpoint tag (killpoint's digests)."""
    saved = [x for x in before if x.startswith("checkpoint %d " % tag)]
    back = [x.replace("resumed", "checkpoint", 1) for x in after
            if x.startswith("resumed ")]
    return len(saved) == 1 and back == saved


def test_resume_exact(whole, tmp_path):
    """One job killed three times, each time right after a save_state and
    resumed with load_state in a new process: inside epoch 0 (step 4 of
    6, 0 workers, resumed with 2), at the end of epoch 0 (step 6, 2
    workers, resumed with 2), inside epoch 1 (step 10, resumed with 0):
    every loss and the final parameters of the whole run."""
    args = ["--dir", str(tmp_path), "--every", "2"]
    a = killed_at(JOB, 4, *args, "--workers", "0")
    b = killed_at(JOB, 6, *args, "--workers", "2", "--resume")
    c = killed_at(JOB, 10, *args, "--workers", "2", "--resume")
    rc, d, err = run(JOB, *args, "--workers", "0", "--resume")
    assert rc == 0, err[-3000:]
    assert "Warning" not in err, err[-3000:]
    want = losses(whole)
    assert losses(a) == want[:4], "the run killed at step 4"
    assert _restored(a, b, 4) and losses(b) == want[4:6], \
        "resumed inside epoch 0, 0 workers then 2"
    assert _restored(b, c, 6) and losses(c) == want[6:10], \
        "resumed at the end of epoch 0, 2 workers"
    assert _restored(c, d, 10) and losses(d) == want[10:], \
        "resumed inside epoch 1, 2 workers then 0"
    assert params(d) == params(whole)


def test_two_processes_exact(tmp_path):
    """torchrun, 2 CPU processes (gloo): every rank's losses and the
    parameters of the uninterrupted run, killed at step 2 of an epoch of
    3 (each rank takes its cut of one order)."""
    args = ["--procs", "2", "--every", "2"]
    rc, want, err = run(JOB, "--dir", str(tmp_path / "w"), *args)
    assert rc == 0, err[-3000:]
    ranks = by_rank(want)
    assert sorted(ranks) == ["0", "1"] and len(ranks["0"]) == 6
    assert ranks["0"] != ranks["1"]  # the ranks take other batches
    before = killed_at(JOB, 2, "--dir", str(tmp_path / "k"), *args)
    rc, after, err = run(JOB, "--dir", str(tmp_path / "k"), *args,
                         "--resume")
    assert rc == 0, err[-3000:]
    got = by_rank(before)
    for rank, values in by_rank(after).items():
        got[rank] = got[rank] + values
    assert got == ranks
    assert sorted(params(after)) == sorted(params(want))


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """The job without rngsnap, saving every 2 steps: uninterrupted (its
    folders), and killed at step 4 (its folder: the one the adoption tests
    resume)."""
    d = tmp_path_factory.mktemp("plain")
    rc, out, err = run(JOB, "--dir", str(d / "w"), "--plain", "--every", "2")
    assert rc == 0, err[-3000:]
    before = killed_at(JOB, 4, "--dir", str(d / "k"), "--plain")
    assert losses(before) == losses(out)[:4]
    return out, before, d / "k" / "step-4"


@pytest.mark.parametrize("tag", [4, 6])
def test_plain_job_differs(plain, tmp_path, tag):
    """Resumed as accelerate documents (load_state, skip_first_batches):
    count the resumed steps that differ (docs/integrations/
    accelerate.md's table), inside epoch 0 (step 4 of 6; a difference is
    the issue's point) and at its end (step 6: counted)."""
    want, _, folder = plain
    shutil.copytree(folder.parent.parent / "w" / ("step-%d" % tag),
                    tmp_path / ("step-%d" % tag))
    rc, after, err = run(JOB, "--dir", str(tmp_path), "--plain", "--resume")
    assert rc == 0, err[-3000:]
    resumed, expected = losses(after), losses(want)[tag:]
    assert len(resumed) == len(expected) == 12 - tag
    differ = sum(a != b for a, b in zip(resumed, expected))
    print("plain accelerate, step %d of 12 resumed: %d of %d resumed "
          "steps differ" % (tag, differ, len(expected)))
    if tag == 4:
        assert differ > 0


def test_adopt_plain_checkpoint(plain, tmp_path):
    """A folder written without rngsnap (the plain run killed at step 4),
    resumed with attach: its random_states_0.pkl restored (the generators
    the plain run had at the checkpoint), said in one line; rngsnap
    checkpoints from then on, and a resume from one of them is exact."""
    _, before, folder = plain
    shutil.copytree(folder, tmp_path / "a" / "step-4")
    rc, adopted, err = run(JOB, "--dir", str(tmp_path / "a"), "--resume")
    assert rc == 0, err[-3000:]
    line = ("rngsnap: adopted random, NumPy, torch CPU generator states "
            "from %s (accelerate's own RNG file); rngsnap checkpoints from "
            "now on" % (tmp_path / "a" / "step-4" / "random_states_0.pkl"))
    assert err.splitlines().count(line) == 1
    assert _restored(before, adopted, 4)
    assert len(losses(adopted)) == 8
    # its step-8 folder is rngsnap's: resumed in a new process, the rest
    # of the adopted run, bit for bit
    assert os.path.exists(tmp_path / "a" / "step-8" / ra.MARKER)
    shutil.copytree(tmp_path / "a" / "step-8", tmp_path / "b" / "step-8")
    rc, second, err = run(JOB, "--dir", str(tmp_path / "b"), "--resume")
    assert rc == 0, err[-3000:]
    assert "adopted" not in err
    assert losses(second) == losses(adopted)[4:]
    assert params(second) == params(adopted)


def test_adopt_exact_where_the_file_holds_everything(tmp_path):
    """A job whose every draw comes from generators accelerate's file
    holds (no DataLoader): its plain folder adopted, the run goes on as
    the uninterrupted plain run, bit for bit."""
    rc, want, err = run(JOB, "--dir", str(tmp_path / "w"), "--plain",
                        "--no-loader")
    assert rc == 0, err[-3000:]
    shutil.copytree(tmp_path / "w" / "step-4", tmp_path / "a" / "step-4")
    rc, got, err = run(JOB, "--dir", str(tmp_path / "a"), "--resume",
                       "--no-loader")
    assert rc == 0, err[-3000:]
    assert "rngsnap: adopted random, NumPy, torch CPU generator states " \
        "from %s" % (tmp_path / "a" / "step-4" / "random_states_0.pkl") in err
    assert losses(got) == losses(want)[4:]
    assert params(got) == params(want)


# ---- refusals, in this process -------------------------------------------
# Several jobs in one process: a job's save_state sees the keyed loaders of
# the jobs before it, whose generators its context does not know (each
# context ignores its own); the subprocess tests check a job warns nothing.
several_jobs = pytest.mark.filterwarnings(
    "ignore::rngsnap.UntrackedGeneratorWarning")


class _Stream(torch.utils.data.IterableDataset):
    def __iter__(self):
        return iter(range(8))


@pytest.fixture
def job():
    """(accelerator, model, optimizer) of a fresh in-process job; the
    contexts attach() opened are closed after the test."""
    contexts = []
    real = ra.attach

    def attach(accelerator, ctx=None):
        ctx = real(accelerator, ctx)
        contexts.append(ctx)
        return ctx
    ra.attach = attach

    def make(**kw):
        acc = Accelerator(cpu=True, **kw)
        torch.manual_seed(0)
        model = net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        model, opt = acc.prepare(model, opt)
        return acc, model, opt
    yield make
    ra.attach = real
    for ctx in contexts:
        ctx.close()


class _Batches(torch.utils.data.BatchSampler):
    pass


def _loader(**kw):
    if "batch_sampler" not in kw:
        kw.setdefault("batch_size", 4)
    return torch.utils.data.DataLoader(kw.pop("data", Augmented()), **kw)


def _train(acc, model, opt, loader, steps):
    for _, (x, y) in zip(range(steps), loader):
        opt.zero_grad()
        acc.backward(torch.nn.functional.binary_cross_entropy_with_logits(
            model(x), y))
        opt.step()


def _live():
    return (torch.get_rng_state().clone(), np.random.get_state()[1].copy(),
            random.getstate())


def _same(a, b):
    return torch.equal(a[0], b[0]) and np.array_equal(a[1], b[1]) \
        and a[2] == b[2]


@several_jobs
@pytest.mark.parametrize("loader,message", [
    (dict(data=_Stream()), "rngsnap.integrations.accelerate: a prepared "
     "loader is a DataLoaderDispatcher, not the DataLoaderShard"),
    (dict(sampler=torch.utils.data.WeightedRandomSampler([1.0] * 24, 24)),
     "rngsnap: the training DataLoader has a sampler of its own "
     "(WeightedRandomSampler); the integration keys the order itself"),
    (dict(batch_sampler=_Batches(range(24), 4, False)), "rngsnap: the "
     "training DataLoader has a batch_sampler of its own (_Batches)"),
])
def test_loaders_that_cannot_be_keyed(job, loader, message):
    acc, model, opt = job()
    acc.prepare(_loader(**loader))
    with pytest.raises(rngsnap.InvalidError) as e:
        ra.attach(acc)
    assert str(e.value).startswith(message)


@several_jobs
def test_iterable_dataset_refused(job):
    """Prepared without device placement, an IterableDataset keeps a
    DataLoaderShard: refused by index."""
    acc, model, opt = job(device_placement=False)
    acc.prepare(_loader(data=_Stream()))
    with pytest.raises(rngsnap.InvalidError, match="^rngsnap: the training "
                       "DataLoader reads an IterableDataset; its samples "
                       "have no index to key"):
        ra.attach(acc)


@several_jobs
def test_dispatch_and_rng_types_refused(job):
    acc, model, opt = job(dataloader_config=DataLoaderConfiguration(
        dispatch_batches=True))
    acc.prepare(_loader())
    with pytest.raises(rngsnap.InvalidError, match="a prepared loader is a "
                       "DataLoaderDispatcher"):
        ra.attach(acc)
    acc, model, opt = job()
    shard = acc.prepare(_loader())
    shard.use_stateful_dataloader = True  # torchdata is not installed here
    with pytest.raises(rngsnap.InvalidError, match="the loader was prepared "
                       "with use_stateful_dataloader=True"):
        ra.attach(acc)
    acc, model, opt = job(rng_types=["torch"])
    shard = acc.prepare(_loader())
    # one process: accelerate copies nothing; two would copy at each iter()
    with pytest.raises(rngsnap.InvalidError, match=r"^rngsnap.integrations."
                       r"accelerate: Accelerator\(rng_types=\['torch'\]\) "
                       r"copies rank 0's generators to every rank at each "
                       r"iter\(\) of the loader"):
        _prepared_loader.inspect(shard, 2)


@several_jobs
def test_skip_first_batches_refused(job, tmp_path):
    """Resumed the accelerate way, an attached job would skip the batches a
    second time: refused at the first batch, before a step trains."""
    acc, model, opt = job()
    loader = acc.prepare(_loader())
    ra.attach(acc)
    _train(acc, model, opt, loader, 4)
    acc.save_state(str(tmp_path / "ck"))
    acc, model, opt = job()
    loader = acc.prepare(_loader())
    ra.attach(acc)
    acc.load_state(str(tmp_path / "ck"))
    skipped = acc.skip_first_batches(loader, 4)
    with pytest.raises(rngsnap.InvalidError, match=r"^rngsnap.integrations."
                       r"accelerate: the prepared loader's batches are "
                       r"iterated by another DataLoader \(accelerator."
                       r"skip_first_batches\?\); with attach\(\) the prepared "
                       r"loader itself resumes at the checkpoint's batch"):
        next(iter(skipped))
    assert len(list(loader)) == 2  # the loader itself: batches 4 and 5


@several_jobs
def test_late_attach_refused(job, tmp_path):
    """attach() after a step, or after a load_state: refused."""
    acc, model, opt = job()
    loader = acc.prepare(_loader())
    _train(acc, model, opt, loader, 1)
    with pytest.raises(rngsnap.InvalidError, match=r"^rngsnap.integrations."
                       r"accelerate: attach\(\) came after the job trained "
                       r"or loaded a checkpoint \(optimizer 0 has state\)"):
        ra.attach(acc)
    acc.save_state(str(tmp_path / "ck"))
    acc, model, opt = job()
    loader = acc.prepare(_loader())
    acc.load_state(str(tmp_path / "ck"))
    with pytest.raises(rngsnap.InvalidError, match=r"\(optimizer 0 has "
                       r"state\); call attach\(accelerator\) right after "
                       r"accelerator.prepare\(...\), before load_state"):
        ra.attach(acc)


@several_jobs
def test_loader_prepared_after_attach_refused(job, tmp_path):
    acc, model, opt = job()
    acc.prepare(_loader())
    ra.attach(acc)
    acc.prepare(_loader())
    with pytest.raises(rngsnap.InvalidError, match=r"^rngsnap.integrations."
                       r"accelerate: save_state refused, nothing saved: "
                       r"loader 1 was prepared after attach\(\)"):
        acc.save_state(str(tmp_path / "ck"))
    assert not os.listdir(tmp_path / "ck")


@several_jobs
def test_load_after_training_or_draw_refused(job, tmp_path):
    acc, model, opt = job()
    loader = acc.prepare(_loader())
    ra.attach(acc)
    acc.save_state(str(tmp_path / "ck"))
    with pytest.raises(rngsnap.OrderError, match=r"nothing restored: it "
                       r"came after save_state in this process; load_state "
                       r"once, right after attach\(accelerator\)"):
        acc.load_state(str(tmp_path / "ck"))
    acc, model, opt = job()
    loader = acc.prepare(_loader())
    ra.attach(acc)
    _train(acc, model, opt, loader, 1)
    with pytest.raises(rngsnap.OrderError, match=r"load_state\(.*\) refused,"
                       r" nothing restored: it came after an iteration of a "
                       r"prepared loader in this process"):
        acc.load_state(str(tmp_path / "ck"))
    acc, model, opt = job()
    acc.prepare(_loader())
    ra.attach(acc)
    torch.rand(1)  # e.g. a model built between attach and load_state
    with pytest.raises(rngsnap.OrderError, match=r"nothing restored: "
                       r"torch.cpu drew since attach\(\), and the load would "
                       r"throw those draws away"):
        acc.load_state(str(tmp_path / "ck"))


@several_jobs
def test_adopt_damaged_or_foreign_refused(job, plain, tmp_path):
    """A flipped byte in the tensor storage of random_states_0.pkl (which
    torch.load takes silently) and a pickle calling a foreign global:
    refused, nothing restored (so no step can train)."""
    _, _, folder = plain
    bad = tmp_path / "flipped"
    shutil.copytree(folder, bad)
    _flip_torch_state(bad / "random_states_0.pkl")
    foreign = tmp_path / "foreign"
    shutil.copytree(folder, foreign)
    marker = tmp_path / "ran"
    torch.save({"random_state": _Evil(str(marker))},
               foreign / "random_states_0.pkl")
    for where, message in (
            (bad, r"^rngsnap: .*flipped/random_states_0.pkl is damaged "
             r"\(record 'random_states_0/data/0': Bad CRC-32 for file "
             r"'random_states_0/data/0'\); it is not the file the framework "
             r"wrote, so nothing was restored"),
            (foreign, r"^rngsnap: the restricted unpickler refuses the "
             r"global 'posix.system' in data.pkl of .*foreign/"
             r"random_states_0.pkl")):
        acc, model, opt = job()
        acc.prepare(_loader())
        ra.attach(acc)
        live = _live()
        with pytest.raises(rngsnap.CorruptError, match=message):
            acc.load_state(str(where))
        assert _same(live, _live())
    assert not marker.exists()


def _flip_torch_state(path):
    """Flip a bit inside the storage record of torch's generator state in
    accelerate's random_states_0.pkl; torch.load takes the file silently
    (weights_only too) and returns another state."""
    before = torch.load(path, weights_only=False)["torch_manual_seed"]
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        rec = next(i for i in z.infolist() if "/data/" in i.filename
                   and i.file_size > 1000)
    start = rec.header_offset + 30 + len(rec.filename.encode()) + \
        int.from_bytes(data[rec.header_offset + 28:rec.header_offset + 30],
                       "little")
    data[start + 100] ^= 0x01
    path.write_bytes(bytes(data))
    after = accelerate_load(path)["torch_manual_seed"]  # as load_state
    assert not torch.equal(before, after)


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch " + self.marker,))


@several_jobs
def test_rngsnap_has_the_last_word(job, tmp_path):
    """accelerate restores its random_states_0.pkl first, turning any
    failure into an info line and taking a flipped storage byte
    silently; rngsnap's restore comes after it, all or nothing."""
    acc, model, opt = job()
    loader = acc.prepare(_loader())
    ra.attach(acc)
    _train(acc, model, opt, loader, 2)
    acc.save_state(str(tmp_path / "ck"))
    saved = _live()
    _flip_torch_state(tmp_path / "ck" / "random_states_0.pkl")
    acc, model, opt = job()
    acc.prepare(_loader())
    ra.attach(acc)
    acc.load_state(str(tmp_path / "ck"))
    assert _same(saved, _live())


@several_jobs
def test_adopt_with_context_awaiting_load_refused(job, plain):
    _, _, folder = plain
    acc, model, opt = job()
    acc.prepare(_loader())
    ctx = rngsnap.Context(resume=True)
    rngsnap.torch.track(ctx)
    ra.attach(acc, ctx)
    with pytest.raises(rngsnap.InvalidError, match=r"nothing restored: the "
                       r"folder was written without rngsnap, and your "
                       r"context, opened with resume=True, awaits an "
                       r"rngsnap load"):
        acc.load_state(str(folder))
    ctx.close()


@several_jobs
def test_adopted_position_required(job, plain, tmp_path):
    """An adopted folder holds no loader position: the loader refuses to
    run until resume_at() says where the job was."""
    _, _, folder = plain
    acc, model, opt = job()
    loader = acc.prepare(_loader())
    ra.attach(acc)
    acc.load_state(str(folder))
    with pytest.raises(rngsnap.OrderError, match=r"^rngsnap.integrations."
                       r"accelerate: load_state adopted .*random_states_0.pkl"
                       r", written without rngsnap: accelerate's checkpoint "
                       r"holds no loader position"):
        next(iter(loader))
    with pytest.raises(rngsnap.OrderError, match="accelerate's checkpoint "
                       "holds no loader position"):
        acc.save_state(str(tmp_path / "ck"))
    ra.resume_at(loader, 0, 4)
    assert len(list(loader)) == 2  # the epoch's batches 4 and 5


@several_jobs
def test_resume_at_checks_the_position(job, tmp_path):
    acc, model, opt = job()
    loader = acc.prepare(_loader())
    ra.attach(acc)
    _train(acc, model, opt, loader, 4)
    acc.save_state(str(tmp_path / "ck"))
    acc, model, opt = job()
    loader = acc.prepare(_loader())
    with pytest.raises(rngsnap.InvalidError, match="resume_at.. takes a "
                       "loader that accelerator.prepare.. returned before "
                       "attach"):
        ra.resume_at(loader, 0, 4)
    ra.attach(acc)
    with pytest.raises(rngsnap.OrderError, match=r"resume_at\(\) comes "
                       r"after accelerator.load_state"):
        ra.resume_at(loader, 0, 4)
    acc.load_state(str(tmp_path / "ck"))
    with pytest.raises(rngsnap.MismatchError, match="the job resumes epoch 0"
                       " at batch 3, the checkpoint's loader position is "
                       "epoch 0, batch 4"):
        ra.resume_at(loader, 0, 3)
    ra.resume_at(loader, 0, 4)
    assert len(list(loader)) == 2


@several_jobs
def test_marker_refusals(job, tmp_path):
    acc, model, opt = job()
    acc.prepare(_loader())
    ra.attach(acc)
    acc.save_state(str(tmp_path / "ck"))
    (tmp_path / "ck" / ra.MARKER).write_text(
        '{"format": "rngsnap-accelerate", "version": 1, '
        '"custom_checkpoint": 0, "world_size": 2}\n')
    acc, model, opt = job()
    acc.prepare(_loader())
    ra.attach(acc)
    with pytest.raises(rngsnap.MismatchError, match="nothing restored: it "
                       "was saved by 2 processes, this job has 1"):
        acc.load_state(str(tmp_path / "ck"))
    (tmp_path / "ck" / ra.MARKER).write_text("{}")
    acc, model, opt = job()
    acc.prepare(_loader())
    ra.attach(acc)
    with pytest.raises(rngsnap.CorruptError, match="is not rngsnap's marker"):
        acc.load_state(str(tmp_path / "ck"))


class _Counter:
    """An object of the job's own, registered for checkpointing."""

    def state_dict(self):
        return {"n": 1}

    def load_state_dict(self, state):
        pass


@several_jobs
def test_object_order_refused(job, tmp_path):
    """rngsnap's object registers at the first save_state: after an object
    the job registered before it; a resumed job registering none before
    load_state would hand rngsnap's file to another object."""
    acc, model, opt = job()
    acc.prepare(_loader())
    ra.attach(acc)
    acc.register_for_checkpointing(_Counter())
    acc.save_state(str(tmp_path / "ck"))
    acc, model, opt = job()
    acc.prepare(_loader())
    ra.attach(acc)
    with pytest.raises(rngsnap.MismatchError, match=r"nothing restored: "
                       r"rngsnap's state is custom_checkpoint_1.pkl there, "
                       r"and this job would load custom_checkpoint_0.pkl "
                       r"into it"):
        acc.load_state(str(tmp_path / "ck"))


@several_jobs
def test_context_of_yours(job):
    acc, model, opt = job()
    ctx = rngsnap.Context()
    with pytest.raises(rngsnap.InvalidError, match="the context tracks no "
                       "torch, NumPy or random generator"):
        ra.attach(acc, ctx)
    rngsnap.torch.track(ctx)
    ctx.set_rank(1, 2)
    with pytest.raises(rngsnap.MismatchError, match=r"the context is rank 1 "
                       r"of 2, this process is 0 of 1; ctx.set_rank\("):
        ra.attach(acc, ctx)
    ctx.set_rank(0, 1)
    assert ra.attach(acc, ctx) is ctx
    with pytest.raises(rngsnap.InvalidError, match=r"attach\(\) was "
                       r"already called for this Accelerator"):
        ra.attach(acc, ctx)
    ctx.close()
