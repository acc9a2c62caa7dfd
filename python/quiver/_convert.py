"""numpy arrays and pandas columns as Arrow buffers (internal).

``batches_from(data)`` lays out a pandas DataFrame or a mapping of column
names to arrays as the buffers of the Arrow C Data Interface and hands them
to the extension, which makes record batches pointing into that memory
(zero-copy where Arrow's layout is numpy's: fixed-width numbers, datetimes
and timedeltas without NaT). ``Client.put`` and ``ObjectStore.put_table``
then copy them once into cluster memory.

What copies here, before that one copy: booleans (bit-packed), null masks
(bit-packed), strings and bytes (offsets and data), ``datetime64[D]``
(to int32 days), values of pandas' nullable dtypes, and arrays that are not
contiguous or not in the machine's byte order.
"""

from __future__ import annotations

import datetime
import sys
from typing import Any, Mapping, Optional, Tuple

import numpy as np

from . import _quiver
from ._errors import InvalidArgument

# Arrow C format strings of the numpy kinds and sizes taken as they are.
_NUMERIC_FORMATS = {
    ("i", 1): "c",
    ("i", 2): "s",
    ("i", 4): "i",
    ("i", 8): "l",
    ("u", 1): "C",
    ("u", 2): "S",
    ("u", 4): "I",
    ("u", 8): "L",
    ("f", 2): "e",
    ("f", 4): "f",
    ("f", 8): "g",
}
_TIME_UNITS = {"s": "s", "ms": "m", "us": "u", "ns": "n"}

Spec = Tuple[str, int, int, list, Optional[tuple]]


def _pandas() -> Any:
    """pandas if this process has imported it (never imports it here)."""
    return sys.modules.get("pandas")


def _validity(mask: Optional[np.ndarray]) -> Tuple[Optional[np.ndarray], int]:
    """Arrow's validity bitmap of a null mask (True = null) and the null count."""
    if mask is None:
        return None, 0
    mask = np.asarray(mask, dtype=bool)
    nulls = int(mask.sum())
    if nulls == 0:
        return None, 0
    return np.packbits(~mask, bitorder="little"), nulls


def _native(arr: np.ndarray) -> np.ndarray:
    """The array contiguous and in this machine's byte order (copied only if not)."""
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return np.ascontiguousarray(arr)


def _tz_name(tz: Any) -> str:
    """The Arrow time zone text of a Python or pytz time zone."""
    for attr in ("key", "zone"):  # zoneinfo, pytz
        name = getattr(tz, attr, None)
        if isinstance(name, str):
            return name
    if isinstance(tz, datetime.timezone):
        offset = tz.utcoffset(None)
        if offset == datetime.timedelta(0):
            return "UTC"
        minutes = int(offset.total_seconds() // 60)
        sign = "+" if minutes >= 0 else "-"
        return "%s%02d:%02d" % (sign, abs(minutes) // 60, abs(minutes) % 60)
    return str(tz)


def _strings(name: str, values: np.ndarray, mask: Optional[np.ndarray],
             binary: bool) -> Spec:
    fmt, offsets, data, validity, nulls = _quiver._encode_strings(
        values, mask, binary, name)
    return (fmt, len(values), nulls, [validity, offsets, data], None)


def _object_spec(name: str, values: np.ndarray, mask: Optional[np.ndarray]) -> Spec:
    """An object array: str -> utf8, bytes -> binary, all missing -> null."""
    pd = _pandas()
    if mask is None and pd is not None:
        mask = np.asarray(pd.isna(values), dtype=bool)
    elif mask is None:
        mask = np.fromiter((v is None for v in values), dtype=bool, count=len(values))
    present = values[~mask] if mask.any() else values
    if len(present) == 0:
        return ("n", len(values), len(values), [], None)
    first = present[0]
    if isinstance(first, str):
        return _strings(name, values, mask, binary=False)
    if isinstance(first, (bytes, bytearray)):
        return _strings(name, values, mask, binary=True)
    raise TypeError(
        f"column '{name}': object values of type {type(first).__name__} cannot be "
        "put (str, bytes and None are; numbers, datetimes and categories go in "
        "typed columns)")


def _numpy_spec(name: str, arr: np.ndarray, mask: Optional[np.ndarray] = None) -> Spec:
    """The Arrow layout of a 1-D numpy array (mask: True where null)."""
    if arr.ndim != 1:
        raise InvalidArgument(
            f"column '{name}' has {arr.ndim} dimensions; a column is 1-D")
    kind, n = arr.dtype.kind, len(arr)
    if kind == "O":
        return _object_spec(name, arr, mask)
    if kind == "U":
        return _strings(name, arr.astype(object), mask, binary=False)
    if kind == "S":
        if arr.dtype.itemsize == 0:
            return _strings(name, arr.astype(object), mask, binary=True)
        validity, nulls = _validity(mask)
        return (f"w:{arr.dtype.itemsize}", n, nulls, [validity, _native(arr)], None)
    if kind == "b":
        validity, nulls = _validity(mask)
        bits = np.packbits(np.ascontiguousarray(arr), bitorder="little")
        return ("b", n, nulls, [validity, bits], None)
    if kind in "iuf":
        fmt = _NUMERIC_FORMATS.get((kind, arr.dtype.itemsize))
        if fmt is None:
            raise TypeError(f"column '{name}': numpy dtype {arr.dtype} has no Arrow type")
        validity, nulls = _validity(mask)
        return (fmt, n, nulls, [validity, _native(arr)], None)
    if kind in "Mm":
        unit, count = np.datetime_data(arr.dtype)
        nat = np.isnat(arr)
        mask = nat if mask is None else (np.asarray(mask, dtype=bool) | nat)
        validity, nulls = _validity(mask)
        if kind == "M" and unit == "D" and count == 1:
            days = arr.view("<i8").astype("<i4")
            return ("tdD", n, nulls, [validity, days], None)
        if unit not in _TIME_UNITS or count != 1:
            raise TypeError(
                f"column '{name}': {arr.dtype} has no Arrow type (units s, ms, us, ns; "
                "and D for dates)")
        prefix = "ts" if kind == "M" else "tD"
        suffix = ":" if kind == "M" else ""
        values = _native(arr).view("<i8")
        return (prefix + _TIME_UNITS[unit] + suffix, n, nulls, [validity, values], None)
    raise TypeError(f"column '{name}': numpy dtype {arr.dtype} has no Arrow type")


def _pandas_spec(name: str, series: Any) -> Spec:
    """A pandas Series (or extension array) laid out as Arrow buffers."""
    pd = _pandas()
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        codes = np.asarray(series.cat.codes if hasattr(series, "cat") else series.codes)
        categories = np.asarray(dtype.categories)
        values = _numpy_spec(name, categories)
        validity, nulls = _validity(codes < 0)
        fmt = _NUMERIC_FORMATS[("i", codes.dtype.itemsize)]
        return (fmt, len(codes), nulls, [validity, _native(codes)], values)
    if isinstance(dtype, pd.DatetimeTZDtype):
        mask = np.asarray(series.isna(), dtype=bool)
        values = np.asarray(series.array.asi8, dtype="<i8")
        validity, nulls = _validity(mask)
        return ("tsn:" + _tz_name(dtype.tz), len(values), nulls, [validity, values], None)
    if isinstance(dtype, pd.StringDtype):
        mask = np.asarray(series.isna(), dtype=bool)
        values = np.asarray(series.to_numpy(dtype=object, na_value=None))
        return _strings(name, values, mask, binary=False)
    if isinstance(dtype, pd.api.extensions.ExtensionDtype) and hasattr(dtype, "numpy_dtype"):
        # Nullable integers, floats and booleans: values and a mask.
        mask = np.asarray(series.isna(), dtype=bool)
        fill = False if dtype.numpy_dtype.kind == "b" else 0
        values = series.to_numpy(dtype=dtype.numpy_dtype, na_value=fill)
        return _numpy_spec(name, values, mask)
    if isinstance(dtype, pd.api.extensions.ExtensionDtype):
        raise TypeError(f"column '{name}': pandas dtype {dtype} cannot be put")
    return _numpy_spec(name, series.to_numpy())


def _column_spec(name: str, values: Any) -> Spec:
    pd = _pandas()
    if pd is not None and isinstance(values, (pd.Series, pd.Index)):
        return _pandas_spec(name, values)
    if pd is not None and isinstance(values, pd.api.extensions.ExtensionArray):
        return _pandas_spec(name, pd.Series(values, copy=False))
    if isinstance(values, np.ma.MaskedArray):
        return _numpy_spec(name, np.ma.getdata(values), np.ma.getmaskarray(values))
    if isinstance(values, np.ndarray):
        return _numpy_spec(name, values)
    if isinstance(values, (list, tuple)):
        return _numpy_spec(name, np.asarray(values))
    raise TypeError(
        f"column '{name}': expected a numpy array, a pandas Series or a list, got "
        f"{type(values).__name__}")


def _names(keys: Any) -> list:
    names = [k if isinstance(k, str) else str(k) for k in keys]
    if len(set(names)) != len(names):
        raise InvalidArgument("column names must be unique: %r" % (names,))
    return names


def batches_from(data: Any, chunk_bytes: int = 0) -> Optional["_quiver._Batches"]:
    """Batches over a pandas DataFrame or a mapping of name -> array, or None.

    Batches are at most a quarter of ``chunk_bytes`` (when given), so that a
    put's chunks come out near that size. The DataFrame's index is not stored (``df.reset_index()`` keeps it as
    columns). The result points into the arrays: it must not outlive them,
    and it does not (the callers copy it into cluster memory at once).
    """
    pd = _pandas()
    if pd is not None and isinstance(data, pd.DataFrame):
        names = _names(data.columns)
        specs = [_pandas_spec(n, data.iloc[:, i]) for i, n in enumerate(names)]
        return _quiver._batches(names, specs, chunk_bytes)
    if isinstance(data, Mapping):
        names = _names(data.keys())
        specs = [_column_spec(n, v) for n, v in zip(names, data.values())]
        return _quiver._batches(names, specs, chunk_bytes)
    return None
