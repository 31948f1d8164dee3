"""What the bug jobs share beyond toyjob.py: the dataset that also returns
each sample's index (to count the samples an epoch saw) and the line
each step prints.  Run from tests/frameworks/bugs with tests/frameworks on
sys.path (bugrun.py sets PYTHONPATH)."""
import hashlib

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


def step_line(epoch, index, x, loss):
    """'step <epoch> <indices> <batch digest> <loss hex>': which samples the
    step took, the bytes they came as (augmented) and the loss."""
    ids = ",".join(str(int(i)) for i in index)
    digest = hashlib.sha256(x.detach().numpy().tobytes()).hexdigest()[:8]
    print("step %d %s %s %s" % (epoch, ids, digest, loss.item().hex()),
          flush=True)
