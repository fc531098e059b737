# SPDX-License-Identifier: MIT
"""Buffers: zero-copy views, export/import, lifetimes, errors, stats."""
import errno
import os
import threading
import time

import numpy as np
import pytest
import torch

import syshax
from syshax import ops


def test_open_version(sh):
    assert sh.backend == "daemon"
    v = sh.version()
    assert v["uapi_version"] == syshax.UAPI_VERSION
    assert v["max_refs"] == syshax.JOB_MAX_REFS
    assert v["features"] & syshax.FEAT_JOBS


def test_numpy_view_is_the_memory(sh):
    with sh.alloc(1 << 20) as a, sh.alloc(1 << 20) as b:
        v = a.numpy("float32", (64, 16))
        v[:] = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
        # The same bytes through the library's own mapping of the buffer.
        assert bytes(memoryview(a.raw)[:4096]) == v.tobytes()
        # Through a job: COPY reads the buffer the view wrote.
        (c,) = sh.run(ops.copy(a.ref(0, v.nbytes), b))
        assert c.result == v.nbytes
        np.testing.assert_array_equal(b.numpy("float32", (64, 16)), v)


def test_torch_view_is_the_memory(sh):
    with sh.alloc(1 << 20) as a, sh.alloc(1 << 20) as b:
        t = a.torch(torch.bfloat16, (8, 32))
        t[:] = torch.linspace(-4, 4, 256).reshape(8, 32)
        assert t.data_ptr() == a.addr
        sh.run(ops.copy(a.ref(0, 512), b.ref(0, 512)))
        back = b.torch("bfloat16", (8, 32))
        assert torch.equal(back, t)
        # A job's writes show in an existing view.
        t2 = b.torch(torch.float32, 128, offset=4096)
        sh.run(ops.copy(a.ref(0, 512), b.ref(4096, 512)))
        assert torch.equal(t2.view(torch.int32)[:128],
                           a.torch(torch.int32, 128))


def test_export_import_shares_memory(sh):
    with syshax.open() as other, sh.alloc(1 << 20) as a:
        fd = a.export()
        try:
            with other.import_fd(fd) as b:
                assert b.id == a.id and b.size == a.size
                assert b.addr != a.addr
                a.numpy("int64", 4)[:] = [7, 8, 9, 10]
                assert b.numpy("int64", 4).tolist() == [7, 8, 9, 10]
                b.torch(torch.int64, 1, offset=8)[0] = 42
                assert a.numpy("int64", 4)[1] == 42
        finally:
            os.close(fd)


def test_views_outlive_free_and_close(sh):
    before = sh.stats()["nr_bufs"]
    with syshax.open() as other:
        b = other.alloc(1 << 16)
        v = b.numpy("uint8", 16)
        t = b.torch(torch.uint8, 16)
        v[:] = 3
        assert sh.stats()["nr_bufs"] == before + 1
    # The context closed: the handle is gone, the views still read the
    # (still mapped) memory, and it is unmapped once they go.
    assert b.freed
    assert sh.stats()["nr_bufs"] == before
    assert int(t.sum()) == 48 and int(v.sum()) == 48
    del v, t
    assert b.addr == 0
    with pytest.raises(ValueError):
        b.handle
    with sh.alloc(4096) as c:
        pass
    assert c.freed and sh.stats()["nr_bufs"] == before


def test_errors_carry_errno_and_message(sh):
    with sh.alloc(4096) as a:
        with pytest.raises(syshax.Error) as e:
            sh.submit(ops.copy(a.ref(0, 64), a.ref(1 << 20, 64)))
        assert e.value.errno == errno.ERANGE
        assert syshax.strerror(-errno.ERANGE) in str(e.value)
        assert "syshax_submit" in e.value.strerror
        assert isinstance(e.value, OSError)
        with pytest.raises(syshax.JobError) as e:
            sh.run(ops.ffn(a, a, wset=999999, layer=0, m=1))
        assert isinstance(e.value, FileNotFoundError)
        assert e.value.completion.status == -errno.ENOENT
    with pytest.raises(ValueError, match="freed"):
        sh.run(ops.copy(a, a))
    with pytest.raises(FileNotFoundError) as e:
        syshax.open("/nonexistent/syshaxd.sock", backend="daemon")
    assert isinstance(e.value, syshax.Error)
    assert "/nonexistent/syshaxd.sock" in str(e.value)


def test_params_are_checked_here():
    with pytest.raises(TypeError):
        syshax._syshax.pack("ffn", {"wset": 1, "no_such_field": 2})
    with pytest.raises(OverflowError):
        syshax._syshax.pack("ffn", {"m": 1 << 32})
    with pytest.raises(ValueError):
        syshax._syshax.pack("gemm", {"tensor": "x" * syshax.TENSOR_NAME_MAX})
    p = syshax._syshax.unpack("ffn", syshax._syshax.pack(
        "ffn", {"wset": 5, "layer": 2, "m": 3, "eps": 1e-5}))
    assert (p["wset"], p["layer"], p["m"]) == (5, 2, 3)
    assert abs(p["eps"] - 1e-5) < 1e-12


def test_submit_wait_completions(sh):
    jobs = [ops.nop(user_data=100 + i) for i in range(10)]
    assert sh.submit(jobs) == 10
    got = []
    while len(got) < 10:
        got += sh.wait(min=1, max=10, timeout=10)
    assert sorted(c.user_data for c in got) == list(range(100, 110))
    assert all(isinstance(c, syshax.Completion) and c.ok for c in got)
    with pytest.raises(TimeoutError):
        sh.wait(min=1, timeout=0.01)


def test_close_while_another_thread_waits(sh):
    # close() would free the context under a wait running without the
    # GIL: it refuses with EBUSY until the wait has returned.
    started = threading.Event()
    out = []

    def waiter():
        started.set()
        try:
            sh.wait(min=1, timeout=1.0)
        except TimeoutError as e:
            out.append(e)

    t = threading.Thread(target=waiter)
    t.start()
    started.wait()
    time.sleep(0.2)
    with pytest.raises(OSError) as e:
        sh.close()
    assert e.value.errno == errno.EBUSY
    assert not sh.closed
    t.join()
    assert len(out) == 1
    sh.close()
    assert sh.closed


def test_run_more_jobs_than_the_queue_holds(sh):
    # syshaxd queues at most max_jobs_ctx (1024) jobs of a context: run()
    # reaps completions when SUBMIT says the queue is full, and goes on.
    jobs = [ops.nop() for _ in range(3000)]
    cpls = sh.run(*jobs)
    assert [c.user_data for c in cpls] == [j.user_data for j in jobs]
    assert len(set(c.user_data for c in cpls)) == 3000


def test_stats(sh):
    s0 = sh.stats()
    sh.run(ops.nop(), ops.nop())
    s1 = sh.stats()
    assert s1["jobs_completed"] >= s0["jobs_completed"] + 2
    assert len(s1["lat_hist"]) == 24 and s1["contexts"] >= 1
    me = sh.ctx_stats()[0]
    assert me["pid"] == os.getpid()
    assert me["jobs_submitted"] >= 2


def test_help_is_useful():
    text = syshax.__doc__ + syshax.Context.__doc__ + syshax.ops.__doc__
    for word in ("open", "numpy", "torch", "export", "Completion"):
        assert word in text
    for name in syshax.ops.__all__:
        assert getattr(syshax.ops, name).__doc__
