"""Lightning resumed with Trainer.fit(ckpt_path=...) from an epoch-end
checkpoint, plain (as Lightning's docs show it: seed_everything, a
DataLoader with shuffle=True, random augmentation, dropout), or with
rngsnap's callback from lightning_recipe.py (--rngsnap).

Plain: Lightning's checkpoint holds no generator (Lightning#18780), so
the resumed process draws the next epoch's order, augmentation and
dropout from seed_everything's fresh state: it trains on what the
uninterrupted run drew in its first epoch, not its second.

    python3 lightning_ckpt_job.py --dir DIR [--resume] [--rngsnap]
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

from bugjob import Indexed, step_line
from killpoint import committed  # the test harness's lines only
from lightning_recipe import RngsnapCallback  # the recipe's own callback
from toyjob import net, parse_args

EPOCHS, BATCH, SAMPLES = 3, 4, 24  # 6 steps an epoch


class Net(LightningModule):
    def __init__(self):
        super().__init__()
        self.net = net()

    def training_step(self, batch, batch_idx):
        x, y, index = batch
        loss = nn.functional.binary_cross_entropy_with_logits(self.net(x), y)
        step_line(self.current_epoch, index, x, loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)


class EpochCheckpoint(Callback):
    """trainer.save_checkpoint at each epoch end, whole or not there."""

    def __init__(self, folder):
        self.folder = folder

    def on_train_epoch_end(self, trainer, pl_module):
        done = trainer.current_epoch + 1
        path = os.path.join(self.folder, "epoch-%d.ckpt" % done)
        trainer.save_checkpoint(path + ".tmp")
        os.replace(path + ".tmp", path)
        committed(done)


def main():
    args = parse_args(("--rngsnap", dict(action="store_true")))
    seed_everything(42)
    model = Net()
    loader = torch.utils.data.DataLoader(Indexed(SAMPLES), batch_size=BATCH,
                                         shuffle=True)
    callbacks = [EpochCheckpoint(args.dir)]
    if args.rngsnap:
        import rngsnap
        import rngsnap.torch
        ctx = rngsnap.Context(resume=args.resume)
        rngsnap.torch.track(ctx)  # torch, NumPy, random: after the model
        callbacks.append(RngsnapCallback(ctx))
    ckpt = None
    if args.resume:
        done = max(int(f[6:-5]) for f in os.listdir(args.dir)
                   if f.startswith("epoch-") and f.endswith(".ckpt"))
        ckpt = os.path.join(args.dir, "epoch-%d.ckpt" % done)
    trainer = Trainer(max_epochs=EPOCHS, logger=False,
                      enable_checkpointing=False, enable_progress_bar=False,
                      enable_model_summary=False, num_sanity_val_steps=0,
                      callbacks=callbacks)
    trainer.fit(model, train_dataloaders=loader, ckpt_path=ckpt)
    if args.rngsnap:
        ctx.close()


if __name__ == "__main__":
    main()
