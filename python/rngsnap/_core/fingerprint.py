"""Layer core: the determinism fingerprint, what changes a job's results
besides its RNG state (library versions, determinism flags, environment,
devices, world size), saved next to the generators and compared at load.

Encoding (docs/python.md): UTF-8 text, first line "rngsnap-fingerprint 1",
then one "key=value" line per item, sorted by key; a backslash, newline or
carriage return inside a value is written as \\\\, \\n, \\r.  Text, so that
`rngsnap inspect` users can read it; never evaluated.
"""

import os

from .errors import CorruptError, MismatchError, error

HEADER = "rngsnap-fingerprint 1"
_ESC = {"\\": "\\\\", "\n": "\\n", "\r": "\\r"}
_UNESC = {"\\": "\\", "n": "\n", "r": "\r"}


def _env(name):
    v = os.environ.get(name)
    return "(unset)" if v is None else v


def collect(torch, numpy, devices, world_size):
    """The fingerprint of this process as {key: str}.  devices is
    [(generator name, device name)] from the tracked generators."""
    fp = {
        "numpy.version": numpy.__version__ if numpy else "(none)",
        "env.CUBLAS_WORKSPACE_CONFIG": _env("CUBLAS_WORKSPACE_CONFIG"),
        "env.PYTHONHASHSEED": _env("PYTHONHASHSEED"),
        "world_size": str(world_size),
    }
    if torch is not None:
        cudnn = torch.backends.cudnn
        fp.update({
            "torch.version": torch.__version__,
            "torch.cuda.version": str(torch.version.cuda),
            "torch.cudnn.version": str(cudnn.version()),
            "torch.cudnn.deterministic": str(bool(cudnn.deterministic)),
            "torch.cudnn.benchmark": str(bool(cudnn.benchmark)),
            "torch.deterministic_algorithms":
                str(torch.are_deterministic_algorithms_enabled()),
            # TF32 matmuls and convolutions (Ampere and later) round
            # differently from FP32 ones.
            "torch.cuda.matmul.allow_tf32":
                str(bool(torch.backends.cuda.matmul.allow_tf32)),
            "torch.cudnn.allow_tf32": str(bool(cudnn.allow_tf32)),
        })
    for gen, dev in devices:
        fp["device." + gen] = dev
    return fp


def _escape(s):
    return "".join(_ESC.get(c, c) for c in s)


def _unescape(s, where):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            nxt = s[i + 1] if i + 1 < len(s) else ""
            if nxt not in _UNESC:
                raise error(CorruptError, "%s: bad escape in %r" % (where, s))
            out.append(_UNESC[nxt])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def encode(fp):
    lines = [HEADER]
    for k in sorted(fp):
        if "=" in k or any(c in k for c in _ESC):
            raise ValueError("fingerprint key %r" % k)
        lines.append("%s=%s" % (k, _escape(fp[k])))
    return ("\n".join(lines) + "\n").encode("utf-8")


def decode(name, data):
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(CorruptError, "%s: not UTF-8 (%s)" % (name, e)) from None
    lines = text.split("\n")
    if not lines or lines[-1] != "":
        raise error(CorruptError, "%s: does not end with a newline" % name)
    lines.pop()
    if not lines or not lines[0].startswith("rngsnap-fingerprint "):
        raise error(CorruptError, "%s: first line is not "
                    "'rngsnap-fingerprint N'" % name)
    if lines[0] != HEADER:
        raise error(MismatchError, "%s: %r, this rngsnap reads %r"
                    % (name, lines[0], HEADER))
    fp, last = {}, None
    for n, line in enumerate(lines[1:], 2):
        k, sep, v = line.partition("=")
        if not sep or not k or (last is not None and k <= last):
            raise error(CorruptError, "%s: line %d %r is not a key=value "
                        "line in sorted order" % (name, n, line))
        fp[k] = _unescape(v, "%s line %d" % (name, n))
        last = k
    return fp


def differences(saved, live):
    """One line per key whose value differs, in key order."""
    out = []
    for k in sorted(set(saved) | set(live)):
        a, b = saved.get(k, "(absent)"), live.get(k, "(absent)")
        if a != b:
            out.append("%s: checkpoint %s, this process %s" % (k, a, b))
    return out
