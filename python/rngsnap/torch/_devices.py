"""Layer torch: the accelerators torch may expose, one table, and their
device generators: what rngsnap.torch.track() saves as torch.<acc>:<i>
(cuda, xpu, mps, npu through torch_npu, hpu through habana_frameworks)
and how ctx.seed_all seeds each one.
"""
import sys

import torch


def module(name):
    """Module name, imported, or None when it is not installed."""
    try:
        __import__(name)
    except ImportError:  # the vendor package is not installed here
        return None
    return sys.modules[name]


def _torch_attr(prefix):
    return lambda: getattr(torch, prefix, None)


# (prefix, vendor package to import first or None, its torch module).
# Each module offers device_count(), get_rng_state(device) and
# set_rng_state(state, device) (Habana's under .random); mps has one device
# and no index.  A package that is not installed (ImportError), a module
# torch lacks or a runtime without devices adds nothing.
_ACCELERATORS = (
    ("cuda", None, _torch_attr("cuda")),
    ("xpu", None, _torch_attr("xpu")),
    ("mps", None, _torch_attr("mps")),
    ("npu", "torch_npu", _torch_attr("npu")),
    ("hpu", "habana_frameworks.torch", lambda: module(
        "habana_frameworks.torch.hpu")),
)


def _available(prefix, mod):
    if prefix == "mps":
        return torch.backends.mps.is_available()
    return mod.is_available()


def device_generators():
    """[(name, device name, get() -> tensor, set(tensor))] for every visible
    accelerator device, in table order then device order."""
    out = []
    for prefix, package, find in _ACCELERATORS:
        if package is not None and module(package) is None:
            continue
        mod = find()
        rng = mod if hasattr(mod, "get_rng_state") else getattr(
            mod, "random", None)
        if mod is None or not hasattr(rng, "get_rng_state"):
            continue
        try:
            if not _available(prefix, mod):
                continue
            count = 1 if prefix == "mps" else mod.device_count()
        except (AttributeError, RuntimeError):  # a runtime failing its probe
            continue
        for i in range(count):
            name = "torch.%s:%d" % (prefix, i)
            if prefix == "mps":
                get = (lambda r=rng: r.get_rng_state())
                put = (lambda t, r=rng: r.set_rng_state(t))
                dev = "mps"
            else:
                get = (lambda r=rng, i=i: r.get_rng_state(i))
                put = (lambda t, r=rng, i=i: r.set_rng_state(t, i))
                try:
                    dev = str(mod.get_device_name(i))
                except (AttributeError, RuntimeError):
                    dev = prefix
            out.append((name, dev, get, put))
    return out


def seed_device(name, get, seed):
    """Seed device generator name ("torch.<acc>:<i>") with seed."""
    prefix, i = name[len("torch."):].split(":")
    i = int(i)
    get()  # the device's runtime is initialised (lazily) first
    mod = module("habana_frameworks.torch.hpu") if prefix == "hpu" else \
        getattr(torch, prefix)
    rng = mod if hasattr(mod, "manual_seed") else getattr(mod, "random")
    gens = getattr(rng, "default_generators", None) or ()
    if i < len(gens):  # cuda, xpu: one generator per device
        gens[i].manual_seed(seed)
    elif prefix == "mps":
        rng.manual_seed(seed)
    else:
        with mod.device(i):
            rng.manual_seed(seed)
