"""CPU STAND-IN for the transformers Trainer (not installed here): only what
the recipe calls, in the order of the real source (huggingface/transformers
000945a, src/transformers/trainer.py):

- Trainer.__init__: set_seed(args.seed).
- Trainer.train(resume_from_checkpoint): the model weights, then
  _inner_training_loop: the train dataloader (a sampler seeded by
  args.seed + epoch, as accelerate's SeedableRandomSampler), the
  TrainerState from trainer_state.json (epochs_trained = global_step //
  steps per epoch, steps_trained_in_current_epoch = the rest), the
  optimizer and scheduler, on_train_begin; each epoch: set_epoch,
  on_epoch_begin, then
    * resumed at an epoch end: _load_rng_state, before the iterator;
    * resumed inside an epoch: skip_first_batches, iter, get_batch_samples
      (the first real batch is FETCHED), and only then _load_rng_state
      (rng_to_sync; transformers#39215);
  then per step on_step_begin, training_step, optimizer and scheduler
  step, state.epoch = epoch + (step + 1 + steps_skipped) / steps_in_epoch,
  on_step_end, _maybe_log_save_evaluate (_save_checkpoint: model,
  optimizer, scheduler, _save_rng_state, trainer_state.json; then
  on_save); on_epoch_end and the epoch's save.
- _save_rng_state / _load_rng_state: python, numpy, cpu (and cuda when
  torch has it) in rng_state.pth.
"""
import dataclasses
import json
import os
import random

import numpy as np
import torch

__version__ = "0+cpu-standin"


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@dataclasses.dataclass
class TrainingArguments:
    output_dir: str
    num_train_epochs: int = 3
    per_device_train_batch_size: int = 8
    learning_rate: float = 5e-5
    save_strategy: str = "steps"
    save_steps: int = 500
    seed: int = 42
    logging_strategy: str = "steps"
    report_to: object = None
    disable_tqdm: bool = False
    remove_unused_columns: bool = True
    ignore_data_skip: bool = False


@dataclasses.dataclass
class TrainerState:
    epoch: float = 0.0
    global_step: int = 0

    def save_to_json(self, path):
        with open(path, "w") as f:
            json.dump(dataclasses.asdict(self), f)

    @classmethod
    def load_from_json(cls, path):
        with open(path) as f:
            return cls(**json.load(f))


class TrainerControl:
    pass


class TrainerCallback:
    def on_train_begin(self, args, state, control, **kw):
        pass

    def on_epoch_begin(self, args, state, control, **kw):
        pass

    def on_step_begin(self, args, state, control, **kw):
        pass

    def on_step_end(self, args, state, control, **kw):
        pass

    def on_save(self, args, state, control, **kw):
        pass

    def on_epoch_end(self, args, state, control, **kw):
        pass


class _SeedableSampler(torch.utils.data.Sampler):
    """accelerate's SeedableRandomSampler: the order of epoch e comes from a
    generator seeded with seed + e."""

    def __init__(self, n, seed):
        self.n, self.seed, self.epoch = n, seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return self.n

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        return iter(torch.randperm(self.n, generator=g).tolist())


class _SkipBatches(torch.utils.data.Sampler):
    """accelerate's SkipBatchSampler: the first n batches are drawn from
    the batch sampler and dropped, never loaded."""

    def __init__(self, batches, n):
        self.batches, self.n = batches, n

    def __len__(self):
        return len(self.batches) - self.n

    def __iter__(self):
        for i, b in enumerate(self.batches):
            if i >= self.n:
                yield b


def _collate(items):  # default_data_collator for dicts of tensors
    return {k: torch.stack([it[k] for it in items]) for k in items[0]}


class Trainer:
    def __init__(self, model, args, train_dataset, callbacks=()):
        set_seed(args.seed)
        self.model, self.args, self.train_dataset = model, args, train_dataset
        self.callbacks = list(callbacks)
        self.state, self.control = TrainerState(), TrainerControl()

    def _event(self, name):
        for cb in self.callbacks:
            getattr(cb, name)(self.args, self.state, self.control,
                              model=self.model)

    def _load_rng_state(self, checkpoint):
        s = torch.load(os.path.join(checkpoint, "rng_state.pth"))
        random.setstate(s["python"])
        np.random.set_state(s["numpy"])
        torch.random.set_rng_state(s["cpu"])
        if torch.cuda.is_available():
            torch.cuda.random.set_rng_state(s["cuda"])

    def _save_checkpoint(self):
        out = os.path.join(self.args.output_dir,
                           "checkpoint-%d" % self.state.global_step)
        os.makedirs(out, exist_ok=True)
        torch.save(self.model.state_dict(),
                   os.path.join(out, "pytorch_model.bin"))
        torch.save(self.optimizer.state_dict(),
                   os.path.join(out, "optimizer.pt"))
        rng = {"python": random.getstate(), "numpy": np.random.get_state(),
               "cpu": torch.random.get_rng_state()}
        if torch.cuda.is_available():
            rng["cuda"] = torch.cuda.random.get_rng_state()
        torch.save(rng, os.path.join(out, "rng_state.pth"))
        self.state.save_to_json(os.path.join(out, "trainer_state.json"))
        self._event("on_save")

    def train(self, resume_from_checkpoint=None):
        args, ck = self.args, resume_from_checkpoint
        if ck is not None:
            self.model.load_state_dict(torch.load(
                os.path.join(ck, "pytorch_model.bin")))
        sampler = _SeedableSampler(len(self.train_dataset), args.seed)
        batches = torch.utils.data.BatchSampler(
            sampler, args.per_device_train_batch_size, drop_last=False)
        steps_in_epoch = len(batches)
        self.optimizer = torch.optim.SGD(self.model.parameters(),
                                         lr=args.learning_rate)
        epochs_trained = steps_trained = 0
        if ck is not None:
            self.state = TrainerState.load_from_json(
                os.path.join(ck, "trainer_state.json"))
            epochs_trained = self.state.global_step // steps_in_epoch
            if not args.ignore_data_skip:
                steps_trained = self.state.global_step % steps_in_epoch
            self.optimizer.load_state_dict(torch.load(
                os.path.join(ck, "optimizer.pt")))
        self.model.train()
        self._event("on_train_begin")
        for epoch in range(epochs_trained, args.num_train_epochs):
            sampler.set_epoch(epoch)
            self._event("on_epoch_begin")
            if epoch == epochs_trained and ck is not None \
                    and steps_trained == 0:
                self._load_rng_state(ck)
            rng_to_sync, skipped, epoch_batches = False, 0, batches
            if steps_trained > 0:  # skip_first_batches
                epoch_batches = _SkipBatches(batches, steps_trained)
                skipped, steps_trained, rng_to_sync = steps_trained, 0, True
            loader = torch.utils.data.DataLoader(
                self.train_dataset, batch_sampler=epoch_batches,
                collate_fn=_collate)
            iterator = iter(loader)
            for step, inputs in enumerate(iterator):  # get_batch_samples
                if rng_to_sync:
                    self._load_rng_state(ck)
                    rng_to_sync = False
                self._event("on_step_begin")
                loss = self.model(**inputs)["loss"]
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
                self.state.global_step += 1
                self.state.epoch = epoch + (step + 1 + skipped) / steps_in_epoch
                self._event("on_step_end")
                if args.save_strategy == "steps" and \
                        self.state.global_step % args.save_steps == 0:
                    self._save_checkpoint()
            self._event("on_epoch_end")
            if args.save_strategy == "epoch":
                self._save_checkpoint()
