"""transformers Trainer + rngsnap (docs/python.md, "transformers Trainer"):
what a callback can make exact from outside, and what it cannot.

The Trainer restores its own RNG file (Trainer._load_rng_state) before
the first batch of a resumed epoch when the checkpoint is at an epoch
end, but AFTER fetching the first batches (get_batch_samples) when it is
inside an epoch (transformers#39215), and no callback runs between that
fetch and that restore.  So:

- saved at epoch ends: the callback loads at on_epoch_begin, before the
  Trainer's restore and its first fetch: every generator rngsnap holds
  is back (the Trainer then sets the ones it knows to the same values);
  the resumed run is the uninterrupted run, bit for bit;
- saved inside an epoch: the callback loads where the Trainer restores,
  after the fetch; the tracked generators moved since track(), and the
  load refuses with OrderError instead of a silently different run.

    python3 trainer_recipe.py --dir DIR [--resume] [--save epoch|steps]
"""
import os

import torch
from torch import nn
from transformers import Trainer, TrainerCallback, TrainingArguments

import rngsnap
import rngsnap.torch
from killpoint import committed, resumed  # the test harness's lines only
from toyjob import Augmented, net, parse_args

EPOCHS, BATCH, SAVE_STEPS = 3, 4, 4  # 24 samples: 6 steps an epoch
RNG_FILE = "rngsnap.ckpt"  # one rank; several: a folder of rank files


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = net()

    def forward(self, x, labels):
        loss = nn.functional.binary_cross_entropy_with_logits(self.net(x),
                                                              labels)
        print("loss", loss.item().hex(), flush=True)
        return {"loss": loss}


class RngsnapCallback(TrainerCallback):
    """Saves the context into each checkpoint folder (on_save runs right
    after the Trainer wrote its own RNG file) and restores it on resume,
    before the first fetch when the Trainer allows it."""

    def __init__(self, ctx, resume_from=None):
        self.ctx, self.resume_from = ctx, resume_from

    def on_train_begin(self, args, state, control, **kw):
        # After Trainer.__init__'s set_seed and the model: from here on,
        # a draw before the load is an OrderError.
        self.tracker = rngsnap.torch.track(self.ctx)
        self.ledger = self.ctx.ledger(os.path.join(args.output_dir, "ledger/"))

    def on_step_end(self, args, state, control, **kw):
        self.ledger.step(state.global_step)  # rngsnap ledger diff

    def on_epoch_begin(self, args, state, control, **kw):
        # state.epoch is the checkpoint's: whole at an epoch end.
        if self.resume_from and float(state.epoch).is_integer():
            self._load()

    def on_step_begin(self, args, state, control, **kw):
        if self.resume_from:  # inside an epoch: where the Trainer restored
            try:
                self._load()
            except rngsnap.OrderError as e:
                e.args = (str(e) + "\n(the Trainer fetched the resumed "
                          "epoch's first batches before restoring RNG state,"
                          " transformers#39215: a checkpoint inside an epoch "
                          "cannot resume exactly; save at epoch ends, "
                          "save_strategy=\"epoch\")",)
                raise

    def _load(self):
        path, self.resume_from = self.resume_from, None
        if self.ctx.world_size > 1:  # every rank at once (collective)
            self.ctx.load_ranks(os.path.join(path, RNG_FILE))
        else:
            self.ctx.load(os.path.join(path, RNG_FILE))
        resumed(os.path.basename(path))

    def on_save(self, args, state, control, **kw):
        path = os.path.join(args.output_dir, "checkpoint-%d"
                            % state.global_step, RNG_FILE)
        if self.ctx.world_size > 1:
            self.ctx.save_ranks(path, replace=True)
        else:
            self.ctx.save(path, replace=True)
        committed(state.global_step)  # written last: the commit record


def main():
    args = parse_args(("--save", dict(choices=("epoch", "steps"),
                                      default="epoch")))
    torch.manual_seed(1234)  # model init; a resumed job loads the weights
    model = Net()
    resume_from = None
    if args.resume:  # the last checkpoint with its rngsnap file
        steps = [int(d.split("-")[1]) for d in os.listdir(args.dir)
                 if d.startswith("checkpoint-")
                 and os.path.exists(os.path.join(args.dir, d, RNG_FILE))]
        resume_from = os.path.join(args.dir, "checkpoint-%d" % max(steps))
    ctx = rngsnap.Context(resume=args.resume)
    targs = TrainingArguments(
        output_dir=args.dir, num_train_epochs=EPOCHS,
        per_device_train_batch_size=BATCH, learning_rate=0.05,
        save_strategy=args.save, save_steps=SAVE_STEPS, seed=42,
        logging_strategy="no", report_to="none", disable_tqdm=True,
        remove_unused_columns=False, dataloader_pin_memory=False)
    trainer = Trainer(model=model, args=targs,
                      train_dataset=Augmented(as_dict=True),
                      callbacks=[RngsnapCallback(ctx, resume_from)])
    trainer.train(resume_from_checkpoint=resume_from)
    ctx.close()


if __name__ == "__main__":
    main()
