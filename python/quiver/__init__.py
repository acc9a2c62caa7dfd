"""Quiver from Python: Arrow tables in cluster memory, zero-copy.

Quiver shares Apache Arrow data between the processes and nodes of a
cluster: buffers are written once into memory every node maps at the same
address, and what travels is only a table's descriptor. This package is a
thin binding of Quiver's C++ API (include/quiver)::

    import quiver
    client = quiver.connect()                   # the cluster `quiver up` started
    client.put("prices", df)                    # a pandas DataFrame, once, over the nodes
    t = client.get("prices")                    # any process, any node: zero-copy
    a = t.column("price").to_numpy()            # a numpy view of cluster memory
    client.sql("SELECT count(*) FROM prices").to_pandas()
    oid = client.store.put(b"bytes")            # Plasma's object store API
    view = client.store.get(oid)                # a memoryview of cluster memory

Tables speak the Arrow PyCapsule protocol both ways: ``pyarrow.table(t)``,
``polars.from_arrow(t)``, ``duckdb.sql("FROM t")`` read them without a copy,
and ``client.put`` / ``Table.from_arrow`` take any producer.

See docs/python.md for the full guide.
"""

from . import _errors
from ._errors import (
    AlreadyExists,
    ClosedError,
    Error,
    InvalidArgument,
    NotFound,
    ObjectLost,
    OutOfMemory,
    PermissionDenied,
    TimeoutError,
    Unavailable,
)
from . import _quiver  # noqa: E402  (needs quiver._errors, imported above)
from ._client import (
    Client,
    ClusterStatus,
    NodeStatus,
    PutResult,
    Region,
    TableInfo,
    connect,
    default_state_dir,
)
from ._store import (
    Notification,
    ObjectID,
    ObjectInfo,
    ObjectStore,
    Subscription,
    TableLayout,
)
from ._table import Column, DataType, Field, Schema, Table, read_ipc

__version__ = "0.1.0"

__all__ = [
    "connect",
    "default_state_dir",
    "Client",
    "ClusterStatus",
    "NodeStatus",
    "PutResult",
    "Region",
    "TableInfo",
    "Table",
    "Column",
    "Schema",
    "Field",
    "DataType",
    "read_ipc",
    "ObjectID",
    "ObjectStore",
    "ObjectInfo",
    "Notification",
    "Subscription",
    "TableLayout",
    "Error",
    "NotFound",
    "AlreadyExists",
    "OutOfMemory",
    "Unavailable",
    "ObjectLost",
    "InvalidArgument",
    "TimeoutError",
    "PermissionDenied",
    "ClosedError",
]

del _errors
