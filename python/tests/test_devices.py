"""kiln.devices(), kiln.Runtime's device, why and life, and the errors."""
import json
import os
import re
import subprocess

import numpy as np
import pytest

import kiln


def test_devices_are_dicts():
    devs = kiln.devices()
    assert isinstance(devs, list) and devs
    for i, d in enumerate(devs):
        assert d["index"] == i
        assert isinstance(d["name"], str) and d["name"]
        assert d["type"] in ("gpu", "cpu", "accelerator", "other")
        assert d["global_mem_bytes"] > 0 and d["max_alloc_bytes"] > 0
        assert isinstance(d["has_fp64"], bool)
        assert d["properties"]["CL_DEVICE_NAME"] == d["name"]
        assert isinstance(d["rank_reasons"], str) and d["rank_reasons"]


@pytest.mark.skipif("KILN_EXE" not in os.environ, reason="KILN_EXE not set")
def test_devices_match_kiln_info_json():
    out = subprocess.run([os.environ["KILN_EXE"], "info", "--json"], check=True,
                         capture_output=True, text=True).stdout
    info = json.loads(out)
    listed = [(p["index"], d["index"], d["properties"]["CL_DEVICE_NAME"]["raw"])
              for p in info["platforms"] for d in p["devices"]]
    ours = [(d["platform_index"], d["device_index"], d["name"]) for d in kiln.devices()]
    assert ours == listed
    for d in kiln.devices():
        dev = next(x for p in info["platforms"] if p["index"] == d["platform_index"]
                   for x in p["devices"] if x["index"] == d["device_index"])
        assert d["properties"]["CL_DEVICE_GLOBAL_MEM_SIZE"] == \
            dev["properties"]["CL_DEVICE_GLOBAL_MEM_SIZE"]["raw"]


def test_runtime_device_and_why():
    with kiln.Runtime() as rt:
        d = rt.device
        assert d["name"] in [x["name"] for x in kiln.devices()]
        assert d["rank_reasons"] in rt.why
        assert isinstance(rt.diagnostics, str)
        assert not rt.closed
    assert rt.closed


def test_runtime_by_index_and_selector():
    with kiln.Runtime(device=0) as rt:
        assert rt.device["name"]
        assert "picked" in rt.why  # the selector's line, then the device
    with pytest.raises(kiln.InvalidDeviceSelectorError) as e:
        kiln.Runtime(device="name=no-such-device-anywhere")
    assert "no-such-device-anywhere" in str(e.value)
    assert isinstance(e.value, ValueError)
    with pytest.raises(TypeError):
        kiln.Runtime(device=1.5)


def test_closed_runtime_raises():
    rt = kiln.Runtime()
    x = rt.array(np.ones(4, np.float32))
    rt.close()
    rt.close()  # twice is fine
    for call in (lambda: rt.array(np.ones(3)), lambda: rt.gemm(np.ones((2, 2)), np.ones((2, 2))),
                 lambda: rt.reduce(np.ones(3)), rt.memory_stats, rt.empty_cache,
                 lambda: rt.device, lambda: rt.why, x.numpy):
        with pytest.raises(kiln.Error, match="closed"):
            call()
    del x  # the last array: the runtime is destroyed now


def test_memory_limit():
    with kiln.Runtime(memory_limit=1 << 20) as rt:
        assert rt.memory_stats()["limit_bytes"] == 1 << 20
        with pytest.raises(kiln.OutOfMemoryError) as e:
            rt.array(np.zeros(1 << 20, np.float32))  # 4 MiB
        assert isinstance(e.value, MemoryError)
        assert str(e.value)  # kiln's message
        rt.array(np.zeros(1000, np.float32))  # usable after
    with kiln.Runtime(memory_limit=0.5) as rt:
        assert rt.memory_stats()["limit_bytes"] <= rt.device["global_mem_bytes"] // 2 + 1
    for bad in (0, -1, 1.5, "1G"):
        with pytest.raises((ValueError, TypeError)):
            kiln.Runtime(memory_limit=bad)


def header_statuses():
    """The statuses of KILN_STATUS_MAP, read from kiln.h (when the tests
    know the source tree), else from the module's classes."""
    root = os.environ.get("KILN_SOURCE_ROOT")
    if not root:
        pytest.skip("KILN_SOURCE_ROOT not set")
    text = open(os.path.join(root, "include", "kiln", "kiln.h")).read()
    block = text[text.index("#define KILN_STATUS_MAP"):]
    block = block[:block.index("typedef enum kiln_status")]
    return {int(v): n for n, v in re.findall(r"XX\((\w+),\s*(-?\d+)", block)}


def test_one_class_per_status():
    statuses = header_statuses()
    classes = [getattr(kiln, n) for n in dir(kiln)
               if isinstance(getattr(kiln, n), type) and issubclass(getattr(kiln, n), kiln.Error)
               and getattr(kiln, n) is not kiln.Error]
    assert sorted(c.status for c in classes) == sorted(v for v in statuses if v != 0)
    import builtins
    assert len({c.status for c in classes}) == len(classes)  # one class a status
    for c in classes:
        assert c.status_name == statuses[c.status]
        assert not hasattr(builtins, c.__name__), c  # shadows no builtin
        assert getattr(kiln, c.__name__) is c
        assert c.__module__ == "kiln"
        assert c.__doc__
    assert issubclass(kiln.OutOfHostMemoryError, kiln.OutOfMemoryError)
    assert issubclass(kiln.InvalidDtypeError, TypeError)
    assert issubclass(kiln.InvalidArgumentError, ValueError)
    assert issubclass(kiln.Error, RuntimeError)
    assert issubclass(kiln.SizeOverflowError, kiln.Error)
    assert issubclass(kiln.SizeOverflowError, OverflowError)
    assert kiln.SizeOverflowError.status_name == "ERR_OVERFLOW"
    assert kiln.__dict__.get("OverflowError") is None
