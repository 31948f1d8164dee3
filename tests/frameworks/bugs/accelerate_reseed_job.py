"""accelerate resumed with load_state from an epoch-end checkpoint, then
re-seeded with accelerate.utils.set_seed (--reseed: the mistake
accelerate's guide warns about), plain (accelerate's own RNG file) or
with rngsnap's recipe from accelerate_recipe.py (--rngsnap).

Plain without --reseed is exact: load_state puts torch's, NumPy's and
random's generators back, and the loader draws its order from torch's.
With --reseed, set_seed throws the restored positions away: the resumed
run repeats the first epoch's order, augmentation and dropout draws.

    python3 accelerate_reseed_job.py --dir DIR [--resume] [--reseed]
                                     [--rngsnap]
"""
import os

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch import nn

from bugjob import Indexed, step_line
from killpoint import committed  # the test harness's lines only
from toyjob import net, parse_args

EPOCHS, BATCH, SAMPLES, SEED = 3, 4, 24, 42  # 6 steps an epoch


def main():
    args = parse_args(("--rngsnap", dict(action="store_true")),
                      ("--reseed", dict(action="store_true")))
    accelerator = Accelerator()
    set_seed(SEED)
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loader = torch.utils.data.DataLoader(Indexed(SAMPLES), batch_size=BATCH,
                                         shuffle=True)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    if args.rngsnap:
        import rngsnap
        import rngsnap.torch
        from accelerate_recipe import RngState
        ctx = rngsnap.Context(resume=args.resume)
        tracker = rngsnap.torch.track(ctx)
        accelerator.register_for_checkpointing(RngState(ctx, accelerator))
        accelerator.register_load_state_pre_hook(
            lambda models, input_dir: tracker.check_order())
    done = 0
    if args.resume:
        done = max(int(d.split("-")[1]) for d in os.listdir(args.dir)
                   if d.startswith("epoch-") and not d.endswith(".tmp"))
        accelerator.load_state(os.path.join(args.dir, "epoch-%d" % done))
        if args.reseed:
            set_seed(SEED)  # the mistake: after the restore

    loss_fn = nn.BCEWithLogitsLoss()
    for epoch in range(done, EPOCHS):
        for x, y, index in loader:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            accelerator.backward(loss)
            opt.step()
            step_line(epoch, index, x, loss)
        path = os.path.join(args.dir, "epoch-%d" % (epoch + 1))
        accelerator.save_state(path + ".tmp")
        os.replace(path + ".tmp", path)  # whole, or not there
        committed(epoch + 1)
    if args.rngsnap:
        ctx.close()


if __name__ == "__main__":
    main()
