"""Lightning + rngsnap (docs/python.md, "Lightning"): a Callback carries
the context in checkpoint["callbacks"]; Trainer.fit(ckpt_path=...)
restores callbacks before the fit loop makes the train loader's iterator,
so every generator is back before the resumed run's first draw.

    python3 lightning_recipe.py --dir DIR [--resume]     (epoch-end checkpoints)
"""
import os

import torch
try:  # the lightning package; pytorch-lightning has the same code
    from lightning.pytorch import (Callback, LightningModule, Trainer,
                                   seed_everything)
except ImportError:
    from pytorch_lightning import (Callback, LightningModule, Trainer,
                                   seed_everything)
from torch import nn

import rngsnap
import rngsnap.torch
from killpoint import committed, resumed  # the test harness's lines only
from toyjob import Augmented, net, parse_args

EPOCHS, BATCH = 3, 4


class Net(LightningModule):
    def __init__(self, loader_generator):
        super().__init__()
        self.net = net()
        self.loader_generator = loader_generator

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.binary_cross_entropy_with_logits(self.net(x), y)
        print("loss", loss.item().hex(), flush=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)

    def train_dataloader(self):
        # The loader's own generator: iter() draws its base seed and the
        # shuffle from it, not from torch's default generator.
        return torch.utils.data.DataLoader(
            Augmented(), batch_size=BATCH, shuffle=True,
            generator=self.loader_generator)


class RngsnapCallback(Callback):
    """rngsnap in Lightning's checkpoint.  Lightning writes rank 0's
    checkpoint["callbacks"] only, so with several ranks every rank's bytes
    are gathered into it (state_dict() runs on every rank)."""

    def __init__(self, ctx):
        self.ctx = ctx

    def state_dict(self):
        return self.ctx.state_dict(gather=self.ctx.world_size > 1)

    def load_state_dict(self, state_dict):
        self.ctx.load_state_dict(state_dict)


class LedgerMark(Callback):
    """Each training step into the divergence ledger (rngsnap ledger
    diff)."""

    def __init__(self, ledger):
        self.ledger = ledger

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, i):
        self.ledger.step(trainer.global_step)


class EpochCheckpoint(Callback):
    """trainer.save_checkpoint at each epoch end, whole or not there
    (ModelCheckpoint calls the same save_checkpoint)."""

    def __init__(self, folder, loader_generator, resuming):
        self.folder, self.loader_generator = folder, loader_generator
        self.resuming = resuming

    def on_fit_start(self, trainer, pl_module):
        if self.resuming:  # callbacks restored, nothing drawn since
            resumed("fit_start", self.loader_generator)

    def on_train_epoch_end(self, trainer, pl_module):
        done = trainer.current_epoch + 1
        path = os.path.join(self.folder, "epoch-%d.ckpt" % done)
        trainer.save_checkpoint(path + ".tmp")
        if trainer.global_rank == 0:
            os.replace(path + ".tmp", path)
        committed(done, self.loader_generator)


def main():
    args = parse_args()
    torch.manual_seed(1234)  # model init; a resumed job loads the weights
    seed_everything(1234)  # NumPy and random too: ledger diff compares them
    ctx = rngsnap.Context(resume=args.resume)
    shuffle = ctx.register_generator("loader", torch.Generator().manual_seed(5))
    model = Net(shuffle)
    rngsnap.torch.track(ctx)  # torch (every device), NumPy, random
    ckpt = None
    if args.resume:
        done = max(int(f[6:-5]) for f in os.listdir(args.dir)
                   if f.startswith("epoch-") and f.endswith(".ckpt"))
        ckpt = os.path.join(args.dir, "epoch-%d.ckpt" % done)
    trainer = Trainer(max_epochs=EPOCHS, logger=False,
                      enable_checkpointing=False, enable_progress_bar=False,
                      enable_model_summary=False, num_sanity_val_steps=0,
                      callbacks=[RngsnapCallback(ctx),
                                 EpochCheckpoint(args.dir, shuffle, args.resume),
                                 LedgerMark(ctx.ledger(os.path.join(
                                     args.dir, "ledger/")))])
    trainer.fit(model, ckpt_path=ckpt)
    ctx.close()


if __name__ == "__main__":
    main()
