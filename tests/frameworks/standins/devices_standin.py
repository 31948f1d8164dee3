"""CPU STAND-IN: CUDA and HPU device generators on a machine without them.

RNGSNAP_STANDIN_DEVICES="cuda,hpu" gives torch one CUDA device and one
Gaudi (HPU) device whose generators are 16-byte states (seed, offset),
the form torch >= 2.1 gives for CUDA, read and set through the names the
frameworks and rngsnap.torch call: torch.cuda.get_rng_state(i) /
set_rng_state(t, i) / get_rng_state_all() / set_rng_state_all(states), and
the same on habana_frameworks.torch.hpu, which is also torch.hpu (as
accelerate calls it; accelerate's is_hpu_available() finds it).  No
tensor ever lives on them: kernel_draws() moves every device generator's
offset on as a dropout kernel on the device would (with_devices.py calls
it from each Dropout).  This is how a process with CUDA and HPU, the case
of accelerate#3960, runs on a CPU machine; the only stand-in left in
tests/frameworks, since the frameworks themselves are the real ones.
"""
import importlib.machinery
import os
import struct
import sys
import types

import torch

_states = {}  # "cuda" / "hpu" -> [bytearray(16)] per device


def _module(kind, mod):
    count = len(_states[kind])

    def get(i=0):
        return torch.tensor(list(_states[kind][int(i)]), dtype=torch.uint8)

    def put(t, i=0):
        raw = bytes(t.numpy())
        if len(raw) != 16:
            raise RuntimeError("%s: a generator state is 16 bytes, not %d"
                               % (kind, len(raw)))
        _states[kind][int(i)][:] = raw

    mod.is_available = lambda: True
    mod.device_count = lambda: count
    mod.get_device_name = lambda i=0: "stand-in %s %d" % (kind, i)
    mod.get_rng_state = get
    mod.set_rng_state = put
    mod.get_rng_state_all = lambda: [get(i) for i in range(count)]
    mod.set_rng_state_all = lambda ts: [put(t, i) for i, t in enumerate(ts)]
    return mod


def kernel_draws(words=4):
    """Every stand-in device generator moves on by `words` Philox words."""
    for states in _states.values():
        for s in states:
            seed, offset = struct.unpack("<QQ", s)
            s[:] = struct.pack("<QQ", seed, offset + words)


def _spec_module(name):
    # With a spec, as importlib.util.find_spec (accelerate's
    # is_hpu_available) wants of a module in sys.modules.
    mod = types.ModuleType(name)
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None)
    return mod


def install_from_env():
    kinds = [k for k in os.environ.get("RNGSNAP_STANDIN_DEVICES",
                                       "").split(",") if k]
    for kind in kinds:
        if kind not in ("cuda", "hpu"):
            raise SystemExit("RNGSNAP_STANDIN_DEVICES: %r is not cuda or hpu"
                             % kind)
        # Each device starts at its own seed, offset 0.
        _states[kind] = [bytearray(struct.pack("<QQ", 1000 + len(kind), 0))]
    if "cuda" in _states:
        _module("cuda", torch.cuda)
    if "hpu" in _states:
        hf, hft, hpu = (_spec_module(n) for n in (
            "habana_frameworks", "habana_frameworks.torch",
            "habana_frameworks.torch.hpu"))
        _module("hpu", hpu)
        hf.torch, hft.hpu = hft, hpu
        sys.modules.update({"habana_frameworks": hf,
                            "habana_frameworks.torch": hft,
                            "habana_frameworks.torch.hpu": hpu})
        torch.hpu = hpu
    return kinds
