"""The exceptions of the quiver package.

Every error a Quiver call reports is a :class:`quiver.Error`; the class says
what kind of failure it is, the message says what failed (the same text the
``quiver`` command line prints) and ``code`` names the C++ status code
(``"NotFound"``, ``"OutOfMemory"``, ``"ObjectLost"``...). Wrong Python types
raise Python's own ``TypeError``, and Ctrl-C during a blocking call raises
``KeyboardInterrupt``, as everywhere in Python.
"""

from __future__ import annotations

import builtins

__all__ = [
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


class Error(Exception):
    """Base class of every error a Quiver call reports.

    Attributes:
        code: the name of the C++ status code behind the error, e.g.
            ``"NotFound"`` or ``"Invalid"``.
    """

    code: str = "UnknownError"


class NotFound(Error, LookupError):
    """No such table, object, node or cluster (also a ``LookupError``)."""


class AlreadyExists(Error):
    """The name or object id is taken (``quiver rm`` / ``delete`` it first)."""


class OutOfMemory(Error):
    """No region (or this session's quota) has room for what was asked."""


class Unavailable(Error):
    """A daemon the call needs does not answer (stopped, killed, unreachable)."""


class ObjectLost(Unavailable):
    """The node holding the data is down; the message names it."""


class InvalidArgument(Error, ValueError):
    """A value the call cannot take (also a ``ValueError``)."""


class TimeoutError(Error, builtins.TimeoutError):  # noqa: A001 - the name is the API
    """A wait ran out of time (also the built-in ``TimeoutError``)."""


class PermissionDenied(Error, PermissionError):
    """Refused: another live client's table, or files when ``allow_files`` is off."""


class ClosedError(Error):
    """The client was closed, or belongs to the process this one was forked from."""


for _cls in (Error, NotFound, AlreadyExists, OutOfMemory, Unavailable, ObjectLost,
             InvalidArgument, TimeoutError, PermissionDenied, ClosedError):
    _cls.__module__ = "quiver"  # shown as quiver.NotFound, as the package exports it
del _cls
