"""Draws release the GIL; open/close and save/load cycles do not leak."""
import gc
import os
import sys
import threading
import time

import numpy as np

import rngsnap


def test_draw_releases_gil(ctx):
    s = ctx.stream("cpu", 0, "default")
    out = np.empty(1 << 25, np.float64)  # 256 MiB of normals: ~1 s
    done = threading.Event()
    counter = 0

    def draw():
        s.generate("normal_f64", out=out)
        done.set()

    t = threading.Thread(target=draw)
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    try:
        t.start()
        time.sleep(0.01)  # let the draw begin
        while not done.is_set():
            counter += 1  # pure Python: runs only when the GIL is free
        t.join()
    finally:
        sys.setswitchinterval(old)
    # Holding the GIL for the whole draw would leave at most a few
    # iterations (one switch interval); a released GIL gives millions.
    print("main-thread iterations during the draw:", counter)
    assert counter > 100000


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
