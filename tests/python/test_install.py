"""`python3 -m pip install --no-build-isolation ./python`, offline: into a
fresh venv that sees Debian's numpy and pandas (--system-site-packages),
with no package index at all (--no-index), reusing this build tree's
extension; the installed package then works against a cluster."""

from __future__ import annotations

import os
import subprocess
import sys

import quiver
from conftest import build_dir


def test_pip_install_offline_and_use(cluster, tmp_path):
    source = os.environ.get("QUIVER_SOURCE_DIR") or os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    python = str(venv / "bin" / "python")
    env = dict(os.environ, QUIVER_BUILD_DIR=build_dir(), PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)  # the installed copy, not the build tree's
    r = subprocess.run([python, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                        os.path.join(source, "python")], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    check = subprocess.run([python, "-c", f"""
import quiver, numpy as np
assert quiver.__file__.startswith({str(venv)!r}), quiver.__file__
c = quiver.connect({cluster.dir!r}, node=1)
c.put("installed", {{"v": np.arange(10)}})
print(int(c.get("installed").column("v").to_numpy().sum()), quiver.__version__)
c.rm("installed")
"""], env=env, capture_output=True, text=True, cwd=str(tmp_path))
    assert check.returncode == 0, check.stderr
    assert check.stdout.split() == ["45", quiver.__version__]
    # Type information ships with it.
    site = subprocess.run([python, "-c", "import quiver, os; print(os.path.dirname(quiver.__file__))"],
                          env=env, capture_output=True, text=True, cwd=str(tmp_path)).stdout.strip()
    assert os.path.exists(os.path.join(site, "py.typed"))
    assert os.path.exists(os.path.join(site, "_quiver.pyi"))
