"""A Lightning job with ModelCheckpoint(every_n_train_steps=args.every): plain,
or with rngsnap.integrations.lightning.RngsnapCallback (the one line).

    python3 lightning_job.py --dir DIR [--resume] [--workers N] [--plain]
                             [--package lightning.pytorch|pytorch_lightning]
                             [--devices 2]   (strategy="ddp", gloo on CPU)

Prints "batch <digest>" and "loss <hex>" per step and, at the end,
"params <hex digest>" (with --devices 2 each rank prints them, after its
rank: "loss 1 <hex>"); the checkpoints signal the test harness
(killpoint.committed) once whole.
"""
import hashlib
import importlib
import os
import sys

import torch
from torch import nn

from killpoint import committed  # the test harness's lines only
from toyjob import Augmented, net, parse_args

EPOCHS, BATCH = 2, 4  # 24 samples: 6 steps an epoch


def main():
    args = parse_args(("--workers", dict(type=int, default=0)),
                      ("--plain", dict(action="store_true")),
                      ("--every", dict(type=int, default=4)),
                      ("--package", dict(default="lightning.pytorch")),
                      ("--devices", dict(type=int, default=1)))
    pl = importlib.import_module(args.package)

    class Net(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = net()

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = nn.functional.binary_cross_entropy_with_logits(
                self.net(x), y)
            say("batch", self.global_rank,
                hashlib.sha256(x.numpy().tobytes()).hexdigest()[:16])
            say("loss", self.global_rank, loss.item().hex())
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)

        def train_dataloader(self):
            return torch.utils.data.DataLoader(
                Augmented(), batch_size=BATCH, shuffle=True,
                num_workers=args.workers)

    class Signalled(pl.callbacks.ModelCheckpoint):
        def _save_checkpoint(self, trainer, filepath):
            super()._save_checkpoint(trainer, filepath)  # whole on disk
            committed(trainer.global_step)

    def say(what, rank, value):  # one write a line: ranks share stdout
        rank = " %d" % rank if args.devices > 1 else ""
        sys.stdout.write("%s%s %s\n" % (what, rank, value))
        sys.stdout.flush()

    pl.seed_everything(1234, verbose=False)
    model = Net()
    callbacks = [Signalled(dirpath=args.dir, filename="{step}",
                           every_n_train_steps=args.every, save_top_k=-1)]
    if not args.plain:
        from rngsnap.integrations.lightning import RngsnapCallback
        callbacks.insert(0, RngsnapCallback())  # the line rngsnap adds
    ckpt = None
    if args.resume:
        steps = [int(f[5:-5]) for f in os.listdir(args.dir)
                 if f.startswith("step=") and f.endswith(".ckpt")]
        ckpt = os.path.join(args.dir, "step=%d.ckpt" % max(steps))
    ddp = dict(strategy="ddp") if args.devices > 1 else {}
    trainer = pl.Trainer(max_epochs=EPOCHS, logger=False,
                         enable_progress_bar=False,
                         enable_model_summary=False, num_sanity_val_steps=0,
                         accelerator="cpu", devices=args.devices,
                         callbacks=callbacks, **ddp)
    trainer.fit(model, ckpt_path=ckpt)
    params = b"".join(p.detach().numpy().tobytes()
                      for p in model.parameters())
    say("params", trainer.global_rank, hashlib.sha256(params).hexdigest())


if __name__ == "__main__":
    sys.exit(main())
