"""How long what Python holds stays pinned: as long as any object refers to
it (a numpy view after its Table and Client are gone), until the process
dies (SIGKILL), and never in a forked child's hands; threads sharing one
Client."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import threading

import numpy as np
import pytest

import quiver
from conftest import pins, wait_baseline, wait_until


def test_a_numpy_view_keeps_the_pin_after_table_and_client_are_gone(cluster, client,
                                                                   baseline):
    client.put("held", {"v": np.arange(500_000, dtype=np.int64)}, nodes=[0])
    other = quiver.connect(cluster.dir, node=0)
    t = other.get("held")
    col = t.column("v")
    arr = col.to_numpy()
    series = t.to_pandas()["v"]
    assert pins(client, "held") >= 1
    del t, col
    other.close()
    del other
    gc.collect()
    # Unpublished too: only the views hold the memory now.
    client.rm("held")
    assert client.status().nodes[0].used > baseline[0]
    np.testing.assert_array_equal(arr, np.arange(500_000))
    assert isinstance(arr.base, object) and arr.base is not None
    del arr
    gc.collect()
    assert client.status().nodes[0].used > baseline[0]  # the Series still holds it
    assert series.iloc[-1] == 499_999
    del series
    gc.collect()
    wait_baseline(client, baseline, "the memory of the last view's table")


def test_pins_go_when_the_last_view_goes(client, baseline):
    client.put("views", {"v": np.arange(1000)}, nodes=[0])
    t = client.get("views")
    a = t.column("v").to_numpy()
    b = a[10:20]  # a view of a view
    del t, a
    gc.collect()
    assert pins(client, "views") >= 1
    del b
    gc.collect()
    wait_until(lambda: pins(client, "views") == 0, "pins of views")
    client.rm("views")
    wait_baseline(client, baseline, "views' memory back")


def test_a_sigkilled_reader_leaves_no_pin(cluster, client, baseline):
    client.put("victim", {"v": np.arange(100_000)}, nodes=[0])
    p = cluster.python(f"""
        import quiver, sys
        c = quiver.connect({cluster.dir!r}, node=1)
        arr = c.get("victim").column("v").to_numpy()
        print(int(arr.sum()), flush=True)
        sys.stdin.readline()
    """, stdin=subprocess.PIPE)
    assert int(p.stdout.readline()) == sum(range(100_000))
    wait_until(lambda: pins(client, "victim") >= 1, "the reader's pin")
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    wait_until(lambda: pins(client, "victim") == 0, "the killed reader's pin to go")
    client.rm("victim")
    wait_baseline(client, baseline, "victim's memory back")


def test_a_forked_child_cannot_use_the_parents_client(cluster, client, baseline):
    client.put("forked", {"v": np.arange(10)}, nodes=[0])
    t = client.get("forked")
    store = client.store
    oid = store.put(b"parent's")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, never raise out of here
        os.close(r)
        lines = []
        try:
            for what, call in (("get", lambda: client.get("forked")),
                               ("ls", client.ls),
                               ("store", lambda: client.store.get(oid, timeout_ms=0)),
                               ("table", lambda: t.column("v").to_numpy())):
                try:
                    call()
                    lines.append(f"{what}: no error")
                except quiver.ClosedError as e:
                    lines.append(f"{what}: ClosedError {'fork' in str(e)}")
            fresh = quiver.connect(cluster.dir, node=0)
            lines.append("fresh: %d" % fresh.get("forked").column("v").to_numpy().sum())
            fresh.close()
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            lines.append(f"error: {type(e).__name__}: {e}")
        os.write(w, "\n".join(lines).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        report = f.read().splitlines()
    _, status = os.waitpid(pid, 0)
    assert status == 0
    assert report == ["get: ClosedError True", "ls: ClosedError True",
                      "store: ClosedError True", "table: ClosedError True", "fresh: 45"]
    # The parent's client and what it holds are untouched.
    assert t.column("v").to_numpy().sum() == 45
    assert bytes(store.get(oid, timeout_ms=0)) == b"parent's"
    store.delete(oid)
    del t
    client.rm("forked")
    wait_baseline(client, baseline, "forked's memory back")


def test_one_client_from_several_threads(client, baseline):
    client.put("shared", {"v": np.arange(100_000, dtype=np.int64)})
    expected = sum(range(100_000))
    errors: list = []

    def reader() -> None:
        try:
            for _ in range(20):
                assert int(client.get("shared").column("v").to_numpy().sum()) == expected
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    def writer(k: int) -> None:
        try:
            for i in range(20):
                data = f"thread {k} object {i}".encode()
                oid = client.store.put(data)
                assert bytes(client.store.get(oid, timeout_ms=1000)) == data
                client.store.delete(oid)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    threads += [threading.Thread(target=writer, args=(k,)) for k in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    client.rm("shared")
    wait_baseline(client, baseline, "shared's memory back")


def test_close_ends_a_wait_in_another_thread(cluster, baseline):
    c = quiver.connect(cluster.dir, node=0)
    c.put("before_close", {"v": np.arange(100)}, nodes=[0])
    t = c.get("before_close")
    raised: list = []
    waiting = threading.Event()

    def wait_forever() -> None:
        waiting.set()
        try:
            c.get("never_published", wait_ms=-1)
        except BaseException as e:  # noqa: BLE001
            raised.append(e)

    th = threading.Thread(target=wait_forever)
    th.start()
    waiting.wait()
    c.close()
    th.join(timeout=60)
    assert not th.is_alive()
    assert len(raised) == 1 and isinstance(raised[0], quiver.ClosedError)
    assert c.closed
    with pytest.raises(quiver.ClosedError, match="closed"):
        c.ls()
    with pytest.raises(quiver.ClosedError):
        c.store.put(b"x")
    c.close()  # idempotent
    # What was got stays valid after close.
    assert t.column("v").to_numpy().sum() == sum(range(100))
    del t
    gc.collect()
    other = quiver.connect(cluster.dir, node=0)
    other.rm("before_close")
    wait_baseline(other, baseline, "before_close's memory back")
    other.close()
