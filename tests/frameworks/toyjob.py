"""The toy job the four recipes share: a dataset with random augmentation
in __getitem__ (torch's CPU generator), a small model with dropout, and
the command line.  None of it is a recipe's point; each recipe's own file
holds what its framework needs."""
import argparse

import torch
from torch import nn


class Augmented(torch.utils.data.Dataset):
    def __init__(self, samples=24, as_dict=False):
        g = torch.Generator().manual_seed(7)
        self.x = torch.randn(samples, 8, generator=g)
        self.y = (self.x.sum(1, keepdim=True) > 0).float()
        self.as_dict = as_dict

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i] + 0.1 * torch.randn(8)  # a draw per sample
        return {"x": x, "labels": self.y[i]} if self.as_dict else (x, self.y[i])


def net():
    """Model init draws from torch's generator: seed before calling."""
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.3),
                         nn.Linear(16, 1))


def parse_args(*more):
    """--dir DIR [--resume], and the recipe's own options
    ((name, keyword arguments of add_argument) pairs)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--resume", action="store_true")
    for name, kw in more:
        ap.add_argument(name, **kw)
    torch.set_num_threads(1)
    return ap.parse_args()
