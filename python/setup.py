"""Builds the quiver package for pip, offline, with the project's CMake.

``python3 -m pip install --no-build-isolation ./python`` runs this. The
extension ``quiver._quiver`` is the ``quiver_python`` target of the
project's CMake build: the one of an existing build tree is brought up to
date and reused ($QUIVER_BUILD_DIR, else ``build/release`` of the source
tree, when it has been configured), otherwise a build tree of its own is
configured in ``python/build/cmake`` for this interpreter and built (the
C++ layers too: a few minutes). Nothing is downloaded.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)


def _build_tree() -> str:
    """The CMake build tree to build the extension in."""
    given = os.environ.get("QUIVER_BUILD_DIR")
    if given:
        return os.path.abspath(given)
    default = os.path.join(SOURCE, "build", "release")
    if os.path.exists(os.path.join(default, "CMakeCache.txt")):
        return default
    own = os.path.join(HERE, "build", "cmake")
    if not os.path.exists(os.path.join(own, "CMakeCache.txt")):
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.check_call([
            "cmake", "-S", SOURCE, "-B", own, *generator, "-DCMAKE_BUILD_TYPE=Release",
            "-DQUIVER_BUILD_TESTS=OFF", "-DQUIVER_BUILD_BENCH=OFF",
            f"-DQUIVER_PYTHON={sys.executable}"])
    return own


class CMakeBuild(build_ext):
    """Builds (or brings up to date) the quiver_python target and copies the
    extension into the package."""

    def build_extension(self, ext: Extension) -> None:
        tree = _build_tree()
        jobs = os.environ.get("QUIVER_JOBS", str(os.cpu_count() or 2))
        subprocess.check_call(["cmake", "--build", tree, "--target", "quiver_python",
                               "--parallel", jobs])
        built = glob.glob(os.path.join(tree, "python", "quiver", "_quiver*.so"))
        if not built:
            raise RuntimeError(f"the build in {tree} made no quiver/_quiver*.so")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built[0], target)
        paths = os.path.join(tree, "python", "quiver", "_build_paths.py")
        shutil.copyfile(paths, os.path.join(os.path.dirname(target), "_build_paths.py"))


setup(ext_modules=[Extension("quiver._quiver", sources=[])],
      cmdclass={"build_ext": CMakeBuild})
