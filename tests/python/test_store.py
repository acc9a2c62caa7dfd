"""The object store from Python: the scenarios of Plasma's own Python test
suite (pyarrow's test_plasma.py) that apply to a cluster-wide store --
create/seal/get/release/delete/contains/evict/subscribe, gets with
timeouts, a client that dies during a get -- plus reads from another node."""

from __future__ import annotations

import gc
import pickle
import random
import signal
import subprocess

import numpy as np
import pandas as pd
import pytest

import quiver
from conftest import wait_baseline, wait_until


def random_metadata(n: int) -> bytes:
    return bytes(random.getrandbits(8) for _ in range(n))


def create(store, size: int, metadata: bytes = b"", oid=None, seal: bool = True):
    oid = oid or quiver.ObjectID.from_random()
    buf = np.frombuffer(store.create(oid, size, metadata), dtype=np.uint8)
    buf[:] = np.arange(size, dtype=np.uint64) % 251
    if seal:
        store.seal(oid)
    return oid, buf.copy()


def cleanup(store) -> None:
    store.drop_cached_pins()
    ids = [i for i, info in store.list().items() if info.state == "sealed"]
    if ids:
        store.delete(ids)


def test_create_seal_get(client, baseline):
    store = client.store
    oid = quiver.ObjectID.from_random()
    view = store.create(oid, 50)
    assert len(view) == 50 and not view.readonly
    for i in range(50):
        view[i] = i
    store.seal(oid)
    with pytest.raises(ValueError):  # the writable view ends with seal
        view[0] = 1
    got = store.get_buffers([oid])[0]
    assert got.readonly and bytes(got) == bytes(range(50))
    with pytest.raises(TypeError):
        got[0] = 7  # read-only
    with pytest.raises(IndexError):
        got[50]
    store.release(oid)
    with pytest.raises(quiver.NotFound, match="not held"):
        store.release(oid)
    del got
    cleanup(store)
    wait_baseline(client, baseline, "objects' memory")


def test_create_with_metadata(client, baseline):
    store = client.store
    for length in range(0, 1000, 97):
        meta = random_metadata(length)
        oid, data = create(store, length, meta)
        assert bytes(store.get_buffers([oid])[0]) == data.tobytes()
        assert bytes(store.get_metadata([oid])[0]) == meta
        (m, d), = store.get_buffers([oid], with_meta=True)
        assert bytes(m) == meta and bytes(d) == data.tobytes()
        del m, d
    cleanup(store)
    wait_baseline(client, baseline, "objects' memory")


def test_create_existing_is_refused_everywhere(cluster, client, baseline):
    store = client.store
    for _ in range(50):
        oid = quiver.ObjectID.from_random()
        store.create(oid, 100, random_metadata(10))
        with pytest.raises(quiver.AlreadyExists):
            store.create(oid, 100)
        store.abort(oid)
    oid, _ = create(store, 64)
    out = cluster.run_python(f"""
        import quiver
        c = quiver.connect({cluster.dir!r}, node=2)
        try:
            c.store.create(quiver.ObjectID.from_hex({oid.hex()!r}), 10)
        except quiver.AlreadyExists:
            print("refused")
    """)
    assert out.strip() == "refused"
    cleanup(store)
    wait_baseline(client, baseline, "objects' memory")


def test_get_with_timeouts(client, baseline):
    store = client.store
    ids = [quiver.ObjectID.from_random() for _ in range(60)]
    for timeout in (0, 10, 100, 1000):
        assert store.get_buffers(ids, timeout_ms=timeout) == [None] * 60
    data = {}
    for i in range(0, 60, 2):
        _, data[i] = create(store, 2000, random_metadata(2000), oid=ids[i])
    for timeout in (0, 10, 100, 1000):
        got = store.get_buffers(ids, timeout_ms=timeout)
        for i in range(60):
            if i % 2 == 0:
                np.testing.assert_array_equal(np.frombuffer(got[i], np.uint8), data[i])
            else:
                assert got[i] is None
        del got
    # A get that waits is answered when the object is sealed.
    late = quiver.ObjectID.from_random()
    buf = store.create(late, 3)
    buf[:] = b"abc"
    assert store.get(late, timeout_ms=0) is None
    store.seal(late)
    assert bytes(store.get(late, timeout_ms=1000)) == b"abc"
    gc.collect()
    cleanup(store)
    wait_baseline(client, baseline, "objects' memory")


def test_buffers_outlive_release_and_delete(client, baseline):
    store = client.store
    oid = store.put(b"x" * 10_000)
    view = store.get(oid)
    store.release(oid)
    store.delete(oid)
    assert not store.contains(oid)
    assert bytes(view) == b"x" * 10_000  # the reader keeps its bytes
    assert client.status().nodes[0].used > baseline[0]
    del view
    gc.collect()
    wait_baseline(client, baseline, "a deleted object's memory after its last view")


def test_release_of_a_list(client, baseline):
    store = client.store
    ids = [store.put(bytes([i]) * 100) for i in range(50)]
    views = store.get(ids, timeout_ms=0)
    again = store.get(ids[:10], timeout_ms=0)  # two references of the first ten
    store.release(ids)
    store.delete(ids)
    # The views still read their bytes; the second references are still held.
    assert [bytes(v) for v in views] == [bytes([i]) * 100 for i in range(50)]
    missing = quiver.ObjectID.from_random()
    with pytest.raises(quiver.NotFound, match=missing.hex()):
        store.release(ids[:10] + [missing])  # the ten go, the unknown one is named
    with pytest.raises(quiver.NotFound, match=ids[0].hex()):
        store.release([ids[0]])  # no reference left
    with pytest.raises(TypeError):
        store.release([ids[0], 7])
    del views, again
    gc.collect()
    store.drop_cached_pins()
    wait_baseline(client, baseline, "released objects' memory after their views")


def test_put_and_get_of_bytes_and_buffers(client, baseline):
    store = client.store
    for value in (b"", b"hello", bytearray(b"world"), np.arange(100_000, dtype=np.int64),
                  memoryview(b"z" * 200_000)):
        oid = store.put(value)
        got = store.get(oid, timeout_ms=0)
        assert bytes(got) == bytes(memoryview(value).cast("B"))
        del got
    assert store.get(quiver.ObjectID.from_random(), timeout_ms=0) is None
    named = quiver.ObjectID.from_name("features")
    assert named == quiver.ObjectID.from_name("features")
    store.put(b"named", object_id=named, metadata=b"v1")
    assert bytes(store.get_metadata([named], timeout_ms=0)[0]) == b"v1"
    gc.collect()
    cleanup(store)
    wait_baseline(client, baseline, "objects' memory")


def test_tables_in_the_store(cluster, client, baseline):
    store = client.store
    df = pd.DataFrame({"one": [1.0, 2.0, 3.0], "two": ["a", "b", None],
                       "n": pd.array([1, None, 3], dtype="Int64")})
    oid = quiver.ObjectID.from_random()
    layout = store.put_table(oid, df)
    assert layout.bytes > 0 and layout.parts == []
    pd.testing.assert_frame_equal(store.get_table(oid).to_pandas(), df)
    out = cluster.run_python(f"""
        import quiver
        c = quiver.connect({cluster.dir!r}, node=1)
        t = c.store.get_table(quiver.ObjectID.from_hex({oid.hex()!r}), timeout_ms=1000)
        print(t.num_rows, t.column("two").to_numpy()[1])
    """)
    assert out.split() == ["3", "b"]
    # Parts over several nodes, read back whole and zero-copy.
    # Bigger than any region: parts over several nodes.
    big = {"v": np.arange(40_000_000, dtype=np.int64)}
    big_id = quiver.ObjectID.from_random()
    layout = store.put_table(big_id, big, part_bytes=32 << 20)
    assert len(layout.parts) > 1 and len(set(layout.part_homes)) > 1
    t = store.get_table(big_id)
    np.testing.assert_array_equal(t.column("v").to_numpy(), big["v"])
    del t
    gc.collect()
    store.delete_table(big_id)
    store.delete_table(oid)
    cleanup(store)
    wait_baseline(client, baseline, "tables' memory")


def test_object_ids():
    oid = quiver.ObjectID.from_random()
    assert pickle.loads(pickle.dumps(oid)) == oid
    assert quiver.ObjectID(20 * b"0") == quiver.ObjectID(20 * b"0")
    assert quiver.ObjectID(20 * b"0") != quiver.ObjectID(19 * b"0" + b"1")
    assert quiver.ObjectID(20 * b"0") != "foo"
    assert len({quiver.ObjectID(20 * b"0"), quiver.ObjectID(20 * b"0")}) == 1
    assert quiver.ObjectID.from_hex(oid.hex()) == oid and len(oid.binary()) == 20
    with pytest.raises(ValueError):
        quiver.ObjectID(b"hello")


def test_store_full(client, baseline):
    store = client.store
    size = client.status().nodes[0].region_size
    held = []
    oid, _ = create(store, size // 2)
    held.append(store.get(oid))
    # Half a region left here, and the others' regions: an object bigger than
    # any region's room cannot be made anywhere.
    with pytest.raises(quiver.OutOfMemory):
        store.create(quiver.ObjectID.from_random(), size)
    with pytest.raises(quiver.OutOfMemory):
        store.create(quiver.ObjectID.from_random(), size // 2 + (1 << 20), node=0)
    del held
    gc.collect()
    cleanup(store)
    wait_baseline(client, baseline, "objects' memory")


def test_contains_list_and_delete(client, baseline):
    store = client.store
    fake = [quiver.ObjectID.from_random() for _ in range(20)]
    real = []
    for _ in range(20):
        oid = quiver.ObjectID.from_random()
        assert not store.contains(oid)
        store.create(oid, 100)
        assert not store.contains(oid)  # not sealed yet
        store.seal(oid)
        assert store.contains(oid)
        real.append(oid)
    assert not any(store.contains(o) for o in fake)
    listed = store.list()
    assert all(listed[o].state == "sealed" and listed[o].data_size == 100 for o in real)
    store.delete(real)
    assert not any(store.contains(o) for o in real)
    with pytest.raises(quiver.NotFound):
        store.delete(fake[:1])
    wait_baseline(client, baseline, "deleted objects' memory")


def test_evict(client, baseline):
    store = client.store
    cleanup(store)
    oid1, _ = create(store, 1000)
    assert store.evict(1) >= 1000
    assert not store.contains(oid1)
    oid2 = quiver.ObjectID.from_random()
    b2 = store.create(oid2, 999)  # being created: never evicted
    oid3, _ = create(store, 998)
    assert store.evict(1000) >= 998
    assert not store.contains(oid3)
    oid4, _ = create(store, 997)
    got = store.get(oid4)
    store.release(oid4)  # the view still pins it: never evicted
    del b2
    store.seal(oid2)
    assert store.evict(1) >= 999
    assert not store.contains(oid2) and store.contains(oid4)
    del got
    gc.collect()
    assert store.evict(1) >= 997
    ids = [create(store, n)[0] for n in (996, 995, 994)]
    assert store.evict(2000) >= 996 + 995 + 994
    assert not any(store.contains(o) for o in ids)
    wait_baseline(client, baseline, "evicted objects' memory")


def test_the_views_of_one_get_give_back_their_references_one_by_one(client, baseline):
    # One get's views share one exporter, yet each view gives back its own
    # object's Get reference when it goes; the batch's buffers share one pin
    # (docs/store.md), which goes with the last of them.
    store = client.store
    cleanup(store)
    a = store.put(b"a" * 4000)
    b = store.put(b"b" * 4000)
    va, vb = store.get([a, b])
    with pytest.raises(BufferError, match="only views"):
        memoryview(va.obj)  # the exporter hands out no views but get's
    del va
    gc.collect()
    with pytest.raises(quiver.NotFound, match=a.hex()):
        store.release(a)  # its view took its reference back with it
    store.release(b)  # vb's is still there
    assert bytes(vb) == b"b" * 4000
    assert store.evict(1) == 0  # vb pins the batch
    del vb
    gc.collect()
    assert store.evict(8000) >= 8000
    assert not store.contains(a) and not store.contains(b)
    wait_baseline(client, baseline, "a batch's memory after its last view")


def test_subscribe(client, baseline):
    store = client.store
    sub = store.subscribe()
    for n in (1, 10, 100):
        ids = [quiver.ObjectID.from_random() for _ in range(n)]
        sizes = [(random.randint(0, 999), random.randint(0, 999)) for _ in range(n)]
        for oid, (d, m) in zip(ids, sizes):
            store.create(oid, d, random_metadata(m))
            store.seal(oid)
        for oid, (d, m) in zip(ids, sizes):
            assert sub.get_next_notification(timeout_ms=10_000) == (oid, d, m)
        # Deletions come as Plasma's: sizes -1.
        store.delete(ids)
        seen = {sub.get_next_notification(timeout_ms=10_000) for _ in ids}
        assert seen == {(oid, -1, -1) for oid in ids}
    # Events of other nodes, through the iterator.
    oid = store.put(b"remote", node=2)
    event = next(iter(sub))
    assert (event.kind, event.object_id, event.home, event.data_size) == ("sealed", oid, 2, 6)
    store.delete(oid)
    assert next(iter(sub)).kind == "deleted"
    # A cursor resumes where it was.
    resumed = store.subscribe(sub.cursor)
    assert resumed.poll(0) == []
    wait_baseline(client, baseline, "objects' memory")


def test_abort_and_a_view_still_exported(client, baseline):
    store = client.store
    oid = quiver.ObjectID.from_random()
    arr = np.frombuffer(store.create(oid, 100), dtype=np.uint8)
    with pytest.raises(quiver.InvalidArgument, match="still exported"):
        store.abort(oid)
    del arr
    store.abort(oid)
    assert not store.contains(oid)
    store.create(oid, 10)  # the id is free again
    store.abort(oid)
    wait_baseline(client, baseline, "aborted objects' memory")


def test_client_death_during_get(cluster, client, baseline):
    oid = quiver.ObjectID.from_random()
    p = cluster.python(f"""
        import quiver
        c = quiver.connect({cluster.dir!r}, node=1)
        print("waiting", flush=True)
        c.store.get(quiver.ObjectID.from_hex({oid.hex()!r}), timeout_ms=-1)
    """)
    assert p.stdout.readline().strip() == "waiting"
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    # The store goes on: the id is created, sealed and got as if nothing was.
    buf = client.store.create(oid, 4)
    buf[:] = b"live"
    client.store.seal(oid)
    assert bytes(client.store.get(oid, timeout_ms=1000)) == b"live"
    gc.collect()
    cleanup(client.store)
    wait_baseline(client, baseline, "objects' memory")


def test_zero_copy_reads_from_another_node(cluster, client, baseline):
    store = client.store
    data = np.random.default_rng(3).integers(0, 255, 1 << 20, dtype=np.uint8)
    oid = store.put(data, node=0)
    out = cluster.run_python(f"""
        import numpy as np, quiver, hashlib
        c = quiver.connect({cluster.dir!r}, node=2)
        view = c.store.get(quiver.ObjectID.from_hex({oid.hex()!r}), timeout_ms=1000)
        a = np.frombuffer(view, dtype=np.uint8)
        p = a.__array_interface__["data"][0]
        print(any(r.contains(p, len(a)) for r in c.regions), hashlib.sha1(view).hexdigest())
    """)
    import hashlib

    inside, digest = out.split()
    assert inside == "True" and digest == hashlib.sha1(data).hexdigest()
    cleanup(store)
    wait_baseline(client, baseline, "objects' memory")


def test_many_threads_and_a_subscriber_process(cluster, client, baseline):
    """Objects put here appear, in order, to a subscriber on another node."""
    p = cluster.python(f"""
        import quiver, sys
        c = quiver.connect({cluster.dir!r}, node=2)
        sub = c.store.subscribe()
        print("subscribed", flush=True)
        n = 0
        for event in sub:
            if event.kind == "sealed":
                n += 1
            if n == 25:
                break
        print(n, flush=True)
    """, stdin=subprocess.PIPE)
    assert p.stdout.readline().strip() == "subscribed"
    ids = [client.store.put(b"%d" % i) for i in range(25)]
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert out.strip() == "25"
    client.store.delete(ids)
    wait_until(lambda: not any(client.store.contains(i) for i in ids), "deleted")
    wait_baseline(client, baseline, "objects' memory")
