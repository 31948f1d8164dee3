"""Run a recipe, unchanged, with STAND-IN CUDA and HPU device generators
(devices_standin.py), against the real framework:

    RNGSNAP_STANDIN_DEVICES=cuda,hpu ACCELERATE_USE_CPU=1 \\
        python3 tests/frameworks/standins/with_devices.py RECIPE.py ARGS...

A CPU machine cannot show a process with both a CUDA and a Gaudi (HPU)
generator, the case of accelerate#3960; this gives torch both, as
generators only: no tensor lives on them (ACCELERATE_USE_CPU keeps
accelerate's model on the CPU), and every Dropout in training mode moves
both on, as its kernel on a device would.  Everything else is the real
framework.
"""
import os
import runpy
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)

import torch  # noqa: E402

import devices_standin  # noqa: E402

if not devices_standin.install_from_env():
    raise SystemExit("with_devices.py: set RNGSNAP_STANDIN_DEVICES "
                     "(cuda, hpu or cuda,hpu)")


def _dropout_draws(module, args, output):
    if isinstance(module, torch.nn.Dropout) and module.training:
        devices_standin.kernel_draws()


torch.nn.modules.module.register_module_forward_hook(_dropout_draws)

recipe = os.path.abspath(sys.argv[1])
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(recipe))
runpy.run_path(recipe, run_name="__main__")
