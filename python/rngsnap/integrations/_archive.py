"""Verify a torch.save archive (a zip file) byte by byte before anything
reads it.  torch.load does not check the CRC-32 of the storage records, so
a flipped byte inside a generator state would load silently; here every
member is read in full (zipfile checks its CRC-32), and the zip layout
around the members (local headers, padding, data descriptors, central
directory, end records) is checked field by field, so that a flip in a
header is refused too.  Returns {member name: bytes}; nothing is unpickled.
"""
import os
import struct
import zipfile

from rngsnap import CorruptError, IOFailedError

MAX_FILE = 16 << 20          # an RNG file is ~15 KiB; anything huge is not one
MAX_MEMBER = 4 << 20
_FIXED = {"data.pkl", ".format_version", ".storage_alignment", "byteorder",
          "version", ".data/serialization_id"}
_LOCAL = struct.Struct("<4sHHHHHIIIHH")
_DESC = b"PK\x07\x08"


def _bad(path, what):
    return CorruptError(
        f"rngsnap: {path} is damaged ({what}); it is not the file the "
        f"framework wrote, so nothing was restored: resume from another "
        f"checkpoint, or start without adopting")


def read_archive(path):
    """The verified members of the torch archive at path, keyed by their
    name below the archive's root folder (data.pkl, data/0, ...)."""
    if not os.path.isfile(path):
        raise IOFailedError(
            f"rngsnap: no RNG file {path}: the checkpoint folder lacks the "
            f"framework's RNG file for this process; pass the folder the "
            f"framework saved (and this process's index), or start "
            f"without adopting")
    size = os.path.getsize(path)
    if size > MAX_FILE:
        raise _bad(path, f"{size} bytes, more than an RNG file can hold")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        z = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise _bad(path, f"not a torch archive: {e}") from None
    with z:
        infos = sorted(z.infolist(), key=lambda i: i.header_offset)
        if not infos:
            raise _bad(path, "an empty archive")
        root = infos[0].filename.split("/", 1)[0]
        members = {}
        for info in infos:
            name = info.filename
            if not name.startswith(root + "/"):
                raise _bad(path, f"a record {name!r} outside {root}/")
            rel = name[len(root) + 1:]
            if rel not in _FIXED and not (
                    rel.startswith("data/") and rel[5:].isdigit()):
                raise _bad(path, f"an unexpected record {name!r}")
            if info.file_size > MAX_MEMBER or info.compress_type != 0:
                raise _bad(path, f"record {name!r} is not a stored record "
                                 f"of a bounded size")
            try:
                members[rel] = z.read(info)     # checks the CRC-32
            except (zipfile.BadZipFile, OSError, ValueError,
                    NotImplementedError) as e:
                raise _bad(path, f"record {name!r}: {e}") from None
        if "data.pkl" not in members:
            raise _bad(path, "no data.pkl record")
        _check_layout(path, raw, infos, z.start_dir)
    return members


def _check_layout(path, raw, infos, start_dir):
    """Every byte of the file lies in a checked place: local records back
    to back from offset 0, then the central directory, then the end
    records, with the fields of each copy agreeing."""
    at = 0
    for info in infos:
        if info.header_offset != at:
            raise _bad(path, f"a gap before record {info.filename!r}")
        try:
            (sig, need, flags, method, mtime, mdate, crc, csize, usize,
             nlen, elen) = _LOCAL.unpack_from(raw, at)
        except struct.error:
            raise _bad(path, "a truncated local header") from None
        dostime = (info.date_time[3] << 11 | info.date_time[4] << 5
                   | info.date_time[5] // 2)
        dosdate = ((info.date_time[0] - 1980) << 9 | info.date_time[1] << 5
                   | info.date_time[2])
        if (sig != b"PK\x03\x04" or need != info.extract_version
                or flags != info.flag_bits or method != info.compress_type
                or (mtime, mdate) != (dostime, dosdate)):
            raise _bad(path, f"the local header of {info.filename!r}")
        if flags & 8:
            if (crc, csize, usize) != (0, 0, 0):
                raise _bad(path, f"the local header of {info.filename!r}")
        elif (crc, csize, usize) != (info.CRC, info.compress_size,
                                     info.file_size):
            raise _bad(path, f"the local header of {info.filename!r}")
        at += _LOCAL.size
        if raw[at:at + nlen] != info.filename.encode("utf-8"):
            raise _bad(path, f"the local name of {info.filename!r}")
        at += nlen
        _check_padding(path, info, raw[at:at + elen])
        at += elen + info.compress_size
        if flags & 8:
            at = _check_descriptor(path, info, raw, at)
        if (info.create_version != info.extract_version or info.volume
                or info.internal_attr or info.external_attr
                or info.comment or info.extra or info.reserved):
            raise _bad(path, f"the directory entry of {info.filename!r}")
    if at != start_dir:
        raise _bad(path, "bytes between the records and the directory")
    _check_end(path, raw, infos, start_dir)


def _check_padding(path, info, extra):
    """torch pads each record's data to 64 bytes with one 'FB' extra field
    of 'Z' bytes."""
    if not extra:
        return
    if (len(extra) < 4 or extra[:2] != b"FB"
            or struct.unpack_from("<H", extra, 2)[0] != len(extra) - 4
            or extra[4:].strip(b"Z")):
        raise _bad(path, f"the padding of {info.filename!r}")


def _check_descriptor(path, info, raw, at):
    for fmt in ("<4sIQQ", "<4sIII"):
        n = struct.calcsize(fmt)
        try:
            got = struct.unpack_from(fmt, raw, at)
        except struct.error:
            continue
        if got == (_DESC, info.CRC, info.compress_size, info.file_size):
            return at + n
    raise _bad(path, f"the data descriptor of {info.filename!r}")


def _check_end(path, raw, infos, start_dir):
    """The central directory's size and the end records agree with the
    entries, and the file ends with the end record (no comment)."""
    n = len(infos)
    dir_size = sum(46 + len(i.filename.encode("utf-8")) for i in infos)
    end = start_dir + dir_size
    tail = raw[end:]
    plain = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, n, n, dir_size,
                        start_dir, 0)
    if tail == plain:
        return
    try:
        (sig, rsize, made, need, d1, d2, c1, c2, dsize, doff
         ) = struct.unpack_from("<4sQHHIIQQQQ", tail, 0)
        lsig, ldisk, loff, ltotal = struct.unpack_from("<4sIQI", tail, 56)
    except struct.error:
        raise _bad(path, "truncated end records") from None
    ok = (sig == b"PK\x06\x06" and rsize == 44 and need == 45
          and made & 0xFF == 30 and d1 == d2 == 0 and c1 == c2 == n
          and dsize == dir_size and doff == start_dir
          and lsig == b"PK\x06\x07" and ldisk == 0 and loff == end
          and ltotal == 1)
    last = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF,
                       0xFFFFFFFF, 0xFFFFFFFF, 0)
    last_plain = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, n, n,
                             dir_size, start_dir, 0)
    if not ok or tail[76:] not in (last, last_plain):
        raise _bad(path, "the end records")
