"""A minimal Arrow C Data / C Stream producer and consumer in ctypes.

An independent second party for the PyCapsule tests: it shares no code
with Quiver. ``CountingProducer`` exports numpy columns (int64, float64,
utf8) as an ``arrow_array_stream`` or ``arrow_schema``/``arrow_array``
capsules and counts every release callback the consumer calls;
``consume_stream`` reads a producer's stream capsule back into numpy.
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_int, c_int64, c_void_p
from typing import Dict, List, Tuple

import numpy as np


class ArrowSchema(ctypes.Structure):
    pass


class ArrowArray(ctypes.Structure):
    pass


class ArrowArrayStream(ctypes.Structure):
    pass


SchemaRelease = ctypes.CFUNCTYPE(None, POINTER(ArrowSchema))
ArrayRelease = ctypes.CFUNCTYPE(None, POINTER(ArrowArray))
GetSchema = ctypes.CFUNCTYPE(c_int, POINTER(ArrowArrayStream), POINTER(ArrowSchema))
GetNext = ctypes.CFUNCTYPE(c_int, POINTER(ArrowArrayStream), POINTER(ArrowArray))
GetLastError = ctypes.CFUNCTYPE(c_char_p, POINTER(ArrowArrayStream))
StreamRelease = ctypes.CFUNCTYPE(None, POINTER(ArrowArrayStream))

ArrowSchema._fields_ = [
    ("format", c_char_p), ("name", c_char_p), ("metadata", c_char_p), ("flags", c_int64),
    ("n_children", c_int64), ("children", POINTER(POINTER(ArrowSchema))),
    ("dictionary", POINTER(ArrowSchema)), ("release", SchemaRelease),
    ("private_data", c_void_p)]
ArrowArray._fields_ = [
    ("length", c_int64), ("null_count", c_int64), ("offset", c_int64),
    ("n_buffers", c_int64), ("n_children", c_int64), ("buffers", POINTER(c_void_p)),
    ("children", POINTER(POINTER(ArrowArray))), ("dictionary", POINTER(ArrowArray)),
    ("release", ArrayRelease), ("private_data", c_void_p)]
ArrowArrayStream._fields_ = [
    ("get_schema", GetSchema), ("get_next", GetNext), ("get_last_error", GetLastError),
    ("release", StreamRelease), ("private_data", c_void_p)]

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [c_void_p, c_char_p, c_void_p]
_api.PyCapsule_GetPointer.restype = c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, c_char_p]
_api.PyCapsule_IsValid.restype = c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, c_char_p]
_get_pointer_raw = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(
    ("PyCapsule_GetPointer", _api))

SCHEMA, ARRAY, STREAM = b"arrow_schema", b"arrow_array", b"arrow_array_stream"
FORMATS = {np.dtype("int64"): b"l", np.dtype("float64"): b"g"}


def capsule_pointer(capsule: object, name: bytes) -> int:
    assert _api.PyCapsule_IsValid(capsule, name) == 1, f"not a {name!r} capsule"
    return _api.PyCapsule_GetPointer(capsule, name)


class CountingProducer:
    """Exports columns of numpy arrays (int64, float64, or object arrays of
    str/None as utf8) in batches of ``batch_rows`` and counts the release
    calls of every structure it hands out."""

    def __init__(self, columns: Dict[str, np.ndarray], batch_rows: int = 1000) -> None:
        self.columns = columns
        self.rows = len(next(iter(columns.values())))
        self.batch_rows = batch_rows
        self.released: Dict[str, int] = {"stream": 0, "schema": 0, "array": 0}
        self.exported: Dict[str, int] = {"stream": 0, "schema": 0, "array": 0}
        self._alive: Dict[int, object] = {}  # address -> what keeps it valid
        self._schema_release = SchemaRelease(self._release_schema)
        self._array_release = ArrayRelease(self._release_array)
        self._stream_release = StreamRelease(self._release_stream)
        self._get_schema = GetSchema(self._stream_get_schema)
        self._get_next = GetNext(self._stream_get_next)
        self._last_error = GetLastError(lambda s: None)
        self._destructors: Dict[bytes, object] = {}
        self._next_row = 0

    # ---- structures ----

    def _fill_schema(self, out: ArrowSchema) -> None:
        children, keep = [], []
        for name, values in self.columns.items():
            child = ArrowSchema()
            fmt = b"u" if values.dtype == object else FORMATS[values.dtype]
            child.format, child.name, child.flags = fmt, name.encode(), 2
            child.n_children = 0
            child.release = self._schema_release
            self.exported["schema"] += 1
            self._alive[ctypes.addressof(child)] = child
            children.append(child)
        pointers = (POINTER(ArrowSchema) * len(children))(
            *[ctypes.pointer(c) for c in children])
        keep.append(pointers)
        out.format, out.name, out.metadata, out.flags = b"+s", b"", None, 0
        out.n_children = len(children)
        out.children = ctypes.cast(pointers, POINTER(POINTER(ArrowSchema)))
        out.dictionary = None
        out.release = self._schema_release
        out.private_data = None
        self.exported["schema"] += 1
        self._alive[ctypes.addressof(out)] = (children, keep)

    def _column_array(self, values: np.ndarray, start: int, n: int) -> ArrowArray:
        a = ArrowArray()
        keep: List[object] = []
        piece = values[start:start + n]
        if values.dtype == object:
            valid = np.array([v is not None for v in piece], dtype=bool)
            encoded = [(v or "").encode() for v in piece]
            offsets = np.zeros(n + 1, dtype=np.int32)
            offsets[1:] = np.cumsum([len(e) for e in encoded])
            data = np.frombuffer(b"".join(encoded) or b"\0", dtype=np.uint8).copy()
            bitmap = np.packbits(valid, bitorder="little")
            nulls = int(n - valid.sum())
            bufs = [bitmap.ctypes.data if nulls else None, offsets.ctypes.data,
                    data.ctypes.data]
            keep += [offsets, data, bitmap]
        else:
            piece = np.ascontiguousarray(piece)
            nulls = 0
            bufs = [None, piece.ctypes.data]
            keep.append(piece)
        buffers = (c_void_p * len(bufs))(*bufs)
        keep.append(buffers)
        a.length, a.null_count, a.offset = n, nulls, 0
        a.n_buffers, a.n_children = len(bufs), 0
        a.buffers = ctypes.cast(buffers, POINTER(c_void_p))
        a.children, a.dictionary = None, None
        a.release = self._array_release
        a.private_data = None
        self.exported["array"] += 1
        self._alive[ctypes.addressof(a)] = keep
        return a

    def _fill_batch(self, out: ArrowArray, start: int, n: int) -> None:
        children = [self._column_array(v, start, n) for v in self.columns.values()]
        pointers = (POINTER(ArrowArray) * len(children))(
            *[ctypes.pointer(c) for c in children])
        buffers = (c_void_p * 1)(None)
        out.length, out.null_count, out.offset = n, 0, 0
        out.n_buffers, out.n_children = 1, len(children)
        out.buffers = ctypes.cast(buffers, POINTER(c_void_p))
        out.children = ctypes.cast(pointers, POINTER(POINTER(ArrowArray)))
        out.dictionary = None
        out.release = self._array_release
        out.private_data = None
        self.exported["array"] += 1
        self._alive[ctypes.addressof(out)] = (children, pointers, buffers)

    # ---- release callbacks: each structure once ----

    def _release_schema(self, p: "POINTER(ArrowSchema)") -> None:
        s = p.contents
        for i in range(s.n_children):
            child = s.children[i].contents
            if child.release:
                child.release(s.children[i])
        self.released["schema"] += 1
        self._alive.pop(ctypes.addressof(s), None)
        s.release = SchemaRelease()

    def _release_array(self, p: "POINTER(ArrowArray)") -> None:
        a = p.contents
        for i in range(a.n_children):
            child = a.children[i].contents
            if child.release:
                child.release(a.children[i])
        self.released["array"] += 1
        self._alive.pop(ctypes.addressof(a), None)
        a.release = ArrayRelease()

    def _release_stream(self, p: "POINTER(ArrowArrayStream)") -> None:
        self.released["stream"] += 1
        p.contents.release = StreamRelease()

    def _stream_get_schema(self, stream, out) -> int:
        self._fill_schema(out.contents)
        return 0

    def _stream_get_next(self, stream, out) -> int:
        if self._next_row >= self.rows:
            ctypes.memset(out, 0, ctypes.sizeof(ArrowArray))
            return 0
        n = min(self.batch_rows, self.rows - self._next_row)
        self._fill_batch(out.contents, self._next_row, n)
        self._next_row += n
        return 0

    def _destroy_capsule(self, name: bytes, kind: type, capsule: int) -> None:
        ptr = _get_pointer_raw(capsule, name)
        s = kind.from_address(ptr)
        if s.release:
            s.release(ctypes.pointer(s))
        self._alive.pop(ptr, None)

    def _capsule(self, struct: ctypes.Structure, name: bytes) -> object:
        kind = type(struct)
        destructor = self._destructors.get(name)
        if destructor is None:
            destructor = ctypes.CFUNCTYPE(None, c_void_p)(
                lambda c, n=name, k=kind: self._destroy_capsule(n, k, c))
            self._destructors[name] = destructor
        self._alive[ctypes.addressof(struct)] = struct
        return _api.PyCapsule_New(ctypes.addressof(struct), name,
                                  ctypes.cast(destructor, c_void_p))

    # ---- the PyCapsule protocol ----

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        assert requested_schema is None
        self._next_row = 0
        s = ArrowArrayStream()
        s.get_schema, s.get_next = self._get_schema, self._get_next
        s.get_last_error, s.release = self._last_error, self._stream_release
        s.private_data = None
        self.exported["stream"] += 1
        return self._capsule(s, STREAM)

    def __arrow_c_schema__(self) -> object:
        s = ArrowSchema()
        self._fill_schema(s)
        return self._capsule(s, SCHEMA)

    def all_released(self) -> bool:
        return self.released == self.exported


class ArrayProducer(CountingProducer):
    """The same columns as one record batch through __arrow_c_array__."""

    def __arrow_c_array__(self, requested_schema: object = None) -> Tuple[object, object]:
        assert requested_schema is None
        s = ArrowSchema()
        self._fill_schema(s)
        a = ArrowArray()
        self._fill_batch(a, 0, self.rows)
        return self._capsule(s, SCHEMA), self._capsule(a, ARRAY)

    __arrow_c_stream__ = None  # type: ignore[assignment]


def _read_column(schema: ArrowSchema, array: ArrowArray) -> np.ndarray:
    fmt = schema.format
    n, off = array.length, array.offset
    if fmt in (b"l", b"g"):
        dtype = np.int64 if fmt == b"l" else np.float64
        ptr = array.buffers[1]
        values = np.ctypeslib.as_array(ctypes.cast(ptr, POINTER(ctypes.c_uint8)),
                                       shape=((off + n) * 8,)).view(dtype)[off:off + n].copy()
        return values
    if fmt == b"u":
        offsets = np.ctypeslib.as_array(ctypes.cast(array.buffers[1], POINTER(ctypes.c_int32)),
                                        shape=(off + n + 1,))[off:]
        total = int(offsets[-1])
        data = ctypes.string_at(array.buffers[2], total) if total else b""
        valid = None
        if array.null_count != 0 and array.buffers[0]:
            bits = np.ctypeslib.as_array(ctypes.cast(array.buffers[0], POINTER(ctypes.c_uint8)),
                                         shape=((off + n + 7) // 8,))
            valid = np.unpackbits(bits, bitorder="little")[off:off + n].astype(bool)
        out = np.empty(n, dtype=object)
        for i in range(n):
            if valid is None or valid[i]:
                out[i] = data[offsets[i]:offsets[i + 1]].decode()
        return out
    raise AssertionError(f"the test consumer reads l, g and u, not {fmt!r}")


def consume_stream(capsule: object) -> Tuple[Dict[str, np.ndarray], int]:
    """Reads a producer's stream capsule into numpy (copies), releasing
    every structure once; returns the columns and the number of batches.
    The capsule's stream is moved out and marked released, as a consumer
    must."""
    ptr = capsule_pointer(capsule, STREAM)
    original = ArrowArrayStream.from_address(ptr)
    stream = ArrowArrayStream()
    ctypes.memmove(ctypes.addressof(stream), ptr, ctypes.sizeof(ArrowArrayStream))
    original.release = StreamRelease()  # moved: the capsule must not release it
    schema = ArrowSchema()
    assert stream.get_schema(ctypes.pointer(stream), ctypes.pointer(schema)) == 0
    names = [schema.children[i].contents.name.decode() for i in range(schema.n_children)]
    parts: Dict[str, list] = {n: [] for n in names}
    batches = 0
    while True:
        batch = ArrowArray()
        assert stream.get_next(ctypes.pointer(stream), ctypes.pointer(batch)) == 0
        if not batch.release:
            break
        batches += 1
        for i, name in enumerate(names):
            parts[name].append(_read_column(schema.children[i].contents,
                                            batch.children[i].contents))
        batch.release(ctypes.pointer(batch))
        assert not batch.release, "release must mark the array released"
    schema.release(ctypes.pointer(schema))
    assert not schema.release
    stream.release(ctypes.pointer(stream))
    assert not stream.release
    return {n: np.concatenate(p) if p else np.empty(0) for n, p in parts.items()}, batches
