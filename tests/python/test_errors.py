"""Every error class from a failing C call, with the library's message."""
import os

import numpy as np
import pytest

import rngsnap


def _save(ctx, path):
    ctx.save(str(path))
    return path


def test_hierarchy():
    for name in ("ConfigError", "PluginError", "UnavailableError",
                 "IOFailedError", "ExistsError", "CorruptError",
                 "MismatchError", "OrderError", "InvalidError",
                 "NoMemoryError", "BackendError", "DurabilityError"):
        assert issubclass(getattr(rngsnap, name), rngsnap.Error)


def test_config_error_names_file(tmp_path):
    ini = tmp_path / "rng.ini"
    ini.write_text("[backend.cpu]\nthis line has no equals sign\n")
    with pytest.raises(rngsnap.ConfigError) as e:
        rngsnap.Context(str(ini))
    assert e.value.code == 1 and e.value.name == "RNGSNAP_E_CONFIG"
    assert str(ini) + ":2:" in str(e.value)


def test_default_config_origin_named(tmp_path, monkeypatch):
    missing = tmp_path / "none.ini"
    monkeypatch.setenv("RNGSNAP_CONFIG", str(missing))
    assert rngsnap.find_config() == (str(missing), "RNGSNAP_CONFIG")
    with pytest.raises(rngsnap.ConfigError) as e:
        rngsnap.Context()
    assert e.value.name == "RNGSNAP_E_CONFIG"
    assert str(missing) in str(e.value)
    assert "set by RNGSNAP_CONFIG" in str(e.value)


def test_exists_and_corrupt(ctx, tmp_path):
    path = _save(ctx, tmp_path / "a.rngsnap")
    with pytest.raises(rngsnap.ExistsError) as e:
        ctx.save(str(path))
    assert e.value.code == 5 and str(path) in str(e.value)
    ctx.save(path, replace=True)  # PathLike accepted
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    bad = tmp_path / "bad.rngsnap"
    bad.write_bytes(bytes(data))
    s = ctx.stream("cpu", 0, "default")
    before = s.position()
    with pytest.raises(rngsnap.CorruptError) as e:
        ctx.load(bad)
    assert e.value.code == 6 and e.value.name == "RNGSNAP_E_CORRUPT"
    assert str(bad) in str(e.value)
    assert s.position() == before


def test_mismatch_names_section(ctx, tmp_path):
    ctx.register_state("sampler", save=lambda: b"x", load=lambda b: None)
    path = _save(ctx, tmp_path / "a.rngsnap")
    other = rngsnap.Context()
    s = other.stream("cpu", 0, "default")
    other.seed_all(5)
    before = s.position()
    with pytest.raises(rngsnap.MismatchError) as e:
        other.load(path)
    assert e.value.code == 7 and e.value.name == "RNGSNAP_E_MISMATCH"
    assert "sampler" in str(e.value)
    assert s.position() == before
    other.close()


def test_device_count_mismatch_in_admin_terms(tmp_path, monkeypatch):
    """Resumed where the backend has another number of devices: the
    library's own words (issue 16), nothing restored."""
    monkeypatch.delenv("RNGSNAP_NO_EMULATION", raising=False)
    plugins = os.path.join(os.environ["RNGSNAP_BUILD_ROOT"], "plugins")

    def ini(name, devices):
        p = tmp_path / name
        p.write_text(f"[rngsnap]\nplugin_dir = {plugins}\n"
                     "[backend.cuda]\nplugin = rngsnap_cuda\n"
                     f"emulate_devices = {devices}\n")
        return str(p)

    two, four = ini("two.ini", 2), ini("four.ini", 4)
    path = str(tmp_path / "two.rngsnap")
    with rngsnap.Context(two) as c:
        c.seed_all(3)
        c.save(path)
    with rngsnap.Context(four) as c:
        c.seed_all(4)
        s = c.stream("cuda", 3, "default")
        before = s.position()
        with pytest.raises(rngsnap.MismatchError) as e:
            c.load(path)
        assert s.position() == before
    assert str(e.value) == (
        f"{path}: the checkpoint has 2 cuda devices and this configuration "
        f"4 (emulate_devices = 4 at {four}:5); nothing restored "
        f"(configuration {four}). Resume where the same devices are present "
        "as where the checkpoint was written; "
        f"'rngsnap inspect {path}' shows what the checkpoint holds")


def test_order_error_before_load_and_seed_after(ctx, tmp_path):
    path = _save(ctx, tmp_path / "a.rngsnap")
    with rngsnap.Context(resume=True) as r:
        s = r.stream("cpu", 0, "dropout")
        for call in (lambda: s.generate("u32", 1),
                     lambda: s.generate("u32", out=np.zeros(1, np.uint32)),
                     lambda: s.reserve(1), lambda: s.derive(1, 2)):
            with pytest.raises(rngsnap.OrderError) as e:
                call()
            assert e.value.code == 8 and e.value.name == "RNGSNAP_E_ORDER"
            assert "cpu:0/dropout" in str(e.value)
        r.load(path)
        s.generate("u32", 1)
        with pytest.raises(rngsnap.OrderError):
            r.seed_all(1)


def test_io_error(ctx, tmp_path):
    with pytest.raises(rngsnap.IOFailedError) as e:
        ctx.load(tmp_path / "missing.rngsnap")
    assert e.value.code == 4 and "missing.rngsnap" in str(e.value)


def test_closed_context(tmp_path):
    c = rngsnap.Context()
    c.seed_all(1)
    s = c.stream("cpu", 0, "default")
    k = s.derive(1, 1)
    c.close()
    assert c.closed
    for call in (lambda: c.seed_all(1), lambda: c.save(tmp_path / "x"),
                 lambda: c.load(tmp_path / "x"), lambda: c.stream("cpu"),
                 lambda: s.generate("u32", 1), lambda: s.position(),
                 lambda: k.generate("u32", 1),
                 lambda: c.register_state("a", save=bytes, load=print)):
        with pytest.raises(rngsnap.Error, match="closed") as e:
            call()
        assert e.value.name == "RNGSNAP_E_INVALID"
    c.close()  # twice is fine
    with pytest.raises(rngsnap.Error, match="closed"):
        with c:
            pass


def test_stream_keeps_context_alive():
    c = rngsnap.Context()
    c.seed_all(1)
    s = c.stream("cpu", 0, "default")
    del c  # the stream is the only reference left
    assert s.generate("u32", 3).shape == (3,)
