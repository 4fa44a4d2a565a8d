"""Streams and events (kiln_stream, kiln_event) and kiln.tune()."""
import gc

import numpy as np
import pytest

import kiln


def test_streams_and_events(rt):
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (64, 64)).astype(np.float32)
    want = a.astype(np.float64) @ a
    s = rt.stream()
    assert isinstance(s, kiln.Stream)
    start = rt.record_event()
    with s as bound:
        assert bound is s
        d = rt.array(a)           # written on s
        ready = rt.record_event()
    rt.wait_event(ready)          # the runtime's queue waits for s
    c = rt.gemm(d, d)
    end = rt.record_event()
    end.synchronize()
    assert end.query() and ready.query()
    np.testing.assert_allclose(c.numpy(), want, atol=1e-4)
    assert start.elapsed_time(end) >= 0
    s.synchronize()
    with s:
        r = rt.reduce(c, "sum", axis=0)
    s.synchronize()
    np.testing.assert_allclose(r.numpy(), want.sum(axis=0), atol=1e-3)
    del s, start, ready, end, bound
    gc.collect()


def test_event_errors(rt):
    ev = rt.record_event()
    with kiln.Runtime() as other:
        with pytest.raises(kiln.WrongRuntimeError):
            other.wait_event(ev)
    with pytest.raises(kiln.WrongRuntimeError):
        rt.wait_event("not an event")
    with pytest.raises(kiln.WrongRuntimeError):
        ev.elapsed_time(None)


def test_runtime_outlives_its_streams():
    rt = kiln.Runtime()
    s, ev = rt.stream(), rt.record_event()
    rt.close()
    with pytest.raises(kiln.Error, match="closed"):
        s.synchronize()
    del s, ev  # the runtime is destroyed after them
    gc.collect()


def test_tune_progress_and_stop(rt, tmp_path, monkeypatch):
    steps = []

    def progress(step):
        steps.append(step)
        return True  # stop at the first step, keeping what was measured

    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path))  # the record goes there
    with kiln.Runtime() as own:
        try:
            own.tune("reduce", budget=5, progress=progress)
        except kiln.UnsupportedError as e:  # a build without json-c
            assert "json" in str(e)
            return
    assert 1 <= len(steps) <= 2  # the step that stopped, and the kept best's
    step = steps[0]
    assert step["kernel"] and step["count"] >= step["index"] >= 1
    for key in ("candidate", "seconds", "skipped", "best", "elapsed", "left", "kernel_done"):
        assert key in step

    def fails(step):
        raise KeyError("from the callback")

    with kiln.Runtime() as own:
        with pytest.raises(KeyError, match="from the callback"):
            own.tune(["reduce"], budget=5, progress=fails)
        own.synchronize()  # usable after
    with pytest.raises(ValueError, match="names among"):
        rt.tune("everything")
    with pytest.raises(ValueError, match="callable"):
        rt.tune(progress=3)
    with pytest.raises(ValueError, match="budget"):
        rt.tune(budget=-1)
    n = len(steps)
    kiln.tune(what="reduce", budget=5, progress=progress)  # the module's form
    assert n + 1 <= len(steps) <= n + 2
