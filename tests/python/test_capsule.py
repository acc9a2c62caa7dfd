"""The Arrow PyCapsule protocol both ways, against an independent producer
and consumer written in ctypes (arrow_ctypes.py): values equal, zero-copy
where it should be, and every release callback called exactly once."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import quiver
from arrow_ctypes import (ArrayProducer, CountingProducer, SCHEMA, STREAM,
                          capsule_pointer, consume_stream)
from conftest import pins, wait_baseline, wait_until

ROWS = 5000


def columns() -> dict:
    rng = np.random.default_rng(7)
    s = np.array([None if i % 7 == 0 else f"v{i}-é" for i in range(ROWS)], dtype=object)
    return {"i": np.arange(ROWS, dtype=np.int64) * 3,
            "f": rng.random(ROWS),
            "s": s}


def check_columns(t: quiver.Table, cols: dict) -> None:
    assert t.num_rows == len(cols["i"])
    np.testing.assert_array_equal(t.column("i").to_numpy(), cols["i"])
    np.testing.assert_array_equal(t.column("f").to_numpy(), cols["f"])
    got = t.column("s").to_numpy()
    values = [None if m else v for v, m in zip(np.ma.getdata(got), np.ma.getmaskarray(got))]
    assert values == list(cols["s"])


def test_a_table_goes_out_and_comes_back_through_a_second_producer(client, cluster):
    cols = columns()
    client.put("capsule_src", cols, chunk_bytes=1 << 16)
    t = client.get("capsule_src")
    assert t.num_chunks > 1
    # Out: an independent consumer reads quiver's stream, releasing each
    # structure once (it asserts each release marks its structure released).
    read, batches = consume_stream(t.__arrow_c_stream__())
    assert batches == t.num_chunks
    for name in cols:
        assert list(read[name]) == list(cols[name])
    # In: what it read, re-exported by a second producer object.
    producer = CountingProducer(read, batch_rows=777)
    imported = quiver.Table.from_arrow(producer)
    assert imported.equals(t)
    assert imported.num_chunks == -(-ROWS // 777)
    # Zero-copy: the imported int column is the producer's memory, held.
    assert producer.released["stream"] == 1
    assert producer.released["array"] == 0
    del imported
    gc.collect()
    wait_until(producer.all_released, "the producer's releases")
    assert producer.released == producer.exported  # each exactly once
    # And into the cluster through put: released once Load has copied it.
    producer2 = CountingProducer(read, batch_rows=999)
    r = client.put("capsule_back", producer2)
    assert r.rows == ROWS
    assert producer2.all_released() and producer2.released == producer2.exported
    assert client.get("capsule_back").equals(t)
    client.rm("capsule_src")
    client.rm("capsule_back")


def test_quiver_releases_what_it_exported(client, baseline):
    client.put("capsule_pins", {"x": np.arange(100_000)}, nodes=[0])
    t = client.get("capsule_pins")
    capsule = t.__arrow_c_stream__()
    del t
    gc.collect()
    assert pins(client, "capsule_pins") >= 1  # the export holds the chunks
    read, _ = consume_stream(capsule)  # releases everything it got
    del capsule
    gc.collect()
    wait_until(lambda: pins(client, "capsule_pins") == 0, "the export's pins to go")
    np.testing.assert_array_equal(read["x"], np.arange(100_000))
    client.rm("capsule_pins")
    wait_baseline(client, baseline, "the table's memory back")


def test_an_unconsumed_capsule_releases_on_its_own(client):
    client.put("capsule_unused", {"x": np.arange(1000)}, nodes=[0])
    t = client.get("capsule_unused")
    capsules = [t.__arrow_c_stream__(), t.__arrow_c_schema__(), t.schema.__arrow_c_schema__(),
                t.column("x").__arrow_c_stream__(), t.schema[0].type.__arrow_c_schema__()]
    del t
    gc.collect()
    assert pins(client, "capsule_unused") >= 1
    del capsules
    gc.collect()
    wait_until(lambda: pins(client, "capsule_unused") == 0, "pins of dropped capsules")
    client.rm("capsule_unused")


def test_array_capsules_of_a_record_batch(client):
    cols = columns()
    producer = ArrayProducer(cols)
    t = quiver.Table.from_arrow(producer)
    check_columns(t, cols)
    assert producer.released["array"] == 0  # zero-copy: still in use
    client.put("capsule_array", producer)
    check_columns(client.get("capsule_array"), cols)
    del t
    gc.collect()
    wait_until(producer.all_released, "the array producer's releases")
    assert producer.released == producer.exported
    client.rm("capsule_array")


def test_schema_capsules_round_trip(client):
    producer = CountingProducer(columns())
    schema = quiver.Schema.from_arrow(producer)
    assert schema.names == ["i", "f", "s"]
    assert [str(t) for t in schema.types] == ["int64", "double", "string"]
    gc.collect()
    assert producer.all_released()
    ptr = capsule_pointer(schema.__arrow_c_schema__(), SCHEMA)
    assert ptr != 0


def test_requested_schema_is_honoured_or_refused(client):
    client.put("capsule_req", {"a": np.arange(10), "b": np.arange(10.0)})
    t = client.get("capsule_req")
    same = t.__arrow_c_stream__(requested_schema=t.__arrow_c_schema__())
    assert capsule_pointer(same, STREAM)
    read, _ = consume_stream(same)
    np.testing.assert_array_equal(read["a"], np.arange(10))
    other = quiver.Table.from_pydict({"only": np.arange(3)})
    with pytest.raises(quiver.InvalidArgument, match="requested_schema"):
        t.__arrow_c_stream__(requested_schema=other.__arrow_c_schema__())
    with pytest.raises(quiver.InvalidArgument, match="arrow_schema"):
        t.__arrow_c_stream__(requested_schema=t.__arrow_c_stream__())
    client.rm("capsule_req")


def test_a_capsule_is_consumed_once_and_bad_producers_are_refused(client):
    t = quiver.Table.from_pydict({"a": np.arange(5)})
    capsule = t.__arrow_c_stream__()

    class Once:
        def __arrow_c_stream__(self, requested_schema=None):
            return capsule

    assert quiver.Table.from_arrow(Once()).equals(t)
    with pytest.raises(quiver.InvalidArgument, match="consumed already"):
        quiver.Table.from_arrow(Once())

    class Wrong:
        def __arrow_c_stream__(self, requested_schema=None):
            return t.__arrow_c_schema__()

    with pytest.raises(quiver.InvalidArgument, match="arrow_array_stream"):
        quiver.Table.from_arrow(Wrong())
    with pytest.raises(TypeError, match="PyCapsule producer"):
        quiver.Table.from_arrow(42)
    with pytest.raises(TypeError):
        client.put("capsule_bad", object())
    assert "capsule_bad" not in [i.name for i in client.ls()]
