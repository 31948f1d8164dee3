"""Run a recipe against the CPU STAND-INS of its framework:

    python3 tests/frameworks/standins/launch.py RECIPE.py ARGS...

The stand-ins (this folder, *_standin.py) replace accelerate, lightning,
transformers and torch.distributed.checkpoint in sys.modules, then the
recipe runs unchanged as __main__.  Each reproduces only the order of the
real framework's hooks that decides where rngsnap's restore lands (its
docstring cites the real files and functions); a recipe that passes here
has not run against the real framework.  RNGSNAP_STANDIN_DEVICES="cuda,hpu"
adds stand-in device generators (devices_standin.py).
"""
import os
import runpy
import sys
import types

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)

import torch  # noqa: E402
import torch.distributed  # noqa: E402

import devices_standin  # noqa: E402

devices_standin.install_from_env()

import accelerate_standin  # noqa: E402
import dcp_standin  # noqa: E402
import lightning_standin  # noqa: E402
import transformers_standin  # noqa: E402

lightning = types.ModuleType("lightning")
lightning.pytorch = lightning_standin
sys.modules.update({
    "accelerate": accelerate_standin,
    "lightning": lightning,
    "lightning.pytorch": lightning_standin,
    "transformers": transformers_standin,
    "torch.distributed.checkpoint": dcp_standin,
    "torch.distributed.checkpoint.stateful": dcp_standin,
})
torch.distributed.checkpoint = dcp_standin

recipe = os.path.abspath(sys.argv[1])
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(recipe))
runpy.run_path(recipe, run_name="__main__")
