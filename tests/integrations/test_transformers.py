"""rngsnap.integrations.transformers against the real transformers Trainer:
a job SIGKILLed right after a save_steps checkpoint inside an epoch (or at
an epoch's end), resumed with train(resume_from_checkpoint=True) in a new
process, prints every loss and the final parameters of the uninterrupted
run, bit for bit: with 0 and 2 DataLoader workers, with 2 processes (gloo
CPU ranks, every rank's losses), with a collator that draws random
numbers, and with RngsnapTrainerMixin on a Trainer subclass of the job's
own.  The same job plain does not; a plain
checkpoint is adopted once, verified; and each refusal, word for word."""
import os
import random
import re
import shutil
import sys
import zipfile

import pytest

pytest.importorskip("transformers", reason="transformers does not import "
                    "for this interpreter (tests/requirements.txt)")
pytest.importorskip("accelerate", reason="accelerate does not import for "
                    "this interpreter (tests/requirements.txt)")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers import Trainer, TrainingArguments  # noqa: E402
from transformers.trainer_pt_utils import safe_globals  # noqa: E402

import rngsnap  # noqa: E402
from drive import Job  # noqa: E402
from jobs import HERE, _env, killed_at, losses, params, run  # noqa: E402
from rngsnap.integrations import transformers as rt  # noqa: E402
from toyjob import Augmented  # noqa: E402
from transformers_job import Net  # noqa: E402

JOB = "transformers_job.py"
STEPS = 12  # 2 epochs of 6 steps (3 each with 2 processes)


def _checkpoint_line(lines, tag):
    return [x.split(" rng ")[1] for x in lines
            if x.startswith("checkpoint %s " % tag)]


def _resumed_line(lines):
    return [x.split(" rng ")[1] for x in lines if x.startswith("resumed ")]


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """The uninterrupted run, 0 workers: the reference of every resume
    (checkpoints, save_steps and the worker count draw nothing, so one
    run serves; a resume that differs fails whichever it is)."""
    rc, out, err = run(JOB, "--dir", str(tmp_path_factory.mktemp("whole")))
    assert rc == 0, err[-3000:]
    assert len(losses(out)) == STEPS and params(out)
    return out


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """A run with RngsnapTrainer killed right after checkpoint-4 (inside
    epoch 0): its folder, never written to again (tests copy it)."""
    d = tmp_path_factory.mktemp("killed") / "out"
    lines = killed_at(JOB, 4, "--dir", str(d))
    return d, lines


@pytest.fixture(scope="module")
def plain_killed(tmp_path_factory):
    """The plain Trainer job killed right after checkpoint-4."""
    d = tmp_path_factory.mktemp("plain_killed") / "out"
    lines = killed_at(JOB, 4, "--dir", str(d), "--plain")
    return d, lines


def _copy(folder, tmp_path, name="out"):
    shutil.copytree(folder, tmp_path / name)
    return tmp_path / name


def _check_resume(whole, before, after, tag):
    assert len(losses(before)) == tag
    assert losses(before) + losses(after) == losses(whole)
    assert params(after) == params(whole)
    # the generators right after the restore are those of the checkpoint
    assert _resumed_line(after) == _checkpoint_line(before, tag)


def test_resume_inside_epoch(whole, killed, tmp_path):
    folder, before = killed
    d = _copy(folder, tmp_path)
    rc, after, err = run(JOB, "--dir", str(d), "--resume")
    assert rc == 0, err[-3000:]
    _check_resume(whole, before, after, 4)


# (save_steps, kill at, workers, extra): inside epoch 0 with 2 workers
# (killed and resumed with them), at the end of epoch 0, and the mixin on
# a Trainer subclass of the job's own.
@pytest.mark.parametrize("save,tag,workers,extra", [
    (4, 4, 2, []),
    (6, 6, 0, []),
    (4, 4, 0, ["--mixin"]),
], ids=["inside-epoch-2-workers", "epoch-end", "mixin"])
def test_resume_exact(whole, tmp_path, save, tag, workers, extra):
    args = ["--dir", str(tmp_path), "--save-steps", str(save), "--workers",
            str(workers)] + extra
    before = killed_at(JOB, tag, *args)
    rc, after, err = run(JOB, *args, "--resume")
    assert rc == 0, err[-3000:]
    _check_resume(whole, before, after, tag)


def test_random_collator(tmp_path):
    """A collator drawing from torch's generator (as the masking of
    DataCollatorForLanguageModeling): with 0 workers it runs in the main
    process, before the Trainer restores; keyed by the batch, it draws the
    same in every run and with any worker count.  Killed with 2 workers,
    resumed with 0, against the uninterrupted run with 0."""
    rc, whole, err = run(JOB, "--dir", str(tmp_path / "w"), "--collate")
    assert rc == 0, err[-3000:]
    args = ["--dir", str(tmp_path / "j"), "--collate"]
    before = killed_at(JOB, 4, *args, "--workers", "2")
    rc, after, err = run(JOB, *args, "--resume")
    assert rc == 0, err[-3000:]
    _check_resume(whole, before, after, 4)


def _ranks(tmp_path, name, more, env=None):
    d = tmp_path / name
    return Job([sys.executable, os.path.join(HERE, JOB), "--dir", str(d)]
               + more, 2, _env(env), str(tmp_path))


def test_two_processes(tmp_path):
    """torchrun's variables, 2 gloo CPU ranks: killed after checkpoint-4
    (step 1 of epoch 1) and resumed; every rank's losses and parameters."""
    whole = _ranks(tmp_path, "whole", []).finish()
    for rc, out, err in whole:
        assert rc == 0, err[-3000:]
        assert len(losses(out)) == STEPS // 2
    before = _ranks(tmp_path, "job", [], {"RNGSNAP_HOLD_AT": "4"}).until("4")
    after = _ranks(tmp_path, "job", ["--resume"]).finish()
    for rank in range(2):
        rc, out, err = after[rank]
        assert rc == 0, err[-3000:]
        _check_resume(whole[rank][1], before[rank], out, 4)
    assert params(after[0][1]) == params(after[1][1])


@pytest.fixture(scope="module")
def plain_whole(tmp_path_factory):
    """The plain Trainer job uninterrupted."""
    rc, out, err = run(JOB, "--dir", str(tmp_path_factory.mktemp("pw")),
                       "--plain")
    assert rc == 0, err[-3000:]
    assert len(losses(out)) == STEPS
    return out


def test_plain_job_differs(plain_whole, plain_killed, tmp_path):
    """The same job with transformers.Trainer, killed at checkpoint-4 and
    resumed: count the resumed steps that differ (the docs' table)."""
    plain = plain_whole
    folder, before = plain_killed
    d = _copy(folder, tmp_path)
    rc, after, err = run(JOB, "--dir", str(d), "--plain", "--resume")
    assert rc == 0, err[-3000:]
    assert losses(before) == losses(plain)[:4]
    resumed, want = losses(after), losses(plain)[4:]
    assert len(resumed) == len(want) == 8
    differ = sum(a != b for a, b in zip(resumed, want))
    print("plain Trainer, killed at step 4 of 12: %d of %d resumed steps "
          "differ" % (differ, len(want)))
    assert differ > 0


# ---- adopting a plain Trainer's checkpoint ------------------------------

ADOPTED = "rngsnap: adopted random, NumPy, torch CPU generator states from " \
    "%s (the Trainer's own RNG file); rngsnap checkpoints from now on"


def test_adopt_plain_checkpoint(plain_whole, plain_killed, tmp_path):
    """Resumed with RngsnapTrainer, a plain checkpoint's rng_state.pth is
    restored once (the generators equal those the plain run had at the
    checkpoint) and said so; from then on the run writes rngsnap
    checkpoints that resume bit-exact."""
    folder, before = plain_killed
    a, b = _copy(folder, tmp_path, "a"), _copy(folder, tmp_path, "b")
    rc, adopted, err = run(JOB, "--dir", str(a), "--resume")
    assert rc == 0, err[-3000:]
    assert ADOPTED % (a / "checkpoint-4" / "rng_state.pth") in err
    assert _resumed_line(adopted) == _checkpoint_line(before, 4)
    assert len(losses(adopted)) == 8 and params(adopted)
    # not the plain run's continuation: the keyed loader's batches
    differ = sum(a != b for a, b in zip(losses(adopted),
                                        losses(plain_whole)[4:]))
    print("adopted at step 4 of 12: %d of 8 steps differ from the plain "
          "uninterrupted run" % differ)
    # the adopted run killed at its own checkpoint-8, resumed
    first = killed_at(JOB, 8, "--dir", str(b), "--resume")
    rc, second, err = run(JOB, "--dir", str(b), "--resume")
    assert rc == 0, err[-3000:]
    assert ADOPTED.split(" from ")[0] not in err  # rngsnap's own state now
    assert losses(first) + losses(second) == losses(adopted)
    assert params(second) == params(adopted)


def _flip_storage_byte(path):
    """Flip one byte inside the tensor storage record of a torch archive
    (torch.load does not check that record's CRC-32)."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        rec = next(i for i in z.infolist() if "/data/" in i.filename
                   and i.file_size > 1000)
    start = rec.header_offset + 30 + len(rec.filename.encode()) + \
        int.from_bytes(data[rec.header_offset + 28:rec.header_offset + 30],
                       "little")
    data[start + 100] ^= 0x01
    path.write_bytes(bytes(data))
    return rec.filename


def test_adopt_flipped_byte_refused(plain_killed, tmp_path):
    """A byte flipped in the tensor storage of rng_state.pth, which the
    Trainer's own torch.load takes silently: refused at train()'s start,
    nothing restored, no step trained."""
    folder, _ = plain_killed
    d = _copy(folder, tmp_path)
    rng = d / "checkpoint-4" / "rng_state.pth"
    record = _flip_storage_byte(rng)
    with safe_globals():  # as Trainer._load_rng_state: it loads silently
        torch.load(rng, weights_only=True)
    trainer = _trainer(tmp_path / "o")
    before = _live()
    with pytest.raises(rngsnap.CorruptError) as e:
        trainer.train(resume_from_checkpoint=str(d / "checkpoint-4"))
    assert str(e.value) == (
        "rngsnap: %s is damaged (record '%s': Bad CRC-32 for file '%s'); it "
        "is not the file the framework wrote, so nothing was restored: "
        "resume from another checkpoint, or start without adopting"
        % (rng, record, record))
    assert _same(before, _live())
    assert trainer.state.global_step == 0


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch " + self.marker,))


def _live():
    return (torch.get_rng_state().clone(), np.random.get_state()[1].copy(),
            random.getstate())


def _same(a, b):
    return torch.equal(a[0], b[0]) and np.array_equal(a[1], b[1]) \
        and a[2] == b[2]


def _trainer(out, cls=rt.RngsnapTrainer, data=None, **kw):
    kw.setdefault("per_device_train_batch_size", 4)
    args = TrainingArguments(output_dir=str(out), report_to="none",
                             use_cpu=True, remove_unused_columns=False,
                             dataloader_pin_memory=False, **kw)
    return cls(model=Net(), args=args,
               train_dataset=Augmented(as_dict=True) if data is None else data)


def test_adopt_foreign_global_refused(plain_killed, tmp_path):
    """A rng_state.pth whose pickle would call os.system: refused by name,
    never run, nothing restored, no step trained (train() raises at its
    start)."""
    folder, _ = plain_killed
    d = _copy(folder, tmp_path)
    marker = tmp_path / "ran"
    good = torch.load(d / "checkpoint-4" / "rng_state.pth",
                      weights_only=False)  # the Trainer's, made here
    torch.save(dict(good, python=_Evil(str(marker))),
               d / "checkpoint-4" / "rng_state.pth")
    trainer = _trainer(tmp_path / "o")
    before = _live()
    with pytest.raises(rngsnap.CorruptError, match="refuses the global "
                       "'posix.system'|refuses the global 'os.system'"):
        trainer.train(resume_from_checkpoint=str(d / "checkpoint-4"))
    assert not marker.exists()
    assert _same(before, _live())
    assert trainer.state.global_step == 0


# ---- refusals -------------------------------------------------------------

def _job_trainer(out, **kw):
    """The job's Trainer and arguments (transformers_job.py), in-process."""
    return _trainer(out, num_train_epochs=2, learning_rate=0.05,
                    save_strategy="steps", save_steps=4, seed=42,
                    logging_strategy="no", disable_tqdm=True, **kw)


def test_other_data_seed_refused(killed, tmp_path, capsys):
    """Resumed with another data seed the keyed loader would give other
    batches: MismatchError where the Trainer restores, the load rolled
    back (nothing restored), no step trained."""
    folder, _ = killed
    trainer = _job_trainer(tmp_path / "o", data_seed=7)
    before = _live()
    with pytest.raises(rngsnap.MismatchError) as e:
        trainer.train(resume_from_checkpoint=str(folder / "checkpoint-4"))
    assert str(e.value) == WHO + (
        "the checkpoint's rngsnap state does not fit this run, which would "
        "see other batches; nothing restored, no step trained: resume with "
        "the TrainingArguments and the checkpoint folder the run was "
        "written with:\n  data seed (TrainingArguments data_seed, else "
        "seed): rngsnap state 42, this job 7")
    assert _same(before, _live())
    assert trainer.state.global_step == 4 and "loss" not in \
        capsys.readouterr().out


def test_other_batch_size_refused(killed, tmp_path, capsys):
    folder, _ = killed
    trainer = _job_trainer(tmp_path / "o", per_device_train_batch_size=8)
    before = _live()
    with pytest.raises(rngsnap.MismatchError) as e:
        trainer.train(resume_from_checkpoint=str(folder / "checkpoint-4"))
    assert str(e.value) == (
        "rngsnap.transformers.loader: the training loader differs from the "
        "checkpoint's, so the resumed job would see other batches; resume "
        "with the loader the checkpoint was written with:\n  batch size: "
        "checkpoint 4, this job 8")
    assert _same(before, _live())
    assert "loss" not in capsys.readouterr().out


def test_damaged_state_refused(killed, tmp_path, capsys):
    folder, _ = killed
    d = _copy(folder, tmp_path)
    state = d / "checkpoint-4" / rt.STATE_FILE
    data = bytearray(state.read_bytes())
    data[len(data) // 2] ^= 0x01
    state.write_bytes(bytes(data))
    trainer = _job_trainer(tmp_path / "o")
    before = _live()
    with pytest.raises(rngsnap.CorruptError) as e:
        trainer.train(resume_from_checkpoint=str(d / "checkpoint-4"))
    # a damaged section is named by its place (issue 31): its label is
    # read from the damaged bytes, or cannot be
    assert re.fullmatch(r"%s: section \d+ at byte \d+: checksum mismatch "
                        r"\(its label (as read from the damaged bytes: app "
                        r"state [\w.]+|cannot be read from the damaged "
                        r"bytes)\)(; this context saves app state [\w.]+ "
                        r"there)?; nothing restored"
                        % re.escape(str(state)), str(e.value))
    assert _same(before, _live())
    assert trainer.state.global_step == 4 and "loss" not in \
        capsys.readouterr().out


def test_checkpoint_without_rng_state_refused(tmp_path):
    (tmp_path / "ck").mkdir()
    with pytest.raises(rngsnap.MismatchError) as e:
        _trainer(tmp_path / "o").train(resume_from_checkpoint=str(
            tmp_path / "ck"))
    assert str(e.value) == (
        "rngsnap.integrations.transformers: %s holds neither rngsnap's state "
        "(rngsnap.ckpt) nor the Trainer's own RNG file (rng_state.pth); "
        "nothing restored, no step trained: resume from a checkpoint written "
        "with save_only_model=False by as many processes as this job, or "
        "start a new run without resume_from_checkpoint" % (tmp_path / "ck"))


class _Stream(torch.utils.data.IterableDataset):
    def __iter__(self):
        return iter([{"x": torch.zeros(8), "labels": torch.zeros(1)}] * 8)


class _Weighted(Trainer):
    def _get_train_sampler(self, train_dataset=None):
        return torch.utils.data.WeightedRandomSampler([1.0] * 24, 24)


WHO = "rngsnap.integrations.transformers: "


@pytest.mark.parametrize("kw,resume,message", [
    (dict(train_sampling_strategy="group_by_length"), False,
     "TrainingArguments(train_sampling_strategy='group_by_length') orders "
     "the samples with a sampler of the Trainer's own that rngsnap does not "
     "key, so a resume inside an epoch cannot be exact; use "
     "train_sampling_strategy='random' (the default) or 'sequential'"),
    (dict(auto_find_batch_size=True), False,
     "TrainingArguments(auto_find_batch_size=True) restarts the training "
     "loop with a smaller batch after an out-of-memory error, a run other "
     "than the one its checkpoints record; set per_device_train_batch_size "
     "to a size that fits instead"),
    (dict(accelerator_config={"dispatch_batches": True}), False,
     "TrainingArguments(accelerator_config={'dispatch_batches': True}) has "
     "the main process fetch every batch for all; rngsnap keys the loader "
     "each process iterates and was not made exact with dispatching; leave "
     "dispatch_batches unset"),
    (dict(ignore_data_skip=True), True,
     "TrainingArguments(ignore_data_skip=True) starts the resumed epoch "
     "again from its first batch, a run other than the uninterrupted one; "
     "nothing restored, no step trained: resume with ignore_data_skip=False "
     "(the default)"),
], ids=["group_by_length", "auto_find_batch_size", "dispatch_batches",
        "ignore_data_skip"])
def test_arguments_refused(killed, tmp_path, kw, resume, message):
    trainer = _trainer(tmp_path / "o", **kw)
    ck = str(killed[0] / "checkpoint-4") if resume else None
    with pytest.raises(rngsnap.InvalidError) as e:
        trainer.train(resume_from_checkpoint=ck)
    assert str(e.value) == WHO + message
    assert trainer.state.global_step == 0


def test_iterable_dataset_refused(tmp_path):
    with pytest.raises(rngsnap.InvalidError) as e:
        _trainer(tmp_path / "o", data=_Stream(), max_steps=2).train()
    assert str(e.value) == WHO + (
        "train_dataset is a _Stream, an iterable dataset: its samples have no "
        "index to key, so a resume inside an epoch cannot be exact; pass a "
        "map-style dataset (a datasets.Dataset, or a torch Dataset with "
        "__getitem__ and __len__)")


def test_sampler_of_its_own_refused(tmp_path):
    """A Trainer subclass whose _get_train_sampler returns its own sampler:
    refused when the loader is built, before the first step."""
    class Mine(rt.RngsnapTrainerMixin, _Weighted):
        pass
    trainer = _trainer(tmp_path / "o", cls=Mine)
    with pytest.raises(rngsnap.InvalidError) as e:
        trainer.train()
    assert str(e.value) == WHO + (
        "the training loader of Mine draws its samples with a "
        "WeightedRandomSampler (from its get_train_dataloader or "
        "_get_train_sampler); rngsnap keys the order itself, each sample "
        "once an epoch, shuffled or in order, and cannot resume a "
        "WeightedRandomSampler exactly inside an epoch; leave the sampler to "
        "the Trainer (train_sampling_strategy='random' or 'sequential')")
    assert trainer.state.global_step == 0


class _OwnLoader(Trainer):
    def get_train_dataloader(self):
        return torch.utils.data.DataLoader(self.train_dataset, batch_size=4)


def test_loader_not_prepared_refused(tmp_path):
    class Mine(rt.RngsnapTrainerMixin, _OwnLoader):
        pass
    trainer = _trainer(tmp_path / "o", cls=Mine)
    with pytest.raises(rngsnap.InvalidError) as e:
        trainer.train()
    assert str(e.value) == WHO + (
        "Mine.get_train_dataloader() returned a DataLoader not built with "
        "accelerator.prepare(DataLoader(...)); rngsnap keys the DataLoader "
        "the Trainer passes to accelerator.prepare and cannot resume another "
        "loader exactly; build it as Trainer.get_train_dataloader does, or "
        "leave it to the Trainer")
    assert trainer.state.global_step == 0


def test_mixin_after_the_trainer_refused():
    with pytest.raises(TypeError) as e:
        class Late(Trainer, rt.RngsnapTrainerMixin):
            pass
    assert str(e.value) == WHO + (
        "Late lists a Trainer class before RngsnapTrainerMixin, so the "
        "Trainer's own RNG hooks would run and rngsnap's never; put the "
        "mixin first: class Late(RngsnapTrainerMixin, <your Trainer>)")


def test_other_process_count_refused(killed):
    """A checkpoint of 1 process resumed by 2 (the check itself; the
    launch costs two processes for a file test)."""
    session = object.__new__(rt._Session)
    session.checkpoint = str(killed[0] / "checkpoint-4")
    session.world, session.rank, session.group = 2, 0, None
    with pytest.raises(rngsnap.MismatchError) as e:
        session._begin_mode()
    assert str(e.value) == WHO + (
        "%s was written by one process, this job has 2; nothing restored, "
        "no step trained: resume with as many processes as the run that "
        "wrote the checkpoint" % os.path.join(session.checkpoint,
                                              rt.STATE_FILE))


def test_loader_on_another_epoch_refused():
    """The check before the first resumed step: the keyed loader must have
    begun the epoch the Trainer resumes (a set_epoch that did not reach
    it would give the wrong epoch's batches)."""
    class Stub:
        pass
    session = object.__new__(rt._Session)
    session.restored = True
    session.trainer, session.loader = Stub(), Stub()
    session.trainer.state = Stub()
    session.trainer.state.epoch = 1 + 1 / 3  # step 1 of epoch 1
    session.loader.begun = 0
    with pytest.raises(rngsnap.OrderError) as e:
        session.before_step()
    assert str(e.value) == WHO + (
        "the Trainer resumes epoch 1 but the keyed loader began epoch 0 (the "
        "epoch did not reach it through set_epoch); nothing trained: this "
        "transformers/accelerate pair is not one the integration was tested "
        "with (docs/integrations/transformers.md)")
