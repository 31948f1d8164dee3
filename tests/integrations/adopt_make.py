"""Makes accelerate's own RNG file for test_adopt.py: a plain
Accelerator(cpu=True).save_state(DIR) after seeding and a few draws."""
import random
import sys

import numpy as np
import torch
from accelerate import Accelerator

acc = Accelerator(cpu=True)
random.seed(1), np.random.seed(2), torch.manual_seed(3)
random.random(), np.random.rand(), torch.rand(3)  # states off their seeds
acc.save_state(sys.argv[1])
