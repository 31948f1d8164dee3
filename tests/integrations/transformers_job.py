"""A transformers Trainer job with save_steps checkpoints: with
rngsnap.integrations.transformers.RngsnapTrainer (the default), plain
(--plain: transformers.Trainer), or with RngsnapTrainerMixin on a Trainer
subclass of the job's own (--mixin, as one would on trl's SFTTrainer).

    python3 transformers_job.py --dir DIR [--resume] [--workers N]
        [--plain | --mixin] [--save-steps K] [--data-seed S] [--collate]
        [--accumulate N]

One process per rank: with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set (as
torchrun sets them) the Trainer runs on that many gloo CPU ranks.  Prints
"loss <hex>" per step and "params <hex digest>" at the end; through
killpoint, "checkpoint <step> rng <digest>" once the checkpoint is whole on
this rank and "resumed <step> rng <digest>" just before the first resumed
step (after the restore).
"""
import hashlib
import sys

import torch
from torch import nn
from transformers import Trainer, TrainerCallback, TrainingArguments, \
    default_data_collator

from killpoint import committed, resumed  # the test harness's lines only
from toyjob import Augmented, net, parse_args

EPOCHS, BATCH = 2, 4  # 24 samples: 6 steps an epoch (3 with 2 processes)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = net()

    def forward(self, x, labels):
        loss = nn.functional.binary_cross_entropy_with_logits(self.net(x),
                                                              labels)
        print("loss", loss.item().hex(), flush=True)
        return {"loss": loss}


def noisy_collate(features):
    """A collator that draws from torch's generator, as the masking of
    DataCollatorForLanguageModeling does."""
    batch = default_data_collator(features)
    batch["x"] = batch["x"] + 0.01 * torch.randn(batch["x"].shape)
    return batch


class UsersTrainer(Trainer):
    """A Trainer subclass of the job's own (trl's SFTTrainer is one)."""

    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        return super().compute_loss(model, inputs, return_outputs,
                                    num_items_in_batch)


class Signals(TrainerCallback):
    """The test harness's lines; a job of yours leaves this out."""

    def __init__(self, resuming):
        self.resuming = resuming

    def on_save(self, args, state, control, **kw):
        committed(state.global_step)  # this rank's files are all written

    def on_step_begin(self, args, state, control, **kw):
        if self.resuming:  # restored, the first resumed step not yet run
            self.resuming = False
            resumed(state.global_step)


def main():
    args = parse_args(("--workers", dict(type=int, default=0)),
                      ("--plain", dict(action="store_true")),
                      ("--mixin", dict(action="store_true")),
                      ("--save-steps", dict(type=int, default=4)),
                      ("--data-seed", dict(type=int, default=None)),
                      ("--collate", dict(action="store_true")),
                      ("--accumulate", dict(type=int, default=1)))
    torch.manual_seed(1234)  # model init; a resumed job loads the weights
    model = Net()
    if args.plain:
        trainer_class = Trainer
    elif args.mixin:
        from rngsnap.integrations.transformers import RngsnapTrainerMixin

        class MyTrainer(RngsnapTrainerMixin, UsersTrainer):  # + 1 line
            pass
        trainer_class = MyTrainer
    else:
        from rngsnap.integrations.transformers import RngsnapTrainer
        trainer_class = RngsnapTrainer  # the line rngsnap changes
    targs = TrainingArguments(
        output_dir=args.dir, num_train_epochs=EPOCHS,
        per_device_train_batch_size=BATCH, learning_rate=0.05,
        save_strategy="steps", save_steps=args.save_steps, seed=42,
        data_seed=args.data_seed, dataloader_num_workers=args.workers,
        gradient_accumulation_steps=args.accumulate,
        logging_strategy="no", report_to="none", disable_tqdm=True,
        remove_unused_columns=False, dataloader_pin_memory=False,
        use_cpu=True)
    trainer = trainer_class(model=model, args=targs,
                            train_dataset=Augmented(as_dict=True),
                            data_collator=noisy_collate if args.collate
                            else None, callbacks=[Signals(args.resume)])
    # True: the last checkpoint in output_dir, as a user resumes
    trainer.train(resume_from_checkpoint=args.resume or None)
    params = b"".join(p.detach().numpy().tobytes()
                      for p in model.parameters())
    print("params", hashlib.sha256(params).hexdigest(), flush=True)


if __name__ == "__main__":
    sys.exit(main())
