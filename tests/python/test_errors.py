"""Bad input and bad days: wrong Python types, a full cluster, timeouts,
Ctrl-C during blocking calls, a killed daemon. Each gives the right
exception, leaks nothing (region use back to baseline) and crashes nothing."""

from __future__ import annotations

import gc
import os
import signal
import subprocess

import numpy as np
import pandas as pd
import pytest

import quiver
from conftest import wait_baseline, wait_until


def test_wrong_python_types_raise_type_errors(client, baseline):
    with pytest.raises(TypeError):
        client.put(123, {"a": [1]})
    with pytest.raises(TypeError, match="pandas DataFrame"):
        client.put("x", 42)
    with pytest.raises(TypeError, match="object values of type int"):
        client.put("x", {"a": np.array([1, "two"], dtype=object)})
    with pytest.raises(TypeError, match="value 1 is float, not str"):
        client.put("x", {"a": np.array(["one", 2.5], dtype=object)})
    with pytest.raises(TypeError):
        client.put("x", {"a": np.array([1 + 2j])})
    with pytest.raises(quiver.InvalidArgument, match="2 dimensions"):
        client.put("x", {"a": np.zeros((2, 2))})
    with pytest.raises(quiver.InvalidArgument, match="rows"):
        client.put("x", {"a": [1, 2], "b": [1]})
    with pytest.raises(quiver.InvalidArgument, match="unique"):
        client.put("x", pd.DataFrame([[1, 2]], columns=["a", "a"]))
    with pytest.raises(TypeError):
        client.get(None)
    with pytest.raises(TypeError):
        client.sql(b"SELECT 1")
    with pytest.raises(TypeError, match="ObjectID"):
        client.store.get(["not an id"])
    with pytest.raises(quiver.InvalidArgument):
        quiver.ObjectID(b"short")
    with pytest.raises(ValueError):  # InvalidArgument is a ValueError too
        quiver.ObjectID(b"x" * 21)
    with pytest.raises(TypeError):
        client.store.put(12345)
    with pytest.raises(quiver.NotFound):
        client.get("x")
    t = quiver.Table.from_pydict({"a": [1, 2]})
    with pytest.raises(quiver.NotFound):
        t.column("nope")
    with pytest.raises(IndexError):
        t.column(5)
    assert "x" not in [i.name for i in client.ls()]
    wait_baseline(client, baseline, "nothing left by refused calls")


def test_a_full_cluster_publishes_nothing_and_frees_what_it_wrote(client, baseline):
    # 3 regions of 256 MiB; 800 MB of doubles cannot fit.
    big = {"a": np.zeros(100_000_000, dtype=np.float64)}
    with pytest.raises(quiver.OutOfMemory, match="no node has room"):
        client.put("too_big", big)
    del big
    assert "too_big" not in [i.name for i in client.ls()]
    wait_baseline(client, baseline, "what the failed put wrote")
    with pytest.raises(quiver.OutOfMemory):
        client.store.create(quiver.ObjectID.from_random(), 1 << 30)
    wait_baseline(client, baseline, "the refused object")


def test_timeouts(client):
    missing = [quiver.ObjectID.from_random() for _ in range(5)]
    for timeout in (0, 10, 100):
        assert client.store.get_buffers(missing, timeout_ms=timeout) == [None] * 5
    with pytest.raises(quiver.NotFound, match="never"):
        client.get("never", wait_ms=50)
    sub = client.store.subscribe()
    with pytest.raises(quiver.TimeoutError):
        sub.get_next_notification(timeout_ms=20)
    with pytest.raises(TimeoutError):  # the built-in one too
        sub.get_next_notification(timeout_ms=0)
    with pytest.raises(quiver.NotFound):
        client.store.get_table(missing[0], timeout_ms=20)


INTERRUPTED = """
    import os, signal, sys, quiver, numpy as np
    c = quiver.connect({dir!r}, node=1)
    what = sys.argv[1]
    try:
        # Inside the try: Ctrl-C may come at once, before the call blocks.
        print("waiting", flush=True)
        if what == "store":
            c.store.get([quiver.ObjectID.from_random()], timeout_ms=-1)
        elif what == "table":
            c.get("never_there", wait_ms=-1)
        elif what == "subscribe":
            next(iter(c.store.subscribe()))
        print("returned", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    # The client still works after the interrupt.
    oid = c.store.put(b"after")
    print(bytes(c.store.get(oid, timeout_ms=1000)).decode(), flush=True)
    c.store.delete(oid)
"""


@pytest.mark.parametrize("what", ["store", "table", "subscribe"])
def test_ctrl_c_interrupts_a_blocking_call(cluster, client, baseline, what):
    p = cluster.python(INTERRUPTED.format(dir=cluster.dir), what)
    assert p.stdout.readline().strip() == "waiting"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert out.split() == ["interrupted", "after"]
    wait_baseline(client, baseline, "nothing left by the interrupted call")


def test_ctrl_c_during_a_put_publishes_nothing(cluster, client, baseline):
    # A producer whose second batch waits until the interrupt has been seen
    # (by the handler, which then raises KeyboardInterrupt as Python's own
    # does): the put is reading when Ctrl-C comes, and stops there.
    p = cluster.python(f"""
        import signal, sys, threading, numpy as np, quiver
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from arrow_ctypes import CountingProducer

        seen = threading.Event()

        def on_sigint(signum, frame):
            seen.set()
            raise KeyboardInterrupt

        signal.signal(signal.SIGINT, on_sigint)

        class Slow(CountingProducer):
            def _stream_get_next(self, stream, out):
                if self._next_row > 0 and not seen.is_set():
                    print("reading", flush=True)
                    seen.wait()
                return super()._stream_get_next(stream, out)

        c = quiver.connect({cluster.dir!r}, node=0)
        producer = Slow({{"v": np.arange(1_000_000, dtype=np.int64)}}, batch_rows=50_000)
        try:
            c.put("interrupted_put", producer, chunk_bytes=1 << 20)
            print("published", flush=True)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        print(producer.all_released(), "interrupted_put" in [i.name for i in c.ls()],
              flush=True)
    """)
    assert p.stdout.readline().strip() == "reading"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert out.split() == ["interrupted", "True", "False"]
    wait_baseline(client, baseline, "what the interrupted put wrote")


def test_a_killed_daemon(cluster, client, baseline):
    client.put("on_node_1", {"v": np.arange(1000)}, nodes=[1])
    pid = dict(enumerate(cluster.pids()))[1]
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not any(n.online for n in client.status().nodes if n.node == 1),
               "node 1 to be seen offline")
    with pytest.raises(quiver.Unavailable, match="daemon of node 1 is not running"):
        quiver.connect(cluster.dir, node=1)
    with pytest.raises(quiver.Unavailable):  # ObjectLost / Unavailable name the node
        client.get("on_node_1")
    wait_until(lambda: {i.name: i for i in client.ls()}["on_node_1"].lost,
               "on_node_1 listed as lost")
    info = {i.name: i for i in client.ls()}["on_node_1"]
    assert "node 1" in info.lost_reason
    with pytest.raises(quiver.Error):
        client.put("to_node_1", {"v": [1, 2]}, nodes=[1])
    with pytest.raises(quiver.Error):
        client.store.put(b"x", node=1)
    # The other nodes go on.
    r = client.put("elsewhere", {"v": np.arange(10)})
    assert sorted(r.nodes) == [0]  # the put skipped the node that is down
    # `quiver up` restarts it on its region: the table comes back.
    cluster.up()
    wait_until(lambda: _readable(client), "on_node_1 readable again")
    gc.collect()
    client.rm("on_node_1")
    client.rm("elsewhere")
    wait_baseline(client, baseline, "the tables of the restarted cluster")


def _readable(client) -> bool:
    try:
        return int(client.get("on_node_1").column("v").to_numpy().sum()) == sum(range(1000))
    except quiver.Error:
        return False
