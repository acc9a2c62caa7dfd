"""Runs a command against a fresh `quiver up` cluster, then stops it.

    python3 with_cluster.py COMMAND [ARGS...]

The cluster (3 nodes, 256 MiB regions) lives in a temporary state
directory given to the command as $QUIVER_DIR, so that
``quiver.connect()`` finds it as it finds any `quiver up` cluster. The exit
code is the command's. The test command runs examples/python_example.py so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile


def main() -> int:
    from conftest import quiver_bin  # the build tree's `quiver`

    state = os.path.join(tempfile.mkdtemp(prefix="quiver-example-"), "state")
    up = subprocess.run([quiver_bin(), "up", "--dir", state, "--nodes", "3", "--size",
                         "256M"], capture_output=True, text=True)
    if up.returncode != 0:
        sys.stderr.write(up.stderr)
        return up.returncode
    try:
        env = dict(os.environ, QUIVER_DIR=state)
        return subprocess.run(sys.argv[1:], env=env).returncode
    finally:
        subprocess.run([quiver_bin(), "down", "--dir", state], capture_output=True)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
