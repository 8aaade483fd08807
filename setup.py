"""Builds the Python module with the project's CMake (python/CMakeLists.txt) for
`pip install --no-build-isolation .`: configures a build tree of the library and the module only,
builds the `tapeflow_python` target and packages what it puts in <build>/python/tapeflow."""

import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


def version():
    text = (ROOT / "include/tapeflow/version.h").read_text()
    parts = [re.search(rf"#define TAPEFLOW_VERSION_{p} (\d+)", text).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = ROOT / "build" / "pip"
        launcher = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"] if shutil.which("ccache") else []
        env = dict(os.environ, CCACHE_BASEDIR=str(ROOT), CCACHE_NOHASHDIR="1")
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                        f"-DPython3_EXECUTABLE={sys.executable}", "-DTAPEFLOW_BUILD_PYTHON=ON",
                        "-DTAPEFLOW_BUILD_TESTS=OFF", "-DTAPEFLOW_BUILD_EXAMPLES=OFF", "-DTAPEFLOW_BUILD_TOOLS=OFF",
                        "-DTAPEFLOW_INSTALL=OFF", *launcher], check=True, env=env)
        subprocess.run(["cmake", "--build", str(build), "--target", "tapeflow_python", "-j", str(os.cpu_count() or 1)],
                       check=True, env=env)
        package = pathlib.Path(self.build_lib) / "tapeflow"
        shutil.rmtree(package, ignore_errors=True)
        shutil.copytree(build / "python" / "tapeflow", package, ignore=shutil.ignore_patterns("__pycache__"))


setup(version=version(), ext_modules=[Extension("tapeflow._tapeflow", sources=[])], cmdclass={"build_ext": CMakeBuild},
      zip_safe=False)
