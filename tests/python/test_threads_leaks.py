"""Draws release the GIL; open/close and save/load cycles do not leak."""
import array
import gc
import os
import sys

import numpy as np

import rngsnap
from conftest import export_held, while_drawing


def test_draw_releases_gil(ctx):
    # This thread runs Python code while the other thread's draw is inside
    # the C call (only then is out= exported, so resizing it is refused):
    # a draw holding the GIL throughout would never be caught there.
    s = ctx.stream("cpu", 0, "default")
    out = array.array("d", bytes(8 << 24))  # 16 Mi normals
    assert while_drawing(lambda: s.generate("normal_f64", out=out),
                         export_held(out))


def _rss_pages():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1])


def _failing_load(b):
    raise ValueError("refused")


def _cycle(path, n):
    ro = np.zeros(4, np.uint32)
    ro.flags.writeable = False
    for i in range(n):
        with rngsnap.Context() as c:
            box = {"v": bytes([i & 255]) * 1000}  # a new object each cycle
            c.register_state("app", save=lambda: box["v"],
                             load=lambda b: box.__setitem__("v", b))
            c.register_state("bad", save=bytes, load=lambda b: box.get(
                "fail") and _failing_load(b))
            c.seed_all(i)
            s = c.stream("cpu", 0, "dropout")
            s.generate("f32", 16)
            s.derive(i, 1).generate("u32", 4, out=np.empty(4, np.uint32))
            c.save(path, replace=True)
            c.load(path)
            # the error paths: a refused buffer, a missing file, a
            # callable's exception chained as the Error's cause
            for bad in (lambda: s.generate("u32", out=ro),
                        lambda: c.load(path + ".missing")):
                try:
                    bad()
                except (TypeError, rngsnap.Error):
                    pass
            box["fail"] = True
            try:
                c.load(path)
            except rngsnap.BackendError as e:
                assert isinstance(e.__cause__, ValueError)


def test_no_leak_over_4000_cycles(tmp_path):
    path = str(tmp_path / "leak.rngsnap")
    _cycle(path, 300)  # warm up: allocator pools, module caches
    gc.collect()
    rss0 = _rss_pages()
    refs0 = getattr(sys, "gettotalrefcount", lambda: 0)()
    _cycle(path, 4000)
    gc.collect()
    grown_kib = (_rss_pages() - rss0) * os.sysconf("SC_PAGE_SIZE") // 1024
    print("RSS growth over 4000 open/save/load/close cycles: %d KiB"
          % grown_kib)
    # One leaked context (plugins, registry, ~10 KiB), app buffer (1 KB),
    # exception or array per cycle would add >= 4 MB over 4000 cycles;
    # allow 1 MiB of allocator noise.
    assert grown_kib < 1024
    if hasattr(sys, "gettotalrefcount"):  # debug builds of Python only
        assert sys.gettotalrefcount() - refs0 < 1000
