"""quiver.Table and quiver.Column: Arrow tables, zero-copy where they live.

A Table from ``Client.get`` points into cluster memory: its buffers are
the very bytes the writer put there, pinned at their owners while any Table,
Column, numpy array or pandas object made from them is alive in this
process (and released when the last one goes, or when the process dies).
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Union

import numpy as np

from . import _quiver
from ._errors import InvalidArgument, NotFound

Schema = _quiver.Schema
Field = _quiver.Field
DataType = _quiver.DataType


def _pandas() -> Any:
    import pandas

    return pandas


class Column:
    """One column of a Table: a chunked Arrow array.

    Immutable and safe to share between threads. ``to_numpy()`` is zero-copy
    for a single chunk of fixed-width values without nulls; see its
    documentation for what copies. Holding a Column (or an array made from
    it) keeps its chunks pinned in cluster memory.
    """

    __slots__ = ("_c",)

    def __init__(self, handle: "_quiver._Column") -> None:
        """Internal: columns come from ``Table.column``."""
        self._c = handle

    @property
    def name(self) -> str:
        """The column's name."""
        return self._c.field.name

    @property
    def field(self) -> Field:
        """The column's field (name, type, nullability, metadata)."""
        return self._c.field

    @property
    def type(self) -> DataType:
        """The column's Arrow type."""
        return self._c.field.type

    @property
    def null_count(self) -> int:
        """How many values are null."""
        return self._c.null_count

    @property
    def num_chunks(self) -> int:
        """How many arrays (chunks) the column is made of."""
        return self._c.num_chunks

    def __len__(self) -> int:
        return self._c.length

    def chunk(self, i: int) -> "Column":
        """Chunk ``i`` alone, as a Column of one chunk (zero-copy)."""
        return Column(self._c.chunk(i))

    @property
    def chunks(self) -> List["Column"]:
        """Every chunk, each as a Column of one chunk (zero-copy)."""
        return [self.chunk(i) for i in range(self.num_chunks)]

    def equals(self, other: "Column") -> bool:
        """Whether both hold the same values (however they are chunked)."""
        return isinstance(other, Column) and self._c.equals(other._c)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Column) and self.equals(other)

    __hash__ = None  # type: ignore[assignment]

    def _chunk_numpy(self, i: int, zero_copy_only: bool) -> np.ndarray:
        kind, values, mask, extra = self._c.chunk_values(i)
        zero_copy = kind == "numpy" and not values.flags.writeable
        if kind == "null":
            n = self._c.chunk(i).length
            values = np.full(n, None, dtype=object)
            mask = np.ones(n, dtype=bool)
            zero_copy = False
        elif kind == "date32":
            values = values.astype("datetime64[D]")
        elif kind == "time":
            if values.dtype.itemsize == 8:
                values = values.view(f"timedelta64[{extra}]")
                zero_copy = True
            else:
                values = values.astype(f"timedelta64[{extra}]")
        elif kind == "dictionary":
            dictionary = Column(extra).to_numpy()
            if isinstance(dictionary, np.ma.MaskedArray):
                dictionary = np.ma.getdata(dictionary)
            indices = np.asarray(values, dtype=np.int64)
            if mask is not None:
                indices = np.where(mask, 0, indices)
            if len(dictionary):
                values = dictionary[indices]
            else:
                values = np.empty(len(indices), dtype=dictionary.dtype)
        if zero_copy_only and not zero_copy:
            raise InvalidArgument(
                f"column '{self.name}' of type {self.type} has no zero-copy numpy form "
                "(to_numpy() without zero_copy_only=True copies)")
        if mask is not None:
            if zero_copy_only:
                raise InvalidArgument(
                    f"column '{self.name}' has {int(np.sum(mask))} nulls: no zero-copy "
                    "numpy form (to_numpy() gives a numpy.ma.MaskedArray)")
            return np.ma.MaskedArray(values, mask=mask)
        return values

    def to_numpy(self, zero_copy_only: bool = False) -> np.ndarray:
        """The values as a numpy array.

        Zero-copy for one chunk of fixed-width values without nulls (ints,
        floats, float16, timestamps, durations, date64, time64, intervals as
        structured dtypes, fixed-size binary as ``S<n>``): the array is
        read-only, points into the column's memory (cluster memory for a
        table from ``Client.get``), and its ``base`` keeps that memory
        pinned until the array is gone, whatever happens to the Table, the
        Column or the Client.

        Copies: columns of several chunks (concatenated), booleans
        (unpacked), date32 (to ``datetime64[D]``), time32, strings and
        binary (object arrays of ``str``/``bytes``), decimals (object arrays
        of ``decimal.Decimal``) and dictionaries (decoded).

        A column with nulls comes back as a ``numpy.ma.MaskedArray`` whose
        mask is True where a value is null (its data is zero-copy where the
        values are). Nested types (lists, structs, maps, unions) have no
        numpy form: hand the table to pyarrow, polars or DuckDB through
        ``__arrow_c_stream__`` instead.

        Args:
            zero_copy_only: raise InvalidArgument instead of copying.
        """
        n = self.num_chunks
        if n == 1:
            return self._chunk_numpy(0, zero_copy_only)
        if zero_copy_only:
            raise InvalidArgument(
                f"column '{self.name}' has {n} chunks: no zero-copy numpy form (each "
                "chunk(i).to_numpy() is, or to_numpy() concatenates them)")
        if n == 0:
            return np.empty(0, dtype=object)
        parts = [self._chunk_numpy(i, False) for i in range(n)]
        if any(isinstance(p, np.ma.MaskedArray) for p in parts):
            return np.ma.concatenate(parts)
        return np.concatenate(parts)

    def _chunk_pandas(self, i: int) -> Any:
        pd = _pandas()
        kind, values, mask, extra = self._c.chunk_values(i)
        if kind == "dictionary":
            categories = Column(extra).to_pandas().rename(None)
            codes = np.asarray(values, dtype=np.int64)
            if mask is not None:
                codes = np.where(mask, -1, codes)
            return pd.Categorical.from_codes(codes, categories=pd.Index(categories))
        if kind == "null":
            return np.full(self._c.chunk(i).length, None, dtype=object)
        arr = self._chunk_numpy(i, False)
        if not isinstance(arr, np.ma.MaskedArray):
            if arr.dtype.kind == "V":  # intervals: tuples
                return np.array(arr.tolist() + [None], dtype=object)[:-1]
            return self._with_timezone(arr)
        data, null = np.ma.getdata(arr), np.ma.getmaskarray(arr)
        k = data.dtype.kind
        if k in "iu":
            return pd.arrays.IntegerArray(np.asarray(data), null)
        if k == "b":
            return pd.arrays.BooleanArray(np.asarray(data), null)
        if k == "f":
            out = np.array(data, dtype=data.dtype, copy=True)
            out[null] = np.nan
            return out
        if k in "Mm":
            out = np.array(data, copy=True)
            out[null] = np.datetime64("NaT") if k == "M" else np.timedelta64("NaT")
            return self._with_timezone(out)
        out = np.array(data, dtype=object, copy=True)
        out[null] = None
        return out

    def _with_timezone(self, arr: np.ndarray) -> Any:
        tz = self.type.timezone if self.type.id == "timestamp" else None
        if tz is None:
            return arr
        pd = _pandas()
        return pd.Series(arr, copy=False).dt.tz_localize("UTC").dt.tz_convert(
            _pandas_tz(tz)).array

    def to_pandas(self) -> Any:
        """The column as a pandas Series (named as the column).

        Zero-copy where pandas takes numpy memory as it is: one chunk of
        ints, floats, ``timestamp[ns]`` or ``duration[ns]`` without nulls
        (the Series is then read-only). Copies elsewhere: several chunks,
        other time units (pandas 1.5 holds nanoseconds only), time zones,
        booleans, strings (object dtype), dictionaries (``Categorical``),
        and columns with nulls: ints and booleans become pandas' nullable
        ``Int64``/``boolean`` dtypes, floats get NaN, datetimes NaT, other
        values None.
        """
        pd = _pandas()
        parts = [self._chunk_pandas(i) for i in range(self.num_chunks)]
        if len(parts) == 1:
            return pd.Series(parts[0], name=self.name, copy=False)
        if not parts:
            return pd.Series([], name=self.name, dtype=object)
        return pd.concat([pd.Series(p, copy=False) for p in parts],
                         ignore_index=True).rename(self.name)

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        """The column as an Arrow C stream of its chunks (PyCapsule protocol)."""
        return self._c.export_stream(requested_schema)

    def __arrow_c_schema__(self) -> object:
        """The column's field as an Arrow C schema (PyCapsule protocol)."""
        return self._c.field.__arrow_c_schema__()

    def __repr__(self) -> str:
        return f"quiver.Column {self.name}: {self.type}\n{self._c.text(5)}"


def _pandas_tz(tz: str) -> Any:
    """A time zone pandas takes for Arrow's text of one ("+05:30" too)."""
    if tz[:1] in "+-" and ":" in tz:
        import datetime

        hours, minutes = tz[1:].split(":")
        delta = datetime.timedelta(hours=int(hours), minutes=int(minutes))
        return datetime.timezone(delta if tz[0] == "+" else -delta)
    return tz


class Table:
    """An Arrow table: a schema and equally long columns of chunks.

    Immutable and safe to share between threads. Tables from
    ``Client.get`` and ``Client.sql(..., publish=...)`` are zero-copy views of
    cluster memory, pinned while this Table, one of its Columns or an array
    made from them lives; ``Table.from_arrow`` imports any Arrow producer
    zero-copy; ``Table.from_pandas``/``from_pydict`` copy into this
    process's memory.

    Tables are Arrow producers themselves (``__arrow_c_stream__``,
    ``__arrow_c_schema__``): ``pyarrow.table(t)``, ``polars.from_arrow(t)``
    and ``duckdb.sql("SELECT ... FROM t")`` read them without a copy.
    """

    __slots__ = ("_t",)

    def __init__(self, handle: "_quiver._Table") -> None:
        """Internal: tables come from Client.get, from_arrow, from_pandas..."""
        self._t = handle

    # ---- making tables ----

    @classmethod
    def from_arrow(cls, obj: Any) -> "Table":
        """Any Arrow PyCapsule producer as a Table, zero-copy.

        ``obj`` has ``__arrow_c_stream__`` (a table, a reader, a DataFrame
        of pyarrow, polars, DuckDB...) or ``__arrow_c_array__`` of a struct
        array (a record batch). The stream is read to its end; the Table
        points into the producer's memory, which the producer's release
        callbacks free (each exactly once) when the Table and everything
        made from it are gone.
        """
        if isinstance(obj, Table):
            return obj
        return cls(_quiver._Table.from_arrow(obj))

    @classmethod
    def from_pandas(cls, df: Any) -> "Table":
        """A pandas DataFrame as a Table in this process's memory (a copy).

        Types as ``Client.put`` makes them (see docs/python.md); the index is
        not kept (``df.reset_index()`` keeps it as columns).
        """
        from ._convert import batches_from

        pd = _pandas()
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"from_pandas takes a DataFrame, got {type(df).__name__}")
        return cls(batches_from(df).to_table())

    @classmethod
    def from_pydict(cls, columns: Dict[str, Any]) -> "Table":
        """A mapping of column name -> numpy array (or list) as a Table (a copy)."""
        from ._convert import batches_from

        if not isinstance(columns, dict):
            raise TypeError(f"from_pydict takes a dict, got {type(columns).__name__}")
        return cls(batches_from(columns).to_table())

    @classmethod
    def read_ipc(cls, source: Union[str, bytes, Any]) -> "Table":
        """A Table from an Arrow IPC stream or file: a path (memory-mapped,
        zero-copy) or bytes. Fully validated."""
        if not isinstance(source, (str, bytes)):
            source = str(source)
        return cls(_quiver._Table.read_ipc(source))

    def to_ipc(self, file: bool = False) -> bytes:
        """The table as Arrow IPC bytes: the stream format, or the file format."""
        return self._t.to_ipc(file)

    # ---- shape and schema ----

    @property
    def num_rows(self) -> int:
        """Rows of the table."""
        return self._t.num_rows

    @property
    def num_columns(self) -> int:
        """Columns of the table."""
        return self._t.num_columns

    @property
    def shape(self) -> tuple:
        """(num_rows, num_columns)."""
        return (self.num_rows, self.num_columns)

    def __len__(self) -> int:
        return self.num_rows

    @property
    def schema(self) -> Schema:
        """The table's schema."""
        return self._t.schema

    @property
    def column_names(self) -> List[str]:
        """The columns' names, in order."""
        return self.schema.names

    @property
    def num_chunks(self) -> int:
        """How many record batches (chunks) the table is made of."""
        return self._t.num_chunks

    @property
    def nbytes(self) -> int:
        """Bytes of every buffer the table references, each counted once."""
        return self._t.nbytes

    # ---- columns ----

    def column(self, key: Union[int, str]) -> Column:
        """The column at index ``key`` or named ``key`` (NotFound if none)."""
        if isinstance(key, str):
            i = self.schema.get_field_index(key)
            if i < 0:
                raise NotFound(f"no column named '{key}' (columns: {self.column_names})")
            key = i
        elif not isinstance(key, int):
            raise TypeError(f"a column is named by str or int, not {type(key).__name__}")
        if key < 0:
            key += self.num_columns
        if not 0 <= key < self.num_columns:
            raise IndexError(f"column index {key} out of range")
        return Column(self._t.column(key))

    def __getitem__(self, key: Union[int, str]) -> Column:
        return self.column(key)

    @property
    def columns(self) -> List[Column]:
        """Every column, in order."""
        return [Column(self._t.column(i)) for i in range(self.num_columns)]

    def __iter__(self) -> Iterator[Column]:
        return iter(self.columns)

    def slice(self, offset: int = 0, length: Optional[int] = None) -> "Table":
        """Rows [offset, offset + length) as a Table (zero-copy)."""
        if length is None:
            length = self.num_rows - offset
        return Table(self._t.slice(offset, length))

    # ---- conversions ----

    def to_pandas(self) -> Any:
        """The table as a pandas DataFrame (see Column.to_pandas for what
        is zero-copy and what copies). Zero-copy columns are read-only:
        ``df.copy()`` gives a writable frame."""
        pd = _pandas()
        series = [c.to_pandas() for c in self.columns]
        frame = pd.DataFrame({i: s for i, s in enumerate(series)}, copy=False)
        frame.columns = self.column_names
        return frame

    def to_pydict(self) -> Dict[str, np.ndarray]:
        """column name -> ``Column.to_numpy()``."""
        return {c.name: c.to_numpy() for c in self.columns}

    def equals(self, other: "Table", check_metadata: bool = False) -> bool:
        """Same schema and values (however chunked)."""
        if not isinstance(other, Table):
            return False
        return self._t.equals(other._t, check_metadata)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Table) and self.equals(other)

    __hash__ = None  # type: ignore[assignment]

    def validate(self, full: bool = False) -> None:
        """Checks the table's structure (full: every value too); raises
        InvalidArgument naming what is wrong."""
        self._t.validate(full)

    # ---- the Arrow PyCapsule protocol ----

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        """The table as an Arrow C stream of its record batches (a PyCapsule
        named "arrow_array_stream"), zero-copy. ``requested_schema`` may ask
        for the same fields (they come as they are); other fields are
        refused with InvalidArgument."""
        return self._t.export_stream(requested_schema)

    def __arrow_c_schema__(self) -> object:
        """The table's schema as an Arrow C schema (a PyCapsule named
        "arrow_schema")."""
        return self._t.export_schema()

    def __repr__(self) -> str:
        return self._t.text(5)


def read_ipc(source: Union[str, bytes, Any]) -> Table:
    """A Table from an Arrow IPC stream or file (path or bytes); see Table.read_ipc."""
    return Table.read_ipc(source)
