"""The transformers Trainer resumed from a checkpoint inside an epoch, with
a dataset that draws random augmentation, plain or with rngsnap's callback
from trainer_recipe.py (--rngsnap).

Plain: resumed inside an epoch, the Trainer fetches the epoch's next
batch (get_batch_samples: __getitem__ draws) before it restores its RNG
file (_load_rng_state), transformers#39215: that batch is augmented from
the fresh process's generator, and the restore then rewinds the generator
the uninterrupted run had moved by those draws.

    python3 trainer_midepoch_job.py --dir DIR [--resume] [--rngsnap]
    (a checkpoint every SAVE_STEPS steps, 6 steps an epoch)
"""
import os

import torch
from torch import nn
from transformers import Trainer, TrainerCallback, TrainingArguments

from bugjob import Indexed, step_line
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


def main():
    args = parse_args(("--rngsnap", dict(action="store_true")))
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
        callbacks.append(RngsnapCallback(ctx, resume_from))
    targs = TrainingArguments(
        output_dir=args.dir, num_train_epochs=EPOCHS,
        per_device_train_batch_size=BATCH, learning_rate=0.05,
        save_strategy="steps", save_steps=SAVE_STEPS, seed=42,
        logging_strategy="no", report_to="none", disable_tqdm=True,
        remove_unused_columns=False)
    trainer = Trainer(model=model, args=targs,
                      train_dataset=Indexed(SAMPLES, as_dict=True),
                      callbacks=callbacks)
    trainer.train(resume_from_checkpoint=resume_from)
    if args.rngsnap:
        ctx.close()


if __name__ == "__main__":
    main()
