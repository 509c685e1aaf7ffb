"""Bundles libwmap, its backend plugins and the wmap CLI from a wmap build
folder into the package, so that `pip install ./python` and
`pip wheel ./python` give a working package:

    wmap/_lib/libwmap.so.MAJOR.MINOR       the library (its SONAME)
    wmap/_lib/wmap/backends/*.so            the plugins, found beside it
    wmap/_lib/wmap-cli                      the CLI (bench, conform), beside
                                            the library so that it finds the
                                            plugins in _lib/wmap/backends

The build folder is $WMAP_BUILD_DIR (relative paths are taken from this
folder), else ../build when it holds libwmap.so, else none: then nothing
is bundled, the wheel is pure Python, and the package uses a libwmap
installed on the system (or WMAP_LIBRARY) at run time. A wheel with the
native files is tagged for this platform (py3-none-<platform>): ctypes
needs no particular Python ABI.
"""

import ctypes
import glob
import os
import shutil
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "wmap"))
from _version import __version__  # noqa: E402

sys.path.pop(0)


def find_build_dir():
    env = os.environ.get("WMAP_BUILD_DIR")
    if env:
        path = os.path.join(HERE, env)  # an absolute env wins in join
        if not os.path.isfile(os.path.join(path, "libwmap.so")):
            sys.exit("wmap setup: WMAP_BUILD_DIR=%s holds no libwmap.so "
                     "(build it: cmake --build %s --target libwmap wmap "
                     "wmap_backend_cpu)" % (env, path))
        return path
    default = os.path.join(HERE, os.pardir, "build")
    if os.path.isfile(os.path.join(default, "libwmap.so")):
        return os.path.normpath(default)
    print("wmap setup: no WMAP_BUILD_DIR and no ../build/libwmap.so: "
          "nothing bundled; the package will use the system's libwmap")
    return None


BUILD_DIR = find_build_dir()


def check_version(lib_path):
    lib = ctypes.CDLL(lib_path)
    lib.wm_version.restype = ctypes.c_char_p
    version = lib.wm_version().decode()
    if version != __version__:
        sys.exit("wmap setup: %s is libwmap %s but the package is %s"
                 % (lib_path, version, __version__))


def bundled_files():
    """(source, destination in the package) of every native file."""
    files = []
    lib = os.path.realpath(os.path.join(BUILD_DIR, "libwmap.so"))
    sonames = sorted(glob.glob(os.path.join(BUILD_DIR, "libwmap.so.*")),
                     key=len)
    # One copy, under its SONAME (libwmap.so.0.1): what plugins link to.
    name = os.path.basename(sonames[0]) if sonames else "libwmap.so"
    files.append((lib, os.path.join("_lib", name)))
    for plugin in sorted(glob.glob(os.path.join(BUILD_DIR, "backends",
                                                "libwmap_backend_*.so"))):
        files.append((plugin, os.path.join("_lib", "wmap", "backends",
                                           os.path.basename(plugin))))
    cli = os.path.join(BUILD_DIR, "wmap")
    if os.path.isfile(cli) and os.access(cli, os.X_OK):
        files.append((cli, os.path.join("_lib", "wmap-cli")))
    return files


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        if not BUILD_DIR:
            return
        check_version(os.path.join(BUILD_DIR, "libwmap.so"))
        for stale in ("_lib",):  # left by an earlier in-tree build
            shutil.rmtree(os.path.join(self.build_lib, "wmap", stale),
                          ignore_errors=True)
        for src, rel in bundled_files():
            dst = os.path.join(self.build_lib, "wmap", rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(src, dst)
            print("wmap setup: bundled %s as wmap/%s" % (src, rel))


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return BUILD_DIR is not None


class PlatformWheel(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = BUILD_DIR is None

    def get_tag(self):
        python, abi, plat = super().get_tag()
        if BUILD_DIR is not None:
            return "py3", "none", plat
        return python, abi, plat


setup(
    version=__version__,
    distclass=BinaryDistribution,
    cmdclass={"build_py": BuildPyWithLibrary, "bdist_wheel": PlatformWheel},
)
