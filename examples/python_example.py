"""Quiver from Python, end to end (docs/python.md).

Run against a cluster `quiver up` started (it finds it as the command line
does: --dir, $QUIVER_DIR, $XDG_RUNTIME_DIR/quiver, /tmp/quiver-UID):

    ./quiver up --nodes 3 --size 256M
    PYTHONPATH=build/release/python python3 examples/python_example.py
    ./quiver down

1. a pandas DataFrame goes into cluster memory once, spread over the nodes;
2. a process of node 2 reads a column as a numpy array: no copy, the array's
   memory is the very memory node 0 wrote, pinned while the array lives;
3. DuckDB SQL over the published table, into pandas;
4. Plasma's object store: bytes in, a zero-copy memoryview out.
"""

from __future__ import annotations

import multiprocessing

import numpy as np
import pandas as pd

import quiver


def read_on_node_2(name: str, column: str) -> tuple:
    """In a process of node 2: the column's sum, and whether every chunk's
    numpy array is a view of cluster memory (a table spread over the nodes
    has a chunk per piece; Column.to_numpy() of several chunks would copy
    them into one array)."""
    with quiver.connect(node=2) as client:
        total, in_cluster = 0.0, True
        for chunk in client.get(name).column(column).chunks:
            values = chunk.to_numpy(zero_copy_only=True)  # raises rather than copy
            address = values.__array_interface__["data"][0]
            in_cluster &= any(r.contains(address, values.nbytes) for r in client.regions)
            total += float(values.sum())
        return total, in_cluster


def main() -> None:
    client = quiver.connect()  # a client of the first node whose daemon runs
    rows = 1_000_000
    df = pd.DataFrame({
        "id": np.arange(rows),
        "k": np.arange(rows) % 10,
        "price": np.random.default_rng(0).random(rows) * 100,
        "label": pd.Categorical(np.array(["low", "mid", "high"])[np.arange(rows) % 3]),
    })

    # 1. pandas in: written once into chunks over every node, then published.
    put = client.put("prices", df, chunk_bytes=4 << 20)
    print(f"put {put.name}: {put.rows} rows, {put.bytes / 2**20:.1f} MiB in {put.chunks} "
          f"chunks on nodes {put.nodes}")

    # 2. numpy out, in a process of another node, zero-copy.
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        total, in_cluster = pool.apply(read_on_node_2, ("prices", "price"))
    assert in_cluster, "the numpy array should be a view of cluster memory"
    assert abs(total - df["price"].sum()) < 1e-6 * abs(total)
    print(f"node 2 summed price zero-copy: {total:.2f}")

    # And here: a table whose buffers are the ones in cluster memory.
    table = client.get("prices")
    print(table.schema)
    one_chunk = table.column("id").chunk(0).to_numpy(zero_copy_only=True)
    print(f"first chunk of id: {len(one_chunk)} values at {hex(one_chunk.ctypes.data)}")

    # 3. SQL into pandas.
    by_label = client.sql(
        "SELECT label, count(*) AS n, round(avg(price), 3) AS avg_price "
        "FROM prices GROUP BY label ORDER BY label").to_pandas()
    print(by_label)
    assert by_label["n"].sum() == rows

    # 4. The object store.
    store = client.store
    oid = store.put(b"features v1", metadata=b"text")
    view = store.get(oid, timeout_ms=1000)
    print(f"object {oid.hex()[:8]}...: {bytes(view)!r}, metadata "
          f"{bytes(store.get_metadata([oid])[0])!r}")
    store.release(oid)
    store.delete(oid)

    del table, one_chunk, view
    client.rm("prices")
    client.close()
    print("done")


if __name__ == "__main__":
    main()
