"""rt.profile(): kiln's profile table and rows for the calls inside the
`with`, printed only when asked."""
import numpy as np
import pytest

import kiln


def test_profile_table_and_rows(capsys):
    with kiln.Runtime(profile=True) as rt:
        assert rt.profiling
        a = np.ones((32, 48), np.float32)
        rt.gemm(a, a.T.copy())  # before the `with`: not in the table
        with rt.profile() as p:
            d = rt.array(a)
            for _ in range(3):
                rt.gemm(d, a.T.copy())
            rt.reduce(d, "max", axis=0)
        assert capsys.readouterr().out == ""  # nothing printed unless asked
        assert str(p) == p.table
        calls = {r["op"]: r["calls"] for r in p.rows if r["kind"] == "call"}
        assert calls["gemm"] == 3 and calls["reduce.max"] == 1, calls
        assert "gemm" in p.table and "reduce.max" in p.table and "Total" in p.table
        gemm = [r for r in p.rows if r["op"] == "gemm"][0]
        assert gemm["flops"] == 3 * 2 * 32 * 32 * 48 and gemm["backend"]
        with rt.profile(print=True) as q:
            rt.reduce(a)
        out = capsys.readouterr().out
        assert out == q.table and "reduce.sum" in out and "gemm " not in out
        assert [r["op"] for r in rt.profile_rows() if r["kind"] == "call"].count("gemm") == 0


def test_profile_needs_a_recording_runtime(rt):
    if rt.profiling:
        pytest.skip("KILN_PROFILE=1 in the environment")
    with pytest.raises(kiln.UnsupportedError, match="profile=True"):
        rt.profile()
    with pytest.raises(kiln.UnsupportedError):
        rt.profile_rows()
    closed = kiln.Runtime(profile=True)
    closed.close()
    with pytest.raises(kiln.Error, match="closed"):
        closed.profile()
