"""CPU STAND-IN for `accelerate` (not installed here): only what the
recipe calls, in the order of the real sources (huggingface/accelerate
16cb6eb, 1.15.0.dev0):

- Accelerator.save_state (accelerator.py): the models, optimizers, ...,
  then save_accelerator_state (checkpointing.py) writes
  random_states_<process>.pkl with one `if` per device kind (CUDA and HPU
  both saved), then save_custom_state writes custom_checkpoint_<i>.pkl
  with obj.state_dict() of each registered object, on the main process.
- Accelerator.load_state: the load-state pre-hooks, then
  load_accelerator_state: models, optimizers, then the random states,
  devices through an if/elif chain (xpu; mlu/sdaa/musa/hpu/neuron, else
  cuda: a process with HPU and CUDA gets HPU back, CUDA not; #3960), all
  inside `except Exception: logger.info("Could not load random states")`;
  then the count check of custom checkpoints and load_custom_state of
  each registered object, in registration order.

Everything runs on the CPU; backward() moves the stand-in device
generators on (devices_standin.kernel_draws) as device kernels would.
"""
import os
import random
import re

import numpy as np
import torch
import torch.distributed as dist

import devices_standin

__version__ = "0+cpu-standin"


def _hpu_available():
    return "hpu" in devices_standin._states


class _Handle:
    def __init__(self, hooks, key):
        self.hooks, self.key = hooks, key

    def remove(self):
        self.hooks.pop(self.key, None)


class Accelerator:
    def __init__(self):
        self.device = torch.device("cpu")
        self.num_processes = dist.get_world_size() if (
            dist.is_available() and dist.is_initialized()) else 1
        self.process_index = dist.get_rank() if self.num_processes > 1 else 0
        self.is_main_process = self.process_index == 0
        self._models, self._optimizers, self._custom_objects = [], [], []
        self._load_model_state_pre_hook = {}
        self.step = 0

    def prepare(self, *objs):
        for o in objs:
            if isinstance(o, torch.nn.Module):
                self._models.append(o)
            elif isinstance(o, torch.optim.Optimizer):
                self._optimizers.append(o)
        return objs[0] if len(objs) == 1 else objs

    def backward(self, loss):
        loss.backward()
        devices_standin.kernel_draws()

    def wait_for_everyone(self):
        if self.num_processes > 1:
            dist.barrier()

    def register_for_checkpointing(self, *objects):
        bad = [o for o in objects if not hasattr(o, "state_dict")
               or not hasattr(o, "load_state_dict")]
        if bad:
            raise ValueError("All `objects` must include a `state_dict` and "
                             "`load_state_dict` function to be stored.")
        self._custom_objects.extend(objects)

    def register_load_state_pre_hook(self, hook):
        key = len(self._load_model_state_pre_hook)
        self._load_model_state_pre_hook[key] = hook
        return _Handle(self._load_model_state_pre_hook, key)

    # -- save_state / save_accelerator_state / save_custom_state --------
    def save_state(self, output_dir):
        os.makedirs(output_dir, exist_ok=True)
        main = self.is_main_process
        for i, m in enumerate(self._models):
            if main:
                torch.save(m.state_dict(), os.path.join(
                    output_dir, "pytorch_model%s.bin" % ("_%d" % i if i else "")))
        for i, o in enumerate(self._optimizers):
            if main:
                torch.save(o.state_dict(), os.path.join(
                    output_dir, "optimizer%s.bin" % ("_%d" % i if i else "")))
        states = {"step": self.step, "random_state": random.getstate(),
                  "numpy_random_seed": np.random.get_state(),
                  "torch_manual_seed": torch.get_rng_state()}
        if _hpu_available():
            states["torch_hpu_manual_seed"] = torch.hpu.get_rng_state_all()
        if torch.cuda.is_available():
            states["torch_cuda_manual_seed"] = torch.cuda.get_rng_state_all()
        torch.save(states, os.path.join(
            output_dir, "random_states_%d.pkl" % self.process_index))
        for i, obj in enumerate(self._custom_objects):
            state = obj.state_dict()  # on every process, saved by the main
            if main:
                torch.save(state, os.path.join(
                    output_dir, "custom_checkpoint_%d.pkl" % i))
        return output_dir

    # -- load_state / load_accelerator_state / load_custom_state --------
    def load_state(self, input_dir):
        if not os.path.isdir(input_dir):
            raise ValueError("Tried to find %s but folder does not exist"
                             % input_dir)
        for hook in self._load_model_state_pre_hook.values():
            hook(self._models, input_dir)
        for i, m in enumerate(self._models):
            m.load_state_dict(torch.load(os.path.join(
                input_dir, "pytorch_model%s.bin" % ("_%d" % i if i else ""))))
        for i, o in enumerate(self._optimizers):
            o.load_state_dict(torch.load(os.path.join(
                input_dir, "optimizer%s.bin" % ("_%d" % i if i else ""))))
        try:
            states = torch.load(os.path.join(
                input_dir, "random_states_%d.pkl" % self.process_index))
            self.step = states.get("step", self.step)
            random.setstate(states["random_state"])
            np.random.set_state(states["numpy_random_seed"])
            torch.set_rng_state(states["torch_manual_seed"])
            if _hpu_available():
                torch.hpu.set_rng_state_all(states["torch_hpu_manual_seed"])
            else:
                torch.cuda.set_rng_state_all(states["torch_cuda_manual_seed"])
        except Exception:  # as accelerate does: logged at info level only
            pass
        found = [f for f in os.listdir(input_dir)
                 if re.search(r"^custom_checkpoint_\d+\.pkl$", f)]
        if len(found) != len(self._custom_objects):
            raise RuntimeError(
                "Number of custom checkpoints in folder %s does not match the "
                "number of registered objects:\n\tFound checkpoints: %d\n\t"
                "Registered objects: %d\n" % (input_dir, len(found),
                                              len(self._custom_objects)))
        for i, obj in enumerate(self._custom_objects):
            obj.load_state_dict(torch.load(os.path.join(
                input_dir, "custom_checkpoint_%d.pkl" % i), map_location="cpu"))
