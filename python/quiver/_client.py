"""quiver.connect and quiver.Client: a process's way into a Quiver cluster."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, List, Optional, Sequence, Union

from . import _quiver
from ._convert import batches_from
from ._store import ObjectStore
from ._table import Table

PathLike = Union[str, "os.PathLike[str]"]


@dataclasses.dataclass(frozen=True)
class TableInfo:
    """A published table as one node sees it (``quiver ls``)."""

    name: str
    chunks: int
    rows: int
    publishers: List[int]  # nodes of the clients that published it
    nodes: List[int]  # nodes whose regions hold its data
    lost: bool  # a node holding its data is down
    lost_reason: str
    pins: int  # readers holding it at that node
    orphaned: bool  # every publisher is gone: anyone may remove it
    local_only: bool
    incomplete: bool
    incomplete_reason: str


@dataclasses.dataclass(frozen=True)
class NodeStatus:
    """One node of ``Client.status()`` (``quiver status``)."""

    node: int
    online: bool
    control: str
    region_base: int
    region_size: int
    used: int  # bytes of the region in use
    free: int
    largest_free: int
    live_allocations: int
    generation: int  # +1 each time its daemon takes the region over
    backing: str
    sessions: int
    recovering: bool


@dataclasses.dataclass(frozen=True)
class ClusterStatus:
    """What ``Client.status()`` returns: every node and every table."""

    cluster: str
    node: int  # the node that answered (this client's)
    nodes: List[NodeStatus]
    tables: List[TableInfo]


@dataclasses.dataclass(frozen=True)
class PutResult:
    """What ``Client.put`` wrote (``quiver put``'s summary line)."""

    name: str
    rows: int
    bytes: int  # of cluster memory the table's buffers take
    chunks: int
    nodes: List[int]  # whose regions hold them
    seconds: float


@dataclasses.dataclass(frozen=True)
class Region:
    """A node's region: mapped at ``base`` in every process of the cluster."""

    node: int
    base: int
    size: int

    def contains(self, address: int, length: int = 1) -> bool:
        """Whether [address, address + length) lies in the region."""
        return self.base <= address and address + length <= self.base + self.size


def _source(data: Any, chunk_bytes: int = 0) -> Any:
    """What put and put_table hand the extension."""
    if isinstance(data, Table):
        return data._t
    batches = batches_from(data, chunk_bytes)
    if batches is not None:
        return batches
    if (getattr(data, "__arrow_c_stream__", None) is not None
            or getattr(data, "__arrow_c_array__", None) is not None):
        return data
    raise TypeError(
        "expected a pandas DataFrame, a dict of numpy arrays, a quiver.Table or an "
        f"Arrow PyCapsule producer (__arrow_c_stream__), got {type(data).__name__}")


class Client:
    """A connection of this process to a Quiver cluster, as a client of one node.

    Made by :func:`quiver.connect`. It maps every node's region at its base
    address and holds a session with each daemon it uses; what it writes
    and the pins its reads take belong to those sessions and are released
    however the process ends.

    Threads: a Client may be used from several threads at once; every call
    that waits on the cluster releases the GIL, and Ctrl-C interrupts it
    (KeyboardInterrupt; a put then publishes nothing and frees what it
    wrote). A process is a client of one node of a cluster.

    Lifetime: ``close()`` (or ``with quiver.connect() as c:``) ends the
    sessions; Tables, Columns, numpy arrays and memoryviews got through the
    client stay valid after it, each keeping its data pinned until it is
    gone. After ``os.fork()`` the child cannot use the parent's Client
    (ClosedError): it calls ``quiver.connect()`` again.
    """

    def __init__(self, session: "_quiver._Session") -> None:
        """Internal: use :func:`quiver.connect`."""
        self._s = session
        self._store: Optional[ObjectStore] = None

    # ---- what it is connected to ----

    @property
    def node(self) -> int:
        """The node this process is a client of."""
        return self._s.node

    @property
    def state_dir(self) -> Optional[str]:
        """The `quiver up` state directory it was found in (None: a cluster file)."""
        return self._s.state_dir or None

    @property
    def config_path(self) -> str:
        """The cluster file."""
        return self._s.config_path

    @property
    def closed(self) -> bool:
        """Whether close() was called (or this process is a fork of its owner's)."""
        return self._s.closed

    @property
    def regions(self) -> List[Region]:
        """Every node's region: where cluster memory is mapped in this process."""
        return [Region(n, base, size) for n, base, size in self._s.regions()]

    @property
    def lost_pins(self) -> int:
        """Pins of tables and objects got here that could not be kept (the
        process was stopped past its session's lease): what they hold may
        have been reused; get them again."""
        return self._s.lost_pins

    # ---- tables ----

    def put(self, name: str, data: Any, *, nodes: Optional[Sequence[int]] = None,
            chunk_bytes: int = 0) -> PutResult:
        """Writes ``data`` into cluster memory once and publishes it as ``name``.

        ``data`` is a pandas DataFrame, a dict of numpy arrays (or lists), a
        quiver.Table or any Arrow PyCapsule producer (``__arrow_c_stream__``
        or ``__arrow_c_array__``: pyarrow, polars, DuckDB...). As ``quiver
        put`` does, the rows are cut into chunks of about ``chunk_bytes``
        (0: 64 MiB, at most a sixteenth of the smallest region) placed round
        robin over ``nodes`` (default: every node online), and the table is
        published only once every chunk is written: a failure (a full
        cluster, bad input, Ctrl-C) frees what was written and publishes
        nothing.

        Raises AlreadyExists when ``name`` is published (``rm`` it first),
        OutOfMemory when no node has room, TypeError for data of another
        kind.
        """
        if not isinstance(name, str):
            raise TypeError(f"a table name is a str, not {type(name).__name__}")
        d = self._s.put(name, _source(data, int(chunk_bytes)),
                        None if nodes is None else list(nodes),
                        int(chunk_bytes))
        return PutResult(d["name"], d["rows"], d["bytes"], d["chunks"], list(d["nodes"]),
                         d["seconds"])

    def get(self, name: str, *, wait_ms: int = 0, min_chunks: int = 1) -> Table:
        """The table published as ``name``, zero-copy from cluster memory.

        Its rows are in order (a HugeTable's chunks by first row; a gap or
        an overlap is an error, never a partial table). The chunks stay
        pinned at their owners while the Table, a Column or an array made
        from them lives. ``wait_ms``: wait that long for the name (and
        ``min_chunks`` chunks) to appear (< 0: for ever); NotFound after.
        """
        if not isinstance(name, str):
            raise TypeError(f"a table name is a str, not {type(name).__name__}")
        return Table(self._s.get(name, int(wait_ms), int(min_chunks)))

    def ls(self) -> List[TableInfo]:
        """The published tables as this node sees them (``quiver ls``)."""
        return [TableInfo(**d) for d in self._s.ls()]

    def rm(self, name: str) -> None:
        """Unpublishes ``name`` (``quiver rm``). Readers keep what they hold;
        memory returns when the last of them lets go. PermissionDenied for a
        table a live client published; NotFound if none is."""
        if not isinstance(name, str):
            raise TypeError(f"a table name is a str, not {type(name).__name__}")
        self._s.rm(name)

    def sql(self, query: str, node: Optional[int] = None, publish: Optional[str] = None,
            *, allow_files: bool = False) -> Table:
        """Runs DuckDB SQL over every published table, as ``quiver sql`` does.

        Each table this node can read is a view of its name, scanned
        zero-copy in cluster memory. By default a query reaches those tables
        and nothing else: no file, no extension, no setting
        (PermissionDenied says so); ``allow_files=True`` lets it read and
        write files as this user.

        Returns the result (in DuckDB's memory). With ``publish``, the result
        is copied into cluster memory (``node``'s region, default this
        client's) and published under that name, and the returned Table is
        that published table. DuckDB runs in this process, a client of
        ``self.node``: ``node`` places a published result; without
        ``publish`` it must be None or this client's node.
        """
        if not isinstance(query, str):
            raise TypeError(f"a query is a str, not {type(query).__name__}")
        return Table(self._s.sql(query, bool(allow_files), publish, node))

    # ---- the cluster ----

    def status(self) -> ClusterStatus:
        """Every node (online, memory use) and table, as ``quiver status``."""
        d = self._s.status()
        return ClusterStatus(d["cluster"], d["node"], [NodeStatus(**n) for n in d["nodes"]],
                             [TableInfo(**t) for t in d["tables"]])

    @property
    def store(self) -> ObjectStore:
        """The cluster's object store (Plasma's API; made on first use)."""
        if self._store is None:
            self._s.regions()  # raises ClosedError on a closed or forked client
            self._store = ObjectStore(_quiver._Store(self._s))
        return self._store

    # ---- lifetime ----

    def close(self) -> None:
        """Ends the sessions (sending what is queued first). Idempotent.
        Data got through the client stays valid; calls raise ClosedError."""
        self._s.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        where = self.state_dir or self.config_path
        state = " closed" if self.closed else ""
        return f"quiver.Client(node {self.node} of {where}{state})"


def connect(dir: Optional[PathLike] = None, *, config: Optional[PathLike] = None,
            node: Optional[int] = None, connect_timeout_ms: int = 10000,
            call_timeout_ms: int = 60000) -> Client:
    """Connects this process to a Quiver cluster as a client of one node.

    Without ``config``, finds the cluster ``quiver up`` keeps the way the
    command line does: in ``dir``, else ``$QUIVER_DIR``, else
    ``$XDG_RUNTIME_DIR/quiver``, else ``/tmp/quiver-UID``; the node is
    ``node``, else the first whose daemon runs. With ``config``, uses that
    cluster file and ``node`` (default 0).

    Raises NotFound ("no cluster in DIR: start one with `quiver up`"),
    Unavailable (the node's daemon is not running), InvalidArgument (no
    such node).
    """
    if node is not None and not isinstance(node, int):
        raise TypeError(f"node is an int, not {type(node).__name__}")
    session = _quiver._connect(
        None if dir is None else os.fspath(dir),
        None if config is None else os.fspath(config),
        node, int(connect_timeout_ms), int(call_timeout_ms))
    return Client(session)


def default_state_dir() -> str:
    """The state directory `quiver up` uses by default (see connect)."""
    return _quiver._default_state_dir()
