"""Fixtures of the Python package's tests: clusters started with `quiver up`.

Each test file gets a cluster of its own in a fresh state directory
(``quiver up --dir D``), stopped with ``quiver down`` at the end. Tests wait
on state (they poll the cluster's status), never for a length of time.

numpy, pandas and quiver are imported here unconditionally: a machine
without them fails these tests, it does not skip them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from typing import Callable, Dict, Iterator, List, Optional

import numpy  # noqa: F401  (missing numpy must fail the suite)
import pandas  # noqa: F401
import pytest

import quiver

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def build_dir() -> str:
    """The build tree the tests run against ($QUIVER_BUILD_DIR, else the
    one the imported package was built in)."""
    env = os.environ.get("QUIVER_BUILD_DIR")
    if env:
        return env
    from quiver import _build_paths

    return _build_paths.BINARY_DIR


def quiver_bin() -> str:
    return os.path.join(build_dir(), "quiver")


class Cluster:
    """A `quiver up` cluster in its own state directory."""

    def __init__(self, nodes: int = 3, size: str = "256M") -> None:
        self.dir = tempfile.mkdtemp(prefix="quiver-py-")
        os.rmdir(self.dir)  # `quiver up` makes it (mode 0700)
        self.nodes = nodes
        self.size = size
        self.up()

    def up(self) -> str:
        r = subprocess.run([quiver_bin(), "up", "--dir", self.dir, "--nodes",
                            str(self.nodes), "--size", self.size],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr + r.stdout
        return r.stdout + r.stderr

    def down(self) -> None:
        subprocess.run([quiver_bin(), "down", "--dir", self.dir], capture_output=True,
                       timeout=120)
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def config(self) -> str:
        return os.path.join(self.dir, "cluster.toml")

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        r = subprocess.run([quiver_bin(), *args[:1], "--dir", self.dir, *args[1:]],
                           capture_output=True, text=True, timeout=120)
        if check:
            assert r.returncode == 0, r.stderr + r.stdout
        return r

    def pids(self) -> List[int]:
        with open(os.path.join(self.dir, "pids")) as f:
            return [int(line.split()[-1]) for line in f if line.strip()]

    def python(self, code: str, *args: str, env: Optional[Dict[str, str]] = None,
               **kwargs) -> subprocess.Popen:
        """Starts a Python process running `code` (QDIR is the state dir)."""
        full = dict(os.environ)
        full["QDIR"] = self.dir
        full.update(env or {})
        return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args],
                                env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, **kwargs)

    def run_python(self, code: str, *args: str, timeout: float = 120) -> str:
        """Runs `code` in a Python process to its end; its stdout."""
        p = self.python(code, *args)
        out, err = p.communicate(timeout=timeout)
        assert p.returncode == 0, f"exit {p.returncode}\n{err}\n{out}"
        return out


def wait_until(pred: Callable[[], bool], what: str, timeout: float = 30) -> None:
    """Polls `pred` until it holds; fails naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def used(client: quiver.Client) -> Dict[int, int]:
    """Bytes in use in every node's region."""
    return {n.node: n.used for n in client.status().nodes}


def pins(client: quiver.Client, name: str) -> int:
    for t in client.status().tables:
        if t.name == name:
            return t.pins
    return 0


def wait_baseline(client: quiver.Client, baseline: Dict[int, int], what: str) -> None:
    """Waits until every region's use is back to `baseline`."""
    last: Dict[int, int] = {}

    def back() -> bool:
        nonlocal last
        last = used(client)
        return last == baseline

    try:
        wait_until(back, what)
    except AssertionError:
        raise AssertionError(f"{what}: region use {last}, baseline {baseline}")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    try:
        yield c
    finally:
        c.down()


@pytest.fixture(scope="module")
def client(cluster: Cluster) -> Iterator[quiver.Client]:
    c = quiver.connect(cluster.dir, node=0)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module", autouse=True)
def baseline(client: quiver.Client) -> Dict[int, int]:
    """Region use of the fresh cluster: what every test returns it to."""
    return used(client)
