"""What the bug jobs share beyond toyjob.py: the dataset that also returns
each sample's index (to count the samples an epoch saw) and the line
each step prints.  Run from tests/frameworks/bugs with tests/frameworks on
sys.path (bugrun.py sets PYTHONPATH)."""
import hashlib
import random

import numpy as np
import torch

from toyjob import Augmented


class Indexed(torch.utils.data.Dataset):
    """Augmented (a torch draw per sample) with the sample's index."""

    def __init__(self, samples, as_dict=False):
        self.data, self.as_dict = Augmented(samples), as_dict

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        x, y = self.data[i]
        if self.as_dict:
            return {"x": x, "labels": y, "index": torch.tensor(i)}
        return x, y, i


class EpochKeyed(torch.utils.data.Dataset):
    """A dataset whose samples draw from keyed streams: __getitem__(i)
    seeds torch's, NumPy's and random's generators from
    stream.derive(epoch, i) (rngsnap.torch.seed_from) and puts them back
    afterwards (the main process's loop draws from them: dropout).  A
    sample is then a pure function of (the stream's seeding, epoch, i),
    and fetching one moves no generator a checkpoint holds.  The epoch
    comes from set_epoch, which accelerate's DataLoaderShard calls on the
    dataset (the Trainer calls it on its loader each epoch)."""

    def __init__(self, dataset, stream):
        self.dataset, self.stream, self.epoch = dataset, stream, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, i):
        import rngsnap.torch
        saved = torch.get_rng_state(), np.random.get_state(), random.getstate()
        try:
            rngsnap.torch.seed_from(self.stream.derive(self.epoch, int(i)))
            return self.dataset[i]
        finally:
            torch.set_rng_state(saved[0])
            np.random.set_state(saved[1])
            random.setstate(saved[2])


def step_line(epoch, index, x, loss):
    """'step <epoch> <indices> <batch digest> <loss hex>': which samples the
    step took, the bytes they came as (augmented) and the loss."""
    ids = ",".join(str(int(i)) for i in index)
    digest = hashlib.sha256(x.detach().numpy().tobytes()).hexdigest()[:8]
    print("step %d %s %s %s" % (epoch, ids, digest, loss.item().hex()),
          flush=True)
