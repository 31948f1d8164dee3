"""Layer context: ctx.save(path, tag=) / ctx.load(path, tag=), tie an
rngsnap file to the job's other file (docs/python.md, "Two files: tie them
with a tag").

The tag is the app state TAG_STATE, registered for that one save or load
only ("RSTA" v1: header, u8 kind (0 int, 1 str), the value's UTF-8 text),
so no format change.  A load with a tag checks it in the state's load
callable: a mismatch fails the C load, which rolls everything back.
"""
from .. import _rngsnap
from .._core import encoding as _enc
from .._core.errors import CorruptError, Error, MismatchError, error

TAG_STATE = "rngsnap.tag"
_MAGIC = b"RSTA"
_WHAT = ("docs/python.md, \"Two files: tie them with a tag\"")


def _check(tag):
    if isinstance(tag, bool) or not isinstance(tag, (int, str)):
        raise TypeError("tag must be an int or a str (e.g. the step), not %s"
                        % type(tag).__name__)


def encode(tag):
    kind = 1 if isinstance(tag, str) else 0
    return _enc.head(_MAGIC) + bytes([kind]) + str(tag).encode()


def decode(data):
    data = bytes(data)
    _enc.check_head(TAG_STATE, data, _MAGIC, (1,))
    body = data[_enc.HEAD_SIZE:]
    if not body or body[0] not in (0, 1):
        raise error(CorruptError, "%s: malformed tag" % TAG_STATE)
    text = body[1:].decode()
    return text if body[0] else int(text)


class _Differs(Exception):
    def __init__(self, saved):
        super().__init__("tag %r" % (saved,))
        self.saved = saved


class Tagged:
    """The tag state, registered for one call (a with block).  check: a
    load that expects tag (compared in the load callable)."""

    def __init__(self, ctx, tag, check=False):
        _check(tag)
        self.ctx, self.tag, self.check = ctx, tag, check

    def _load(self, data):
        saved = decode(data)
        if self.check and saved != self.tag:
            raise _Differs(saved)

    def __enter__(self):
        # The C method: a save's tag is no state of the job, and may be
        # registered after a resumed context's load.
        _rngsnap.Context.register_state(
            self.ctx, TAG_STATE, save=lambda: encode(self.tag),
            load=self._load)
        return self

    def __exit__(self, *exc):
        self.ctx.unregister_state(TAG_STATE)


def _has_tag(e):
    return isinstance(e, MismatchError) and (
        "checkpoint has app state %s," % TAG_STATE) in str(e)


def _lacks_tag(e):
    return isinstance(e, MismatchError) and (
        "context has app state %s (" % TAG_STATE) in str(e)


def _saved_tag(ctx, load, path):
    """The tag a tagged checkpoint holds, read by a load that is refused
    at its tag (so nothing changes); None if that load fails otherwise."""
    probe = Tagged(ctx, 0)
    seen = []

    def record(data):
        seen.append(decode(data))
        raise _Differs(seen[0])
    probe._load = record
    try:
        with probe:
            load(path)
    except Error:
        pass
    return seen[0] if seen else None


def load(ctx, load, path, tag):
    """ctx.load(path, tag=tag) through the C load `load`."""
    call = "ctx.load(%r%s)" % (str(path), "" if tag is None
                               else ", tag=%r" % (tag,))
    if tag is None:
        try:
            return load(path)
        except MismatchError as e:
            if not _has_tag(e):
                raise
            saved = _saved_tag(ctx, load, path)
            raise error(MismatchError, (
                "%s: the checkpoint was saved with tag=%s to pair it with "
                "the job's other file; pass that file's tag, "
                "ctx.load(path, tag=...), so that a pair written at two "
                "different steps is refused; nothing restored")
                % (call, "?" if saved is None else repr(saved))) from None
    with Tagged(ctx, tag, check=True):
        try:
            return load(path)
        except Error as e:
            if isinstance(e.__cause__, _Differs):
                raise error(MismatchError, (
                    "%s: the checkpoint was saved with tag=%r, not %r: it "
                    "and the job's other file were written at different "
                    "steps (the job stopped between its two writes?); "
                    "nothing restored. Resume from a pair written "
                    "together, or keep the RNG state inside the job's own "
                    "file, torch.save({..., \"rng\": ctx.state_dict()}), "
                    "one write, one commit (%s)")
                    % (call, e.__cause__.saved, tag, _WHAT)) from None
            if _lacks_tag(e):
                raise error(MismatchError, (
                    "%s: the checkpoint has no tag (saved by ctx.save() "
                    "without tag=), so nothing ties it to tag=%r; nothing "
                    "restored. Save it with ctx.save(path, replace=True, "
                    "tag=...) to pair it with the job's other file (%s)")
                    % (call, tag, _WHAT)) from None
            raise
