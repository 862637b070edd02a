"""Builds the kef wheel with the project's CMake (pyproject.toml holds the metadata).

The wheel's package directory holds everything at run time, found through relative run paths:
    kef/*.py, kef/_kef*.so     the package and its extension (run path $ORIGIN/lib)
    kef/lib/libkef.so.X.Y      libkef (the file its SONAME names)
    kef/lib/kef/plugins/*.so   the bundled plugins (libkef looks next to itself)
    kef/bin/kef                the command (run path $ORIGIN/../lib), run by the `kef` entry point

By default CMake configures and compiles a Release build in build/wheel (a full compile). With
KEF_WHEEL_FROM_BUILD=DIR the wheel packages the already compiled build directory DIR instead
(`cmake --install DIR` into a staging directory): nothing is compiled, which is how CI checks the
wheel from the tree it has built.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def project_version():
    """project(kef VERSION x.y.z) of CMakeLists.txt: the one place kef's version is written."""
    with open(os.path.join(HERE, "CMakeLists.txt"), encoding="utf-8") as f:
        match = re.search(r"project\(\s*kef\s+VERSION\s+([0-9.]+)", f.read())
    if not match:
        raise RuntimeError("CMakeLists.txt: no project(kef VERSION x.y.z)")
    return match.group(1)


def run(command, **kwargs):
    print("+ " + " ".join(command), flush=True)
    subprocess.run(command, check=True, **kwargs)


def cache_value(build_dir, name):
    with open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8") as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split("=", 1)[1].strip()
    raise RuntimeError(f"{build_dir}/CMakeCache.txt: no {name}")


class CMakeBuild(build_ext):
    """Builds (or takes) a CMake build of kef and copies what the package needs next to it."""

    def run(self):
        build_dir = os.environ.get("KEF_WHEEL_FROM_BUILD")
        if build_dir:
            build_dir = os.path.abspath(build_dir)
            if not os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
                raise RuntimeError(f"KEF_WHEEL_FROM_BUILD={build_dir}: not a configured CMake build "
                                   "directory (no CMakeCache.txt)")
        else:
            build_dir = os.path.join(HERE, "build", "wheel")
            jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
            run(["cmake", "-S", HERE, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                 "-DKEF_BUILD_TESTS=OFF", "-DKEF_BUILD_BENCH=OFF", "-DKEF_BUILD_PYTHON=ON",
                 f"-DPython3_EXECUTABLE={sys.executable}"])
            run(["cmake", "--build", build_dir, "-j", jobs])
        package = os.path.join(os.path.abspath(self.build_lib), "kef")
        os.makedirs(package, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="kef-wheel-") as staging:
            # The install rules put every file where an installed kef has it; no compile happens here
            # (cmake --install refuses a build that is not complete).
            run(["cmake", "--install", build_dir, "--prefix", staging],
                stdout=subprocess.DEVNULL)
            self.copy_installed(staging, build_dir, package)

    def copy_installed(self, staging, build_dir, package):
        libdir = cache_value(build_dir, "CMAKE_INSTALL_LIBDIR")
        pydir = cache_value(build_dir, "KEF_PYTHON_INSTALL_DIR")
        installed_package = os.path.join(staging, pydir, "kef")
        extensions = [f for f in os.listdir(installed_package) if f.startswith("_kef") and f.endswith(".so")]
        if not extensions:
            raise RuntimeError(f"{build_dir}: the build has no Python extension (KEF_BUILD_PYTHON off, or "
                               "pybind11 / Python development files missing)")
        for name in os.listdir(installed_package):
            if name.endswith((".py", ".so")):
                shutil.copy2(os.path.join(installed_package, name), os.path.join(package, name))
        lib = os.path.join(package, "lib")
        shutil.rmtree(lib, ignore_errors=True)
        os.makedirs(os.path.join(lib, "kef", "plugins"))
        # libkef under the name its SONAME gives (what the extension, the command and the plugins ask
        # the loader for); wheels hold no symbolic links.
        sonames = [f for f in os.listdir(os.path.join(staging, libdir))
                   if re.fullmatch(r"libkef\.so\.\d+\.\d+", f)]
        if len(sonames) != 1:
            raise RuntimeError(f"{staging}/{libdir}: expected one libkef.so.X.Y, found {sonames}")
        shutil.copy2(os.path.realpath(os.path.join(staging, libdir, sonames[0])), os.path.join(lib, sonames[0]))
        plugins = os.path.join(staging, libdir, "kef", "plugins")
        for name in sorted(os.listdir(plugins)):
            if name.endswith(".so"):
                shutil.copy2(os.path.realpath(os.path.join(plugins, name)), os.path.join(lib, "kef", "plugins", name))
        os.makedirs(os.path.join(package, "bin"), exist_ok=True)
        shutil.copy2(os.path.join(staging, "bin", "kef"), os.path.join(package, "bin", "kef"))


setup(
    version=project_version(),
    # The extension is declared with no sources so that setuptools makes a platform wheel and runs
    # build_ext; CMakeBuild (build_ext) compiles it with CMake and copies it into the package.
    ext_modules=[Extension("kef._kef", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
