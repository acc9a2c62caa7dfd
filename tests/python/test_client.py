"""quiver.connect and the Client's tables: put, get, ls, rm, sql, status,
across processes and nodes, zero-copy proven by address."""

from __future__ import annotations

import os
import pickle
import subprocess
import tomllib

import numpy as np
import pandas as pd
import pytest

import quiver
from conftest import quiver_bin, wait_baseline


def frame(rows: int = 200_000) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame({
        "id": np.arange(rows, dtype=np.int64),
        "k": (np.arange(rows) % 7).astype(np.int32),
        "x": rng.random(rows),
        "f32": rng.random(rows).astype(np.float32),
        "u8": (np.arange(rows) % 250).astype(np.uint8),
        "flag": np.arange(rows) % 3 == 0,
        "s": [f"item-{i}" for i in range(rows)],
        "when": pd.date_range("2024-01-01", periods=rows, freq="s"),
        "when_tz": pd.date_range("2024-01-01", periods=rows, freq="min", tz="Europe/Amsterdam"),
        "took": pd.to_timedelta(np.arange(rows), unit="ms"),
        "cat": pd.Categorical(np.array(["red", "green", "blue"])[np.arange(rows) % 3]),
        "maybe": pd.array([None if i % 5 == 0 else i for i in range(rows)], dtype="Int64"),
    })


def region_bases(cluster) -> list:
    """(base, size) of every region, read from the cluster file itself."""
    with open(cluster.config, "rb") as f:
        cfg = tomllib.load(f)

    def size(v):
        if isinstance(v, int):
            return v
        units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
        v = v.rstrip("iB").rstrip("B")
        return int(v[:-1]) * units[v[-1]] if v[-1] in units else int(v)

    return [(int(n["base"], 0) if isinstance(n["base"], str) else n["base"], size(n["size"]))
            for n in cfg["node"]]


def address(arr: np.ndarray) -> int:
    return arr.__array_interface__["data"][0]


def inside(regions: list, arr: np.ndarray) -> bool:
    a = address(arr)
    return any(base <= a and a + arr.nbytes <= base + size for base, size in regions)


def test_connect_finds_the_cluster_as_the_command_line_does(cluster, client, tmp_path):
    assert client.node == 0
    assert client.state_dir == cluster.dir
    assert client.config_path == cluster.config
    # $QUIVER_DIR, then the node given; a cluster file and a node.
    p = cluster.python("""
        import os, quiver
        a = quiver.connect()
        print(a.node, a.state_dir == os.environ["QUIVER_DIR"])
        a.close()
        b = quiver.connect(config=os.environ["QDIR"] + "/cluster.toml", node=2)
        print(b.node, b.state_dir)
    """, env={"QUIVER_DIR": cluster.dir})
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert out.split() == ["0", "True", "2", "None"]
    # The command line's messages.
    missing = str(tmp_path / "nothing")
    with pytest.raises(quiver.NotFound) as e:
        quiver.connect(missing)
    cli = subprocess.run([quiver_bin(), "ls", "--dir", missing], capture_output=True,
                         text=True)
    assert str(e.value) in cli.stderr
    assert "start one with `quiver up`" in str(e.value)
    with pytest.raises(quiver.InvalidArgument, match=r"no node 7 in the cluster .* \(it has 3\)"):
        quiver.connect(cluster.dir, node=7)
    with pytest.raises(quiver.InvalidArgument, match="a process is of one node"):
        quiver.connect(cluster.dir, node=1)  # this process is node 0's
    with pytest.raises(TypeError):
        quiver.connect(cluster.dir, node="1")
    assert "node 0" in repr(client)


def test_zero_copy_by_address_on_this_node(cluster, client, baseline):
    regions = region_bases(cluster)
    assert [(r.base, r.size) for r in client.regions] == regions
    client.put("zc", {"v": np.arange(1_000_000, dtype=np.int64)})
    t = client.get("zc")
    assert t.num_chunks == 1
    arr = t.column("v").to_numpy(zero_copy_only=True)
    assert inside(regions, arr)
    assert not arr.flags.writeable and not arr.flags.owndata
    np.testing.assert_array_equal(arr, np.arange(1_000_000))
    # The same bytes every time: no copy anywhere.
    assert address(client.get("zc").column("v").to_numpy()) == address(arr)
    df = t.to_pandas()
    assert address(df["v"].to_numpy()) == address(arr)
    with pytest.raises(ValueError):
        arr[0] = 1  # read-only
    del arr, df, t
    client.rm("zc")
    wait_baseline(client, baseline, "zc's memory back")


def test_a_dataframe_put_on_node_0_equals_what_node_2_gets(cluster, client, baseline,
                                                            tmp_path):
    df = frame()
    r = client.put("frame", df, chunk_bytes=2 << 20)
    assert r.rows == len(df) and r.chunks > 3
    assert sorted(r.nodes) == [0, 1, 2]  # spread over every node
    out = tmp_path / "got.pkl"
    got = cluster.run_python(f"""
        import pickle, quiver, tomllib
        c = quiver.connect(node=2)
        t = c.get("frame")
        regions = [(r.base, r.size) for r in c.regions]
        ok = 0
        for col in t.columns:
            for ch in col.chunks:
                if col.null_count == 0 and col.type.id in ("int64", "int32", "double", "float", "uint8", "timestamp",
                                   "duration"):
                    a = ch.to_numpy(zero_copy_only=True)
                    p = a.__array_interface__["data"][0]
                    assert any(b <= p < b + s for b, s in regions), (col.name, hex(p))
                    ok += 1
        with open({str(out)!r}, "wb") as f:
            pickle.dump(t.to_pandas(), f)
        print(c.node, ok)
    """.replace("quiver.connect(node=2)", f"quiver.connect({cluster.dir!r}, node=2)"))
    node, checked = got.split()
    assert node == "2" and int(checked) >= 6 * r.chunks
    with open(out, "rb") as f:
        back = pickle.load(f)
    assert list(back.columns) == list(df.columns)
    for name in df.columns:
        pd.testing.assert_series_equal(back[name], df[name], check_names=True)
    client.rm("frame")
    wait_baseline(client, baseline, "frame's memory back")


def test_put_takes_dicts_lists_tables_and_refuses_a_taken_name(client, baseline):
    client.put("d", {"a": [1, 2, 3], "b": np.array([0.5, 1.5, 2.5]), "c": ["x", None, "z"]})
    t = client.get("d")
    assert t.column_names == ["a", "b", "c"]
    assert str(t.schema[0].type) == "int64" and str(t.schema[2].type) == "string"
    np.testing.assert_array_equal(t.column("a").to_numpy(), [1, 2, 3])
    with pytest.raises(quiver.AlreadyExists) as e:
        client.put("d", {"a": [1]})
    assert str(e.value) == "a table named d is already published (`quiver rm d` removes it)"
    client.put("d2", t)  # a Table (here one in cluster memory) copies again
    assert client.get("d2").equals(t)
    names = [i.name for i in client.ls()]
    assert "d" in names and "d2" in names
    info = {i.name: i for i in client.ls()}["d"]
    assert info.rows == 3 and info.chunks == 1 and info.publishers == [0]
    # The command line sees the same tables.
    del t
    for n in ("d", "d2"):
        client.rm(n)
    with pytest.raises(quiver.NotFound):
        client.rm("d")
    with pytest.raises(quiver.NotFound):
        client.get("d")
    wait_baseline(client, baseline, "d's memory back")


def test_get_waits_for_a_table_published_later(cluster, client, baseline):
    p = cluster.python(f"""
        import quiver, sys
        c = quiver.connect({cluster.dir!r}, node=1)
        sys.stdin.readline()
        c.put("later", {{"v": list(range(10))}})
        print("put", flush=True)
        sys.stdin.readline()
    """, stdin=subprocess.PIPE)
    p.stdin.write("go\n")
    p.stdin.flush()
    t = client.get("later", wait_ms=60_000)
    assert t.num_rows == 10
    with pytest.raises(quiver.NotFound):
        client.get("never", wait_ms=30)
    # A live publisher's table is refused to others; once it exits, not.
    assert p.stdout.readline().strip() == "put"
    with pytest.raises(quiver.PermissionDenied):
        client.rm("later")
    p.stdin.write("done\n")
    p.stdin.flush()
    p.communicate(timeout=60)
    del t
    client.rm("later")
    wait_baseline(client, baseline, "later's memory back")


def test_sql_over_a_table_put_from_pandas(cluster, client, baseline, tmp_path):
    df = frame(50_000)
    client.put("sales", df, chunk_bytes=1 << 20)
    got = client.sql("SELECT k, count(*) AS n, sum(x) AS total, max(s) AS last "
                     "FROM sales GROUP BY k ORDER BY k").to_pandas()
    want = df.groupby("k").agg(n=("x", "size"), total=("x", "sum"),
                               last=("s", "max")).reset_index()
    np.testing.assert_array_equal(got["k"], want["k"])
    np.testing.assert_array_equal(got["n"], want["n"])
    np.testing.assert_allclose(got["total"], want["total"])
    assert list(got["last"]) == list(want["last"])
    # Published back into cluster memory, readable from another node.
    pub = client.sql("SELECT id, x * 2 AS y FROM sales WHERE k = 3", publish="sales3")
    assert pub.num_rows == int((df["k"] == 3).sum())
    arr = pub.column("y").to_numpy()
    assert any(r.contains(address(arr)) for r in client.regions)
    out = cluster.run_python(f"""
        import quiver
        c = quiver.connect({cluster.dir!r}, node=2)
        print(c.sql("SELECT count(*) AS n FROM sales3").to_pandas()["n"][0])
    """)
    assert int(out) == pub.num_rows
    # Locked down as `quiver sql`: no files unless allowed.
    target = tmp_path / "out.csv"
    with pytest.raises(quiver.PermissionDenied) as e:
        client.sql(f"COPY (SELECT 1) TO '{target}'")
    assert "allow_files=True" in str(e.value)
    assert not target.exists()
    client.sql(f"COPY (SELECT 42 AS v) TO '{target}' (HEADER)", allow_files=True)
    assert target.read_text().split() == ["v", "42"]
    back = client.sql(f"SELECT * FROM read_csv('{target}')", allow_files=True)
    assert back.column("v").to_numpy()[0] == 42
    with pytest.raises(quiver.PermissionDenied):
        client.sql("SET enable_external_access = true", allow_files=True)
    with pytest.raises(quiver.InvalidArgument, match="a process is of one node"):
        client.sql("SELECT 1", node=2)
    with pytest.raises(quiver.Error, match="nope"):
        client.sql("SELECT * FROM nope")
    del pub, arr
    client.rm("sales3")
    client.rm("sales")
    wait_baseline(client, baseline, "the sql tables' memory back")


def test_status_and_the_command_line_agree(cluster, client, baseline):
    client.put("st", {"v": np.arange(1000)}, nodes=[1])
    t = client.get("st")
    s = client.status()
    assert [n.node for n in s.nodes] == [0, 1, 2]
    assert all(n.online for n in s.nodes)
    info = {i.name: i for i in s.tables}["st"]
    assert info.nodes == [1] and info.rows == 1000
    cli = cluster.cli("status").stdout
    assert "st" in cli and s.cluster in cli
    ls = cluster.cli("ls").stdout
    assert "st" in ls
    del t
    client.rm("st")
    wait_baseline(client, baseline, "st's memory back")


def test_the_example_of_the_docs_runs_as_written(cluster):
    """docs/python.md's first example, run as it is written there."""
    doc = os.path.join(os.environ.get("QUIVER_SOURCE_DIR", ""), "docs", "python.md")
    with open(doc) as f:
        text = f.read()
    start = text.index("```python\n") + len("```python\n")
    code = text[start:text.index("```", start)]
    p = cluster.python(code, env={"QUIVER_DIR": cluster.dir})
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err + out
