"""CPU STAND-IN for torch.distributed.checkpoint's save/load with Stateful
(torch >= 2.2; torch 1.13 here has only the prototype save_state_dict).
It keeps what decides how rngsnap's state travels, from pytorch/pytorch
torch/distributed/checkpoint/:

- stateful.py: Stateful is a runtime-checkable protocol (state_dict and
  load_state_dict).
- state_dict_saver.py save(): state_dict() of each Stateful
  (_stateful_to_state_dict), the nested dict flattened to "a.b" keys
  (DefaultSavePlanner), one write plan per rank, and _dedup_save_plans:
  a key that several ranks hold is written by one of them only, the rank
  whose plan is smallest so far (ties: the lowest), the others' values
  dropped; the coordinator writes the metadata last.
- state_dict_loader.py load(): state_dict() of each Stateful FIRST, as the
  template of the keys to read; a key the checkpoint lacks is an error;
  tensors are loaded in place, other values replaced; then
  load_state_dict() of each Stateful with what was read.

Storage is one torch.save file per rank (__<rank>_0.distcp) and a
.metadata file mapping each key to the rank that wrote it.
"""
import os
from typing import Protocol, runtime_checkable

import torch
import torch.distributed as dist


@runtime_checkable
class Stateful(Protocol):
    def state_dict(self):
        ...

    def load_state_dict(self, state_dict):
        ...


def _flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        key = prefix + str(k)
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _set(d, key, value):
    """Put value back at the place of flattened key in nested dict d."""
    for k, v in d.items():
        if key == str(k):
            d[k] = value
            return True
        if isinstance(v, dict) and key.startswith(str(k) + "."):
            if _set(v, key[len(str(k)) + 1:], value):
                return True
    return False


def _size(v):
    return v.numel() * v.element_size() if isinstance(v, torch.Tensor) else 1


def _dedup(plans):
    """_dedup_save_plans: which keys each rank writes."""
    where, order = {}, []
    for r, plan in enumerate(plans):
        for key, _ in plan:
            if key not in where:
                where[key] = set()
                order.append(key)
            where[key].add(r)
    sizes = dict((key, s) for plan in plans for key, s in plan)
    load = [0] * len(plans)
    keep = [set() for _ in plans]
    for key in order:
        r = min(sorted(where[key]), key=lambda i: load[i])
        load[r] += sizes[key]
        keep[r].add(key)
    return keep


def _world():
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _gather(obj):
    rank, world = _world()
    if world == 1:
        return [obj]
    out = [None] * world
    dist.all_gather_object(out, obj)
    return out


def _barrier():
    if _world()[1] > 1:
        dist.barrier()


def save(state_dict, *, checkpoint_id, **_):
    rank, world = _world()
    sd = {k: v.state_dict() if isinstance(v, Stateful) else v
          for k, v in state_dict.items()}
    flat = _flatten(sd)
    plans = _gather([(k, _size(v)) for k, v in flat.items()])
    keep = _dedup(plans)
    os.makedirs(checkpoint_id, exist_ok=True)
    torch.save({k: flat[k] for k in keep[rank]},
               os.path.join(checkpoint_id, "__%d_0.distcp" % rank))
    _barrier()
    if rank == 0:
        meta = {k: r for r in range(world) for k in keep[r]}
        tmp = os.path.join(checkpoint_id, ".metadata.tmp")
        torch.save(meta, tmp)
        os.replace(tmp, os.path.join(checkpoint_id, ".metadata"))
    _barrier()


def load(state_dict, *, checkpoint_id, **_):
    keys = sorted(state_dict.keys())
    sd = {k: state_dict[k].state_dict() if isinstance(state_dict[k], Stateful)
          else state_dict[k] for k in keys}
    meta = torch.load(os.path.join(checkpoint_id, ".metadata"))
    files = {}
    for key, want in _flatten(sd).items():
        if key not in meta:
            raise RuntimeError("Missing key in checkpoint state_dict: %s."
                               % key)
        r = meta[key]
        if r not in files:
            files[r] = torch.load(os.path.join(checkpoint_id,
                                               "__%d_0.distcp" % r))
        value = files[r][key]
        if isinstance(want, torch.Tensor):
            with torch.no_grad():
                want.copy_(value)
        else:
            _set(sd, key, value)
    for k in keys:
        if isinstance(state_dict[k], Stateful):
            state_dict[k].load_state_dict(sd[k])
        else:
            state_dict[k] = sd[k]
