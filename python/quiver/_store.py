"""The object store: Plasma's Python API over the whole cluster.

``client.store`` is an ObjectStore (include/quiver/store.h, docs/store.md):
objects of bytes (and metadata) named by 20-byte ObjectIDs unique in the
cluster, written once into any node's memory and read zero-copy from every
node as memoryviews.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from . import _quiver
from ._errors import InvalidArgument, TimeoutError
from ._table import Table


class ObjectID:
    """The name of a store object: 20 bytes, as Plasma's.

    ``ObjectID(b)`` takes exactly 20 bytes; ``from_random()`` draws them
    from the system's random source; ``from_name(s)`` is the SHA-1 of a
    name (the same id in every process). Hashable, comparable, picklable.
    """

    __slots__ = ("_id",)

    def __init__(self, binary: Union[bytes, bytearray, memoryview]) -> None:
        """An id from exactly 20 bytes (InvalidArgument, a ValueError, else)."""
        if not isinstance(binary, (bytes, bytearray, memoryview)):
            raise TypeError(f"an ObjectID is made of 20 bytes, not {type(binary).__name__}")
        binary = bytes(binary)
        if len(binary) != 20:
            raise InvalidArgument(f"an ObjectID is 20 bytes, got {len(binary)}")
        self._id = binary

    @classmethod
    def from_random(cls) -> "ObjectID":
        """A random id (getrandom(2))."""
        return cls(_quiver._id_from_random())

    @classmethod
    def from_name(cls, name: str) -> "ObjectID":
        """The SHA-1 of ``name``: the same id for the same name everywhere."""
        return cls(_quiver._id_from_name(name))

    @classmethod
    def from_hex(cls, text: str) -> "ObjectID":
        """An id from 40 hexadecimal digits."""
        try:
            return cls(bytes.fromhex(text))
        except ValueError as e:
            raise InvalidArgument(f"not 40 hex digits: {text!r}") from e

    def binary(self) -> bytes:
        """The 20 bytes."""
        return self._id

    def hex(self) -> str:
        """40 lower-case hexadecimal digits."""
        return self._id.hex()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObjectID) and self._id == other._id

    def __hash__(self) -> int:
        return hash(self._id)

    def __lt__(self, other: "ObjectID") -> bool:
        return self._id < other._id

    def __reduce__(self) -> Tuple[Any, Tuple[bytes]]:
        return (ObjectID, (self._id,))

    def __repr__(self) -> str:
        return f"ObjectID({self.hex()})"


@dataclasses.dataclass(frozen=True)
class ObjectInfo:
    """One object as ``ObjectStore.list`` sees it."""

    object_id: ObjectID
    state: str  # "creating", "sealed" or "spilled"
    home: int  # the node whose memory holds it
    data_size: int
    metadata_size: int
    pins: int  # readers holding it, cluster-wide
    last_use: float  # seconds since the epoch


@dataclasses.dataclass(frozen=True)
class Notification:
    """A store event: an object sealed, deleted or evicted at its home."""

    kind: str  # "sealed", "deleted" or "evicted"
    object_id: ObjectID
    home: int
    seq: int  # per home: 1, 2, ... in the order they happened there
    data_size: int
    metadata_size: int


@dataclasses.dataclass(frozen=True)
class TableLayout:
    """How ``ObjectStore.put_table`` stored a table."""

    bytes: int  # the table's Arrow IPC stream(s)
    parts: List[ObjectID]  # empty: one object
    part_homes: List[int]


class Subscription:
    """Seal, delete and evict events of every node, in each home's order.

    Iterating blocks until the next event (Ctrl-C interrupts it);
    ``poll(timeout_ms)`` returns what came within the time. Safe to use
    from one thread at a time.
    """

    def __init__(self, handle: "_quiver._Subscription") -> None:
        """Internal: subscriptions come from ``ObjectStore.subscribe``."""
        self._s = handle
        self._ready: List[Notification] = []

    @staticmethod
    def _event(t: tuple) -> Notification:
        kind, oid, home, seq, data_size, metadata_size = t
        return Notification(kind, ObjectID(oid), home, seq, data_size, metadata_size)

    def poll(self, timeout_ms: int = 0) -> List[Notification]:
        """The events seen within ``timeout_ms`` (< 0: wait for at least one)."""
        if self._ready:
            out, self._ready = self._ready, []
            return out
        return [self._event(t) for t in self._s.next(timeout_ms)]

    def __iter__(self) -> Iterator[Notification]:
        return self

    def __next__(self) -> Notification:
        while not self._ready:
            self._ready = [self._event(t) for t in self._s.next(-1)]
        return self._ready.pop(0)

    def get_next_notification(self, timeout_ms: int = -1) -> Tuple[ObjectID, int, int]:
        """Plasma's shape: (object id, data size, metadata size) of the next
        event, sizes -1 for a deletion or eviction. TimeoutError if none
        came within ``timeout_ms`` (< 0: wait for ever)."""
        if not self._ready:
            self._ready = [self._event(t) for t in self._s.next(timeout_ms)]
        if not self._ready:
            raise TimeoutError(f"no store event within {timeout_ms} ms")
        n = self._ready.pop(0)
        if n.kind == "sealed":
            return n.object_id, n.data_size, n.metadata_size
        return n.object_id, -1, -1

    @property
    def cursor(self) -> str:
        """Where the subscription stands ("0:12,1:7"): resume with subscribe(cursor)."""
        return self._s.cursor

    def lost(self) -> List[int]:
        """Homes whose event log dropped events this subscription had not
        seen (list() to resync); cleared by the call."""
        return list(self._s.take_lost())


IdLike = Union[ObjectID, bytes]


class ObjectStore:
    """Plasma's object store API across every node of the cluster.

    Objects are written once (``create`` + ``seal``, or ``put``) into this
    node's memory, or another node's when it is full or when ``node`` says
    so, and read zero-copy from any process of any node with ``get``:
    memoryviews of cluster memory, pinned while a view lives or until
    ``release``, whichever is later. What a client creates and pins belongs
    to its sessions: a process that dies leaves no half-created object and
    no pin behind.

    Thread-safe: one ObjectStore (one Client) may be used from several
    threads. Blocking calls release the GIL and are interrupted by Ctrl-C.
    """

    def __init__(self, handle: "_quiver._Store") -> None:
        """Internal: use ``client.store``."""
        self._s = handle
        # Objects this client is creating: their writable view and its
        # exporter (which counts the views made from it).
        self._creating: Dict[ObjectID, Tuple[memoryview, Any]] = {}

    # ---- writing ----

    def create(self, object_id: ObjectID, data_size: int, metadata: bytes = b"", *,
               node: Optional[int] = None) -> memoryview:
        """A new object of ``data_size`` bytes (and ``metadata``), writable
        through the returned memoryview until ``seal`` or ``abort``, which
        release that view (a view made from it, e.g. by numpy, is the
        writer's to drop first). AlreadyExists if the id lives anywhere in
        the cluster; OutOfMemory when no node has room."""
        view = self._s.create(object_id, int(data_size), bytes(metadata), node)
        self._creating[object_id] = (view, view.obj)
        return view

    def seal(self, object_id: ObjectID) -> None:
        """Makes the object immutable and readable everywhere (creator only)."""
        self._s.seal(object_id)
        entry = self._creating.pop(object_id, None)
        if entry is not None:
            try:
                entry[0].release()
            except BufferError:
                pass  # exported further: the bytes stay valid, sealed

    def abort(self, object_id: ObjectID) -> None:
        """Drops an object this client is creating; its memory returns at once.

        InvalidArgument while a view made from its buffer (by numpy, a
        memoryview slice...) still exists: the memory would be reused under
        it."""
        entry = self._creating.get(object_id)
        if entry is not None:
            view, exporter = entry
            try:
                view.release()
            except BufferError:
                pass
            if _quiver._exports(exporter) > 0:
                raise InvalidArgument(
                    f"object {object_id.hex()} is still exported by a view of its buffer "
                    "(numpy.frombuffer, a memoryview slice...): drop it before abort")
            del self._creating[object_id]
        self._s.abort(object_id)

    def create_and_seal(self, object_id: ObjectID, data: Any, metadata: bytes = b"", *,
                        node: Optional[int] = None) -> None:
        """Creates, writes and seals an object in one call (one round trip for
        objects up to 64 KiB)."""
        self._s.put(object_id, data, bytes(metadata), node)

    def put(self, data: Any, object_id: Optional[ObjectID] = None, metadata: bytes = b"",
            *, node: Optional[int] = None) -> ObjectID:
        """Stores the bytes of ``data`` (any contiguous buffer: bytes,
        bytearray, memoryview, numpy array) as a sealed object and returns
        its id (a random one unless given)."""
        if object_id is None:
            object_id = ObjectID.from_random()
        self._s.put(object_id, data, bytes(metadata), node)
        return object_id

    # ---- reading ----

    def get_buffers(self, object_ids: Sequence[ObjectID], timeout_ms: int = -1,
                    with_meta: bool = False) -> List[Any]:
        """Each object's data as a read-only memoryview of cluster memory
        (no copy), or None if it was not sealed within ``timeout_ms``
        (0: do not wait; < 0: wait for ever). ``with_meta``: (metadata,
        data) pairs. One round trip per home for the whole list.

        Each memoryview holds one Get reference: ``release(id)`` or the end
        of the last view lets go of it. ObjectLost names a dead home."""
        return self._s.get(object_ids, int(timeout_ms), bool(with_meta))

    def get(self, object_ids: Union[ObjectID, Sequence[ObjectID]],
            timeout_ms: int = -1) -> Any:
        """``get_buffers`` of a list, or of one id (then one result)."""
        if isinstance(object_ids, ObjectID):
            return self._s.get([object_ids], int(timeout_ms), False)[0]
        return self._s.get(object_ids, int(timeout_ms), False)

    def get_metadata(self, object_ids: Sequence[ObjectID],
                     timeout_ms: int = -1) -> List[Optional[memoryview]]:
        """Each object's metadata as a read-only memoryview, or None."""
        pairs = self._s.get(object_ids, int(timeout_ms), True)
        return [None if p is None else p[0] for p in pairs]

    def release(self, object_ids: Union[ObjectID, Sequence[ObjectID]]) -> None:
        """Lets go of one Get reference of an object, or of each of a list
        of them (views still held stay valid). NotFound names the ids this
        client holds no reference of (the others are released)."""
        self._s.release(object_ids)

    def contains(self, object_id: ObjectID) -> bool:
        """Whether the object is sealed somewhere in the cluster."""
        return self._s.contains(object_id)

    def list(self) -> Dict[ObjectID, ObjectInfo]:
        """Every object of every reachable node."""
        out = {}
        for oid, state, home, data_size, metadata_size, pins, last_use in self._s.list():
            i = ObjectID(oid)
            out[i] = ObjectInfo(i, state, home, data_size, metadata_size, pins, last_use)
        return out

    # ---- removing ----

    def delete(self, object_ids: Union[ObjectID, Sequence[ObjectID]]) -> None:
        """Removes sealed objects: new gets miss them at once; their memory
        returns when the last reader anywhere lets go."""
        if isinstance(object_ids, ObjectID):
            object_ids = [object_ids]
        self._s.delete(object_ids)

    def evict(self, num_bytes: int, *, node: Optional[int] = None) -> int:
        """Evicts least-recently-used sealed objects that no one pins from
        ``node``'s region (default: this node's) until ``num_bytes`` are
        freed; returns the bytes freed. This client's kept pins (of objects
        it got and released) are dropped first."""
        return self._s.evict(int(num_bytes), node)

    def drop_cached_pins(self) -> None:
        """Lets go of the pins kept for repeated gets (docs/store.md)."""
        self._s.drop_cached_pins()

    def stats(self, node: int) -> Dict[str, int]:
        """The store's counters at ``node``."""
        return self._s.stats(node)

    # ---- events ----

    def subscribe(self, cursor: Optional[str] = None, *,
                  from_start: bool = False) -> Subscription:
        """Events of every node from now on, as Plasma's subscribe; or after a
        saved ``cursor``; or (``from_start``) every event still in the homes'
        logs."""
        sub = Subscription(self._s.subscribe(cursor or ""))
        if cursor is None and not from_start:
            while sub._s.next(0):  # what happened before now
                pass
        return sub

    # ---- tables ----

    def put_table(self, object_id: ObjectID, data: Any, *, node: Optional[int] = None,
                  part_bytes: int = 0) -> TableLayout:
        """Stores a table (a quiver.Table, a pandas DataFrame, a dict of numpy
        arrays or any Arrow PyCapsule producer) as an Arrow IPC stream in
        cluster memory: one object, or parts over several nodes when no
        node has room. All or nothing."""
        from ._client import _source

        d = self._s.put_table(object_id, _source(data), node, int(part_bytes))
        return TableLayout(d["bytes"], [ObjectID(p) for p in d["parts"]],
                           list(d["part_homes"]))

    def get_table(self, object_id: ObjectID, timeout_ms: int = 0) -> Table:
        """A table put with put_table, zero-copy (pinned while referenced)."""
        return Table(self._s.get_table(object_id, int(timeout_ms)))

    def delete_table(self, object_id: ObjectID) -> None:
        """Deletes a table put with put_table, and its parts."""
        self._s.delete_table(object_id)

    def __repr__(self) -> str:
        return "quiver.ObjectStore"
