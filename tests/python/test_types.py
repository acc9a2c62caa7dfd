"""Every Arrow type of the columnar layer survives put/get, and numpy and
pandas values come back as numpy and pandas hold them."""

from __future__ import annotations

import datetime
import decimal
import gc
import os
import subprocess

import numpy as np
import pandas as pd
import pytest

import quiver
from conftest import build_dir, wait_baseline


@pytest.fixture(scope="module")
def all_types(tmp_path_factory) -> quiver.Table:
    """A table with a column of every type (tests/common/all_types.h)."""
    path = tmp_path_factory.mktemp("types") / "all_types.arrow"
    subprocess.run([os.path.join(build_dir(), "tests", "python_all_types_ipc"), str(path),
                    "300"], check=True)
    return quiver.read_ipc(str(path))


def test_every_type_survives_put_and_get(client, baseline, all_types):
    assert all_types.num_columns > 80
    client.put("all_types", all_types, chunk_bytes=64 << 10)
    got = client.get("all_types")
    got.validate(full=True)
    assert got.schema.equals(all_types.schema)
    assert got.equals(all_types)
    for i in range(all_types.num_columns):
        assert got.column(i).equals(all_types.column(i)), all_types.schema[i]
    # Through the PyCapsule protocol and back (zero-copy both ways).
    assert quiver.Table.from_arrow(got).equals(all_types)
    # And through the object store (an Arrow IPC stream in cluster memory).
    oid = quiver.ObjectID.from_random()
    client.store.put_table(oid, got)
    assert client.store.get_table(oid).equals(all_types)
    client.store.delete_table(oid)
    assert all_types.slice(10, 100).equals(got.slice(10, 100))
    del got
    gc.collect()
    client.rm("all_types")
    wait_baseline(client, baseline, "all_types' memory")


NUMERIC = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64"]


def test_numpy_values_round_trip(client, baseline):
    rng = np.random.default_rng(5)
    n = 10_000
    data = {}
    for name in NUMERIC:
        dt = np.dtype(name)
        if dt.kind == "f":
            data[name] = rng.standard_normal(n).astype(dt)
        else:
            info = np.iinfo(dt)
            data[name] = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    data["float64"][:3] = [np.nan, np.inf, -0.0]  # NaN is a value, not a null
    data["bool"] = rng.random(n) < 0.5
    for unit in ("s", "ms", "us", "ns"):
        data[f"ts_{unit}"] = rng.integers(0, 2**40, n).astype(f"datetime64[{unit}]")
        data[f"td_{unit}"] = rng.integers(-2**40, 2**40, n).astype(f"timedelta64[{unit}]")
    data["date"] = rng.integers(-10_000, 30_000, n).astype("datetime64[D]")
    data["fixed"] = rng.integers(0, 256, (n, 6), dtype=np.uint8).view("S6").ravel()
    data["str"] = np.array([f"s{i}é" * (i % 4) for i in range(n)], dtype=object)
    data["bytes"] = np.array([bytes([i % 256]) * (i % 5) for i in range(n)], dtype=object)
    data["unicode_fixed"] = np.array(["ab", "cde", ""] * (n // 3) + ["x"] * (n % 3))
    client.put("np", data)
    t = client.get("np")
    types = {f.name: str(f.type) for f in t.schema}
    assert types["float16"] == "halffloat" and types["bool"] == "bool"
    assert types["ts_ms"] == "timestamp[ms]" and types["td_us"] == "duration[us]"
    assert types["date"] == "date32[day]" and types["fixed"] == "fixed_size_binary[6]"
    assert types["str"] == "string" and types["bytes"] == "binary"
    for name, want in data.items():
        got = t.column(name).to_numpy()
        assert not isinstance(got, np.ma.MaskedArray)
        if name == "unicode_fixed":
            assert list(got) == list(want)
        elif name == "fixed":
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
        elif name in ("str", "bytes"):
            assert list(got) == list(want)
        else:
            assert got.dtype == want.dtype, name
            np.testing.assert_array_equal(got, want)
    # Zero-copy where numpy reads Arrow's layout as it is.
    for name in NUMERIC + ["ts_ns", "td_ms", "fixed"]:
        arr = t.column(name).to_numpy(zero_copy_only=True)
        assert not arr.flags.writeable
    for name in ("bool", "str", "date"):
        with pytest.raises(quiver.InvalidArgument, match="zero-copy"):
            t.column(name).to_numpy(zero_copy_only=True)
    del t, arr
    client.rm("np")
    wait_baseline(client, baseline, "np's memory")


def test_nulls_come_back_as_masked_arrays(client, baseline):
    values = np.ma.MaskedArray(np.arange(10, dtype=np.int64),
                               mask=[i % 3 == 0 for i in range(10)])
    client.put("masked", {"m": values, "s": ["a", None, "c"] * 3 + [None]})
    t = client.get("masked")
    got = t.column("m").to_numpy()
    assert isinstance(got, np.ma.MaskedArray)
    np.testing.assert_array_equal(got.mask, values.mask)
    np.testing.assert_array_equal(got.compressed(), values.compressed())
    assert t.column("m").null_count == 4
    s = t.column("s").to_numpy()
    assert list(s.mask) == [False, True, False] * 3 + [True]
    with pytest.raises(quiver.InvalidArgument, match="4 nulls"):
        t.column("m").to_numpy(zero_copy_only=True)
    del t, got, s
    client.rm("masked")
    wait_baseline(client, baseline, "masked's memory")


def test_pandas_values_round_trip(client, baseline):
    n = 5000
    df = pd.DataFrame({
        "i": np.arange(n, dtype=np.int64),
        "u16": (np.arange(n) % 60000).astype(np.uint16),
        "f": np.linspace(0, 1, n),
        "b": np.arange(n) % 2 == 0,
        "s": [f"row {i}" for i in range(n)],
        "ts": pd.date_range("2000-01-01", periods=n, freq="h"),
        "ts_nat": pd.Series(pd.date_range("2000", periods=n, freq="D")).where(
            np.arange(n) % 10 != 0),
        "tz": pd.date_range("2021-03-27", periods=n, freq="15min", tz="Europe/Amsterdam"),
        "tz_utc": pd.date_range("2021-01-01", periods=n, freq="s", tz="UTC"),
        "td": pd.to_timedelta(np.arange(n), unit="s"),
        "cat": pd.Categorical(["a", "b", None, "c"] * (n // 4), categories=["c", "b", "a"]),
        "Int64": pd.array([None if i % 7 == 0 else i for i in range(n)], dtype="Int64"),
        "UInt8": pd.array([None if i % 9 == 0 else i % 200 for i in range(n)], dtype="UInt8"),
        "boolean": pd.array([None if i % 4 == 0 else i % 3 == 0 for i in range(n)],
                            dtype="boolean"),
        "string": pd.array([None if i % 6 == 0 else f"x{i}" for i in range(n)],
                           dtype="string"),
        "objstr": [None if i % 8 == 0 else f"o{i}" for i in range(n)],
        "fnan": [np.nan if i % 5 == 0 else i / 2 for i in range(n)],
    })
    client.put("pd", df, chunk_bytes=64 << 10)
    t = client.get("pd")
    assert t.num_chunks > 1
    types = {f.name: str(f.type) for f in t.schema}
    assert types["tz"] == "timestamp[ns, tz=Europe/Amsterdam]"
    assert types["cat"].startswith("dictionary<values=string, indices=int8")
    assert types["Int64"] == "int64" and types["boolean"] == "bool"
    assert t.column("Int64").null_count == len(range(0, n, 7))
    assert t.column("fnan").null_count == 0  # NaN is a float value
    back = t.to_pandas()
    want = df.copy()
    want["string"] = want["string"].astype(object).where(want["string"].notna(), None)
    for name in df.columns:
        pd.testing.assert_series_equal(back[name], want[name], check_names=True,
                                       check_dtype=name != "string")
    # Zero-copy into pandas where it takes numpy memory as it is.
    one = client.get("pd").column("i").chunk(0)
    arr = one.to_numpy(zero_copy_only=True)
    series = one.to_pandas()
    assert series.to_numpy().__array_interface__["data"][0] == \
        arr.__array_interface__["data"][0]
    del t, one, arr, series, back
    gc.collect()
    client.rm("pd")
    wait_baseline(client, baseline, "pd's memory")


def test_other_arrow_types_to_numpy(client, all_types):
    """Types pandas does not make: decimals, dates, times, intervals."""
    by_type = {str(f.type): f.name for f in all_types.schema}
    dec = all_types.column(by_type["decimal128(5, 2)"]).to_numpy()
    assert all(isinstance(v, decimal.Decimal) for v in dec.compressed())
    assert all(abs(v) < 1000 for v in dec.compressed())
    date = all_types.column(by_type["date32[day]"]).to_numpy()
    assert date.dtype == np.dtype("datetime64[D]")
    t64 = all_types.column(by_type["time64[ns]"]).to_numpy()
    assert t64.dtype == np.dtype("timedelta64[ns]")
    mdn = all_types.column(by_type["month_day_nano_interval"]).to_numpy()
    assert mdn.dtype.names == ("months", "days", "nanoseconds")
    d = all_types.column(by_type["dictionary<values=string, indices=int8, ordered=0>"])
    assert d.to_numpy().dtype == object
    assert isinstance(d.to_pandas().dtype, pd.CategoricalDtype)
    with pytest.raises(quiver.InvalidArgument, match="no numpy or pandas form"):
        all_types.column(by_type["list<item: int32>"]).to_numpy()
    nulls = all_types.column(by_type["null"]).to_numpy()
    assert nulls.mask.all()
    assert repr(all_types).startswith("quiver.Table\n")
    assert "----" in repr(all_types)


def test_dates_and_strings_from_pandas_and_datetime(client, baseline):
    df = pd.DataFrame({"when": [datetime.datetime(2020, 1, 1, 12), None],
                       "tz": pd.to_datetime(["2020-01-01T00:00Z", None], utc=True)})
    df["when"] = pd.to_datetime(df["when"])
    client.put("dates", df)
    pd.testing.assert_frame_equal(client.get("dates").to_pandas(), df)
    client.rm("dates")
    wait_baseline(client, baseline, "dates' memory")
