"""The transformers Trainer resumed from a checkpoint inside an epoch, with
a dataset that draws random augmentation, plain or with rngsnap's callback
from trainer_recipe.py (--rngsnap).

Plain: resumed inside an epoch, the Trainer fetches the epoch's next
batch (get_batch_samples: __getitem__ draws) before it restores its RNG
file (_load_rng_state), transformers#39215: that batch is augmented from
the fresh process's generator, and the restore then rewinds the generator
the uninterrupted run had moved by those draws.  And that batch was
augmented before the checkpoint was written (accelerate's DataLoaderShard
fetches one batch ahead), from a generator state no checkpoint holds.

--rngsnap: trainer_recipe.py's callback, which refuses this resume with
OrderError.  --rngsnap --keyed: the dataset's draws keyed by (epoch,
index) (bugjob.EpochKeyed), so a fetch moves no generator the checkpoint
holds, and the callback loads at on_epoch_begin inside an epoch too:
bit for bit.

    python3 trainer_midepoch_job.py --dir DIR [--resume] [--rngsnap [--keyed]]
    (a checkpoint every SAVE_STEPS steps, 6 steps an epoch)
"""
import os

import torch
from torch import nn
from transformers import Trainer, TrainerCallback, TrainingArguments

from bugjob import EpochKeyed, Indexed, step_line
from killpoint import committed  # the test harness's lines only
from toyjob import net, parse_args

EPOCHS, BATCH, SAMPLES, SAVE_STEPS = 3, 4, 24, 4


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.net, self.epoch = net(), 0

    def forward(self, x, labels, index):
        loss = nn.functional.binary_cross_entropy_with_logits(self.net(x),
                                                              labels)
        step_line(self.epoch, index, x, loss)
        return {"loss": loss}


class Lines(TrainerCallback):
    """The harness's lines: the epoch each step is in, and the commit of
    each checkpoint (on_save runs after the Trainer wrote it)."""

    def __init__(self, model, commit):
        self.model, self.commit = model, commit

    def on_epoch_begin(self, args, state, control, **kw):
        self.model.epoch = int(state.epoch)

    def on_save(self, args, state, control, **kw):
        if self.commit:
            committed(state.global_step)


def keyed_rngsnap_callback(ctx, resume_from):
    """trainer_recipe.py's callback, loading at on_epoch_begin inside an
    epoch too: before the Trainer's fetch, which then draws from no
    generator the checkpoint holds (EpochKeyed), and before the Trainer's
    own restore, which sets its generators to the values rngsnap set
    (both saved at the same instant)."""
    from trainer_recipe import RngsnapCallback

    class KeyedRngsnapCallback(RngsnapCallback):
        def on_epoch_begin(self, args, state, control, **kw):
            if self.resume_from:
                self._load()

    return KeyedRngsnapCallback(ctx, resume_from)


def main():
    args = parse_args(("--rngsnap", dict(action="store_true")),
                      ("--keyed", dict(action="store_true",
                                       help="with --rngsnap: EpochKeyed")))
    torch.manual_seed(1234)  # model init; a resumed job loads the weights
    model = Net()
    resume_from = None
    if args.resume:
        resume_from = os.path.join(args.dir, "checkpoint-%d" % max(
            int(d.split("-")[1]) for d in os.listdir(args.dir)
            if d.startswith("checkpoint-")))
    # rngsnap's callback commits after its own file (the last one written)
    callbacks = [Lines(model, commit=not args.rngsnap)]
    if args.rngsnap:
        import rngsnap
        from trainer_recipe import RngsnapCallback
        ctx = rngsnap.Context(resume=args.resume)
        if args.keyed:
            if not args.resume:
                ctx.seed_all(1234)  # the keyed streams' seeding
            callbacks.append(keyed_rngsnap_callback(ctx, resume_from))
        else:
            callbacks.append(RngsnapCallback(ctx, resume_from))
    targs = TrainingArguments(
        output_dir=args.dir, num_train_epochs=EPOCHS,
        per_device_train_batch_size=BATCH, learning_rate=0.05,
        save_strategy="steps", save_steps=SAVE_STEPS, seed=42,
        logging_strategy="no", report_to="none", disable_tqdm=True,
        remove_unused_columns=False)
    data = Indexed(SAMPLES, as_dict=True)
    if args.keyed:
        data = EpochKeyed(data, ctx.stream("cpu", 0, "augment"))
    trainer = Trainer(model=model, args=targs, train_dataset=data,
                      callbacks=callbacks)
    trainer.train(resume_from_checkpoint=resume_from)
    if args.rngsnap:
        ctx.close()


if __name__ == "__main__":
    main()
