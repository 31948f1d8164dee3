"""CPU STAND-IN for `lightning.pytorch` (not installed here): only what the
recipe calls, in the order of the real sources (Lightning-AI/
pytorch-lightning 7f0c343, src/lightning/pytorch/):

- trainer/trainer.py Trainer._run: strategy setup, then
  _checkpoint_connector._restore_modules_and_callbacks(ckpt_path)
  (checkpoint_connector.py: resume_start, restore_model,
  restore_datamodule, restore_callbacks, i.e. call.py
  _call_callbacks_on_load_checkpoint then _call_callbacks_load_state_dict:
  callback.load_state_dict(deepcopy(state)) when its state_key has a
  non-empty state), on_fit_start, restore_training_state (optimizers,
  loops: the epoch), then _run_stage -> fit_loop.run().
- loops/fit_loop.py FitLoop.run: setup_data() requests the train
  dataloader and creates its iterator (iter(self._data_fetcher): a
  DataLoader draws its base seed, from its generator or torch's), then
  on_train_start; each epoch: on_train_epoch_start, the batches
  (training_epoch_loop.py on_run_start makes a new iterator for every
  epoch after the first of this run), on_train_epoch_end.
- Trainer.save_checkpoint -> dump_checkpoint: "epoch", "global_step",
  "state_dict", "optimizer_states", and "callbacks":
  {state_key: callback.state_dict()} for the non-empty ones
  (call.py _call_callbacks_state_dict); written by rank 0 only.
"""
import copy

import torch

__version__ = "0+cpu-standin"


class Callback:
    @property
    def state_key(self):
        return self.__class__.__qualname__

    def state_dict(self):
        return {}

    def load_state_dict(self, state_dict):
        pass

    def on_load_checkpoint(self, trainer, pl_module, checkpoint):
        pass

    def on_fit_start(self, trainer, pl_module):
        pass

    def on_train_start(self, trainer, pl_module):
        pass

    def on_train_epoch_start(self, trainer, pl_module):
        pass

    def on_train_epoch_end(self, trainer, pl_module):
        pass


class LightningModule(torch.nn.Module):
    @property
    def global_step(self):
        return self.trainer.global_step

    @property
    def current_epoch(self):
        return self.trainer.current_epoch


class Trainer:
    def __init__(self, max_epochs, callbacks=(), **_ignored):
        self.max_epochs = max_epochs
        self.callbacks = list(callbacks)
        self.current_epoch = 0
        self.global_step = 0
        self.lightning_module = None
        self.global_rank = 0  # one process here

    def _hook(self, name):
        for cb in self.callbacks:
            getattr(cb, name)(self, self.lightning_module)

    def fit(self, model, ckpt_path=None):
        self.lightning_module = model
        model.trainer = self
        self.optimizer = model.configure_optimizers()
        loaded = torch.load(ckpt_path) if ckpt_path else None
        if loaded:  # _restore_modules_and_callbacks
            model.load_state_dict(loaded["state_dict"])
            for cb in self.callbacks:
                cb.on_load_checkpoint(self, model, loaded)
            for cb in self.callbacks:
                state = loaded.get("callbacks", {}).get(cb.state_key)
                if state:
                    cb.load_state_dict(copy.deepcopy(state))
        self._hook("on_fit_start")
        if loaded:  # restore_training_state
            self.optimizer.load_state_dict(loaded["optimizer_states"][0])
            self.current_epoch = loaded["epoch"]
            self.global_step = loaded["global_step"]
        model.train()
        loader = model.train_dataloader()  # FitLoop.setup_data
        batches = iter(loader)
        self._hook("on_train_start")
        first = True
        while self.current_epoch < self.max_epochs:
            self._hook("on_train_epoch_start")
            if not first:  # _TrainingEpochLoop.on_run_start
                batches = iter(loader)
            first = False
            for batch_idx, batch in enumerate(batches):
                loss = model.training_step(batch, batch_idx)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                self.global_step += 1
            self._hook("on_train_epoch_end")
            self.current_epoch += 1

    def save_checkpoint(self, filepath):
        # Called inside on_train_epoch_end: the epoch is not yet counted
        # done; the loops' state records it as finished.
        ck = {"epoch": self.current_epoch + 1,
              "global_step": self.global_step,
              "state_dict": self.lightning_module.state_dict(),
              "optimizer_states": [self.optimizer.state_dict()],
              "callbacks": {}}
        for cb in self.callbacks:
            state = cb.state_dict()
            if state:
                ck["callbacks"][cb.state_key] = state
        torch.save(ck, filepath)
