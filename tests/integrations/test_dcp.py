"""rngsnap.integrations.dcp.RngState against the real
torch.distributed.checkpoint: a 2-rank job (gloo) killed right after a
dcp.save inside an epoch, resumed with dcp.load in new processes, prints
every loss and the final parameters of the uninterrupted run on each
rank, bit for bit; the same job plain does not; and each refusal, word
for word."""
import warnings

import pytest

pytest.importorskip("torch.distributed.checkpoint.stateful", reason="torch "
                    "has no torch.distributed.checkpoint.stateful (torch >= "
                    "2.2) for this interpreter (tests/requirements.txt)")

import torch  # noqa: E402
import torch.distributed.checkpoint as dcp  # noqa: E402

import rngsnap  # noqa: E402
import rngsnap.torch  # noqa: E402
from jobs import killed_at, losses, params, run  # noqa: E402
from rngsnap.integrations.dcp import RngState  # noqa: E402

JOB = "dcp_job.py"


def _rank(lines, r):
    """One rank's lines ("loss 1 <hex>": rank 1's)."""
    return [x for x in lines if x.split()[1] == str(r)]


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """The uninterrupted run, 0 workers: the reference of every resume
    (samples are a pure function of their keys, whatever the workers)."""
    rc, out, err = run(JOB, "--dir", str(tmp_path_factory.mktemp("whole")))
    assert rc == 0, err[-3000:]
    for r in (0, 1):  # 13 samples a rank, batches of 3: 5 steps an epoch
        assert len(_rank(losses(out), r)) == 10 and _rank(params(out), r)
    assert _rank(losses(out), 0) != _rank(losses(out), 1)  # own shards
    return out


# (kill at, workers of the killed run, of the resumed run); a checkpoint
# every 2 steps.
@pytest.mark.parametrize("tag,killed_workers,workers", [
    (4, 0, 0),  # inside epoch 0 (step 4 of 5)
    (6, 2, 0),  # inside epoch 1 (its first step), killed with 2 workers
])
def test_resume_exact(whole, tmp_path, tag, killed_workers, workers):
    args = ["--dir", str(tmp_path)]
    before = killed_at(JOB, tag, *args, "--workers", str(killed_workers))
    held = _rng_entry(tmp_path / ("step-%d" % tag))
    assert held["world_size"] == 2 and held["rank/0"] != held["rank/1"]
    rc, after, err = run(JOB, *args, "--workers", str(workers), "--resume")
    assert rc == 0, err[-3000:]
    for r in (0, 1):
        assert len(_rank(losses(before), r)) == tag
        assert _rank(losses(before) + losses(after), r) == \
            _rank(losses(whole), r)
        assert _rank(params(after), r) == _rank(params(whole), r)


def _rng_entry(folder):
    """The "rng" entry of a DCP checkpoint, read here (one process).  DCP
    writes a key every rank holds once: each rank's bytes are under
    rank/<r>, so both ranks' are there."""
    meta = dcp.FileSystemReader(str(folder)).read_metadata()
    keys = sorted(k for k in meta.state_dict_metadata if k.startswith("rng"))
    assert keys == ["rng.format", "rng.rank/0", "rng.rank/1",
                    "rng.version", "rng.world_size"]
    state = {"rng": dict.fromkeys(k[4:] for k in keys)}
    _quiet(dcp.load, state, checkpoint_id=str(folder))
    return state["rng"]


def test_plain_job_differs_and_its_checkpoint_refused(whole, tmp_path):
    """The same job plain (a DistributedSampler, the batches done skipped
    at resume), killed at step 4 of 10 and resumed: count the resumed
    steps that differ on each rank (docs/integrations/dcp.md's table).
    Its checkpoint resumed with RngState: DCP finds no rng entry."""
    rc, plain, err = run(JOB, "--dir", str(tmp_path / "w"), "--plain")
    assert rc == 0, err[-3000:]
    before = killed_at(JOB, 4, "--dir", str(tmp_path / "j"), "--plain")
    rc, after, err = run(JOB, "--dir", str(tmp_path / "j"), "--plain",
                         "--resume")
    assert rc == 0, err[-3000:]
    for r in (0, 1):
        assert _rank(losses(before), r) == _rank(losses(plain), r)[:4]
        resumed, want = _rank(losses(after), r), _rank(losses(plain), r)[4:]
        assert len(resumed) == len(want) == 6
        differ = sum(a != b for a, b in zip(resumed, want))
        print("plain DCP, rank %d, killed at step 4 of 10: %d of %d resumed "
              "steps differ" % (r, differ, len(want)))
        assert differ > 0

    rc, out, err = run(JOB, "--dir", str(tmp_path / "j"), "--resume")
    assert rc != 0 and not losses(out)
    assert "torch.distributed.checkpoint.api.CheckpointException" in err
    assert "RuntimeError: Missing key in checkpoint state_dict: " \
        "rng.format." in err


def test_other_world_size_refused(tmp_path):
    """A checkpoint of 2 ranks resumed by 1: MismatchError, nothing
    trained.  (By more ranks than saved, DCP itself refuses first: the
    new rank's rng.rank/<r> is missing, CheckpointException.)"""
    killed_at(JOB, 2, "--dir", str(tmp_path))
    rc, out, err = run(JOB, "--dir", str(tmp_path), "--resume", "--ranks",
                       "1")
    assert rc != 0 and not losses(out)
    assert "rngsnap.MismatchError: load_state_dict: the state dict was " \
        "saved by 2 ranks, this job has 1 (this is rank 0); nothing " \
        "restored. Resume with the world size that saved" in err


# ---- in this process: dcp without a process group (one rank) ----------

def _tracked(resume=False):
    ctx = rngsnap.Context(resume=resume)
    rngsnap.torch.track(ctx)
    if not resume:
        ctx.seed_all(1234)
    return ctx


def _quiet(call, *args, **kw):  # dcp warns that it runs without ranks
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.distributed is "
                                "disabled")
        return call(*args, **kw)


def test_template_until_the_load():
    """A resumed context cannot save yet: dcp.load's template is this
    rank's keys with no values."""
    ctx = _tracked(resume=True)
    assert RngState(ctx).state_dict() == {
        "format": None, "version": None, "world_size": None, "rank/0": None}
    ctx.close()


def test_partial_load_without_rngsnap_state(tmp_path):
    """A planner that lets dcp.load go on without missing keys
    (allow_partial_load): RngState itself refuses, nothing restored."""
    _quiet(dcp.save, {"w": torch.ones(2)}, checkpoint_id=str(tmp_path))
    ctx = _tracked(resume=True)
    planner = dcp.DefaultLoadPlanner(allow_partial_load=True)
    with pytest.raises(rngsnap.MismatchError) as e:
        _quiet(dcp.load, {"w": torch.zeros(2), "rng": RngState(ctx)},
               checkpoint_id=str(tmp_path), planner=planner)
    assert str(e.value) == (
        "rngsnap.integrations.dcp.RngState: the checkpoint holds no rngsnap "
        "state under this entry (it was saved without RngState); nothing "
        "restored; resume from a checkpoint saved with RngState(ctx) under "
        "the same key")
    with pytest.raises(rngsnap.OrderError):  # still awaiting its load
        ctx.stream("cpu", 0, "augment").generate("u32", 1)
    ctx.close()


def test_untracked_context_refused():
    """A context nobody tracked holds none of torch's generators (the
    untracked report counts torch's own as track()'s): saved, the resumed
    dropout would differ silently.  Refused at dcp.save and dcp.load."""
    for resume, what in ((False, "saved"), (True, "restored")):
        ctx = rngsnap.Context(resume=resume)
        with pytest.raises(rngsnap.InvalidError) as e:
            RngState(ctx).state_dict()
        assert str(e.value) == (
            "rngsnap.integrations.dcp.RngState: the context tracks none of "
            "torch's, NumPy's and random's generators; nothing %s: call "
            "rngsnap.torch.track(ctx) once, after building the model and "
            "before dcp.save or dcp.load" % what)
        ctx.close()


def test_not_a_context():
    with pytest.raises(TypeError) as e:
        RngState({"rank/0": b""})
    assert str(e.value) == "RngState(ctx): ctx is dict, not an " \
        "rngsnap.Context"
