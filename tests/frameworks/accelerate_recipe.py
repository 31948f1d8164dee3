"""accelerate + rngsnap (docs/python.md, "accelerate"): save_state and
load_state carry every generator of every backend, restored strictly.

accelerate's own random_states_<i>.pkl restores the devices through an
if/elif chain (a process with CUDA and HPU gets only one of them back,
accelerate#3960) and turns any failure into a log line.  The context,
registered for checkpointing, is loaded after that restore, so rngsnap
has the last word on every generator and refuses a checkpoint that does
not fit this process (another device set, rank count, generator kind).

    python3 accelerate_recipe.py --dir DIR [--resume]
    (or accelerate launch accelerate_recipe.py ...; checkpoints at epoch ends)
"""
import os
import random

import numpy as np
import torch
from accelerate import Accelerator
from torch import nn

import rngsnap
import rngsnap.torch
from killpoint import committed, resumed  # the test harness's lines only
from toyjob import Augmented, net, parse_args

EPOCHS, BATCH = 3, 4


class RngState:
    """rngsnap for accelerator.register_for_checkpointing.  accelerate
    writes the main process's state_dict() only (custom_checkpoint_<i>.pkl),
    so with several processes every rank's bytes are gathered into it (a
    collective: save_state calls state_dict() on every process)."""

    def __init__(self, ctx, accelerator):
        self.ctx, self.gather = ctx, accelerator.num_processes > 1

    def state_dict(self):
        return self.ctx.state_dict(gather=self.gather)

    def load_state_dict(self, state):
        self.ctx.load_state_dict(state)


def main():
    args = parse_args()
    accelerator = Accelerator()
    torch.manual_seed(1234)  # model init; a resumed job loads the weights
    np.random.seed(1234)  # and NumPy's, random's: ledger diff compares
    random.seed(1234)  # every generator of the runs, used or not
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    ctx = rngsnap.Context(resume=args.resume)
    # The loader's own generator (its shuffle and base seed), in the
    # checkpoint too; with several processes prepare() would otherwise
    # give the sampler a generator that no checkpoint holds.
    shuffle = ctx.register_generator("loader", torch.Generator().manual_seed(5))
    loader = torch.utils.data.DataLoader(Augmented(), batch_size=BATCH,
                                         shuffle=True, generator=shuffle)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    tracker = rngsnap.torch.track(ctx)  # torch (every device), NumPy, random
    accelerator.register_for_checkpointing(RngState(ctx, accelerator))
    # load_state restores accelerate's own RNG file first: the check that
    # nothing drew before the restore belongs where load_state begins.
    accelerator.register_load_state_pre_hook(
        lambda models, input_dir: tracker.check_order())
    ledger = ctx.ledger(os.path.join(args.dir, "ledger/"))  # one file a rank

    done = 0
    if args.resume:  # the last whole checkpoint: folders appear renamed
        done = max(int(d.split("-")[1]) for d in os.listdir(args.dir)
                   if d.startswith("epoch-") and not d.endswith(".tmp"))
        accelerator.load_state(os.path.join(args.dir, "epoch-%d" % done))
        resumed(done, shuffle)

    loss_fn = nn.BCEWithLogitsLoss()
    for epoch in range(done, EPOCHS):
        for i, (x, y) in enumerate(loader):
            opt.zero_grad()
            loss = loss_fn(model(x), y)  # dropout: the device's generator
            accelerator.backward(loss)
            opt.step()
            print("loss", loss.item().hex(), flush=True)
            ledger.step(epoch * len(loader) + i)  # rngsnap ledger diff
        path = os.path.join(args.dir, "epoch-%d" % (epoch + 1))
        accelerator.save_state(path + ".tmp")
        accelerator.wait_for_everyone()
        if accelerator.is_main_process:
            os.replace(path + ".tmp", path)  # whole, or not there
        accelerator.wait_for_everyone()
        committed(epoch + 1, shuffle)
    ctx.close()


if __name__ == "__main__":
    main()
