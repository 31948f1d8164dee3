"""Adopt a job that ran without rngsnap: read the framework's own RNG file
of the checkpoint (accelerate's random_states_<i>.pkl, the Trainer's
rng_state.pth / rng_state_<i>.pth), verified byte by byte and unpickled
without running code, and restore it once, all or nothing.  The
integrations write rngsnap checkpoints from then on (docs/integrations/
adopt.md).
"""
import os

from rngsnap import CorruptError, MismatchError

from ._archive import read_archive
from ._restricted_pickle import load_members

_ACCEL = "accelerate's own RNG file"
_TRAINER = "the Trainer's own RNG file"
# Device generators as each framework names them: accelerate key, Trainer key
_DEVICES = {"cuda": ("torch_cuda_manual_seed", "cuda"),
            "xpu": ("torch_xpu_manual_seed", "xpu"),
            "mlu": ("torch_mlu_manual_seed", "mlu"),
            "musa": ("torch_musa_manual_seed", "musa"),
            "hpu": ("torch_hpu_manual_seed", "hpu"),
            "npu": (None, "npu")}
_FOREIGN = {"xm_seed", "xla", "torch_sdaa_manual_seed",
            "torch_neuron_manual_seed"}


def _read(path, kind, required):
    members = read_archive(os.fspath(path))
    states = load_members(members, path)
    if not isinstance(states, dict) or not required <= set(states):
        raise CorruptError(
            f"rngsnap: {path} is not {kind} (it lacks "
            f"{sorted(required - set(states) if isinstance(states, dict) else required)}); "
            f"nothing was restored: pass the checkpoint folder the framework "
            f"saved")
    return states


def read_accelerate_states(path):
    """The dict in accelerate's random_states_<i>.pkl, verified (raises
    CorruptError for a damaged file or a foreign global)."""
    return _read(path, _ACCEL,
                 {"random_state", "numpy_random_seed", "torch_manual_seed"})


def read_trainer_states(path):
    """The dict in the Trainer's rng_state[_<i>].pth, verified."""
    return _read(path, _TRAINER, {"python", "numpy", "cpu"})


def _check_python(path, st):
    ok = (isinstance(st, tuple) and len(st) == 3 and st[0] == 3
          and isinstance(st[1], tuple) and len(st[1]) == 625
          and all(type(x) is int and 0 <= x < 2 ** 32 for x in st[1])
          and st[1][-1] <= 624 and (st[2] is None or type(st[2]) is float))
    if not ok:
        raise CorruptError(f"rngsnap: {path} holds no valid random (Python) "
                           f"generator state; nothing was restored")


def _check_numpy(path, st):
    import numpy
    ok = (isinstance(st, tuple) and len(st) == 5 and st[0] == "MT19937"
          and isinstance(st[1], numpy.ndarray) and st[1].dtype == "uint32"
          and st[1].shape == (624,) and type(st[2]) is int
          and 0 <= st[2] <= 624 and st[3] in (0, 1)
          and type(st[4]) is float)
    if not ok:
        raise CorruptError(f"rngsnap: {path} holds no valid NumPy generator "
                           f"state; nothing was restored")


def _check_tensor(path, t, what, size=None):
    import torch
    if (not isinstance(t, torch.Tensor) or t.dtype != torch.uint8
            or t.dim() != 1 or (size is not None and t.numel() != size)):
        raise CorruptError(f"rngsnap: {path} holds no valid {what} state; "
                           f"nothing was restored")


def _present_devices():
    import torch
    out = {}
    for name in _DEVICES:
        mod = getattr(torch, name, None)
        try:
            if mod is not None and mod.is_available():
                out[name] = mod
        except Exception:
            pass
    return out


def check_framework_states(states, source):
    """Every check restore_framework_states makes, restoring nothing (an
    integration checks at its start, restores later where the framework
    restores): CorruptError or MismatchError, else what restore needs."""
    import torch
    accel = "random_state" in states
    kind = _ACCEL if accel else _TRAINER
    py = states["random_state" if accel else "python"]
    np_state = states["numpy_random_seed" if accel else "numpy"]
    cpu = states["torch_manual_seed" if accel else "cpu"]
    _check_python(source, py)
    _check_numpy(source, np_state)
    _check_tensor(source, cpu, "torch CPU generator",
                  torch.get_rng_state().numel())
    foreign = _FOREIGN & set(states)
    if foreign:
        raise MismatchError(
            f"rngsnap: {source} holds generator states rngsnap cannot "
            f"restore ({sorted(foreign)}); nothing was restored: resume "
            f"with the framework's own load")
    present = _present_devices()
    devices = {}
    for name, (akey, tkey) in _DEVICES.items():
        key = akey if accel else tkey
        has = key is not None and key in states
        if has != (name in present):
            where = "this process has" if name in present else "the file has"
            raise MismatchError(
                f"rngsnap: {source} and this process differ in {name} "
                f"generators ({where} them, the other not); nothing was "
                f"restored: resume on the kind of machine the checkpoint "
                f"was written on, or start without adopting")
        if has:
            val = states[key]
            vals = list(val) if isinstance(val, (list, tuple)) else [val]
            count = present[name].device_count()
            if isinstance(val, (list, tuple)) and len(vals) != count:
                raise MismatchError(
                    f"rngsnap: {source} holds {len(vals)} {name} generator "
                    f"states, this process has {count} devices; nothing was "
                    f"restored: resume with as many devices")
            for v in vals:
                _check_tensor(source, v, f"{name} generator")
            devices[name] = (present[name], val)
    return kind, py, np_state, cpu, devices


def restore_framework_states(states, source):
    """Restore the states a reader returned (accelerate's or the
    Trainer's dict; source: the file's path, for the message), all or
    nothing; returns the one line to print."""
    import random
    import numpy
    import torch
    kind, py, np_state, cpu, devices = check_framework_states(states, source)
    before = (random.getstate(), numpy.random.get_state(),
              torch.get_rng_state(),
              {n: m.get_rng_state_all() for n, (m, _) in devices.items()})
    try:
        random.setstate(py)
        numpy.random.set_state(np_state)
        torch.set_rng_state(cpu)
        for mod, val in devices.values():
            if isinstance(val, (list, tuple)):
                mod.set_rng_state_all(list(val))
            else:
                mod.set_rng_state(val)
    except Exception as e:
        random.setstate(before[0])
        numpy.random.set_state(before[1])
        torch.set_rng_state(before[2])
        for n, (mod, _) in devices.items():
            mod.set_rng_state_all(before[3][n])
        raise CorruptError(
            f"rngsnap: {source}: a generator refused its state ({e}); "
            f"nothing was restored: resume from another checkpoint") from None
    names = ["random", "NumPy", "torch CPU"] + sorted(devices)
    return (f"rngsnap: adopted {', '.join(names)} generator states from "
            f"{source} ({kind}); rngsnap checkpoints from now on")


def adopt_accelerate(folder, process_index):
    """Read folder/random_states_<process_index>.pkl and restore it."""
    path = os.path.join(os.fspath(folder), f"random_states_{process_index}.pkl")
    return restore_framework_states(read_accelerate_states(path), path)


def adopt_trainer(folder, process_index, world_size):
    """Read the Trainer's rng_state.pth (world_size 1) or
    rng_state_<process_index>.pth of folder and restore it."""
    name = ("rng_state.pth" if world_size <= 1
            else f"rng_state_{process_index}.pth")
    path = os.path.join(os.fspath(folder), name)
    return restore_framework_states(read_trainer_states(path), path)
