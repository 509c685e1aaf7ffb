"""The package itself: which libwmap it loaded, its version, the error
classes, the wheel it builds."""

import glob
import os
import re
import subprocess
import sys
import zipfile

import pytest

import wmap
from wmap import _capi
from conftest import SOURCE_DIR, source_file


def test_version_matches_the_library_and_cmake():
    assert _capi.lib.wm_version().decode() == wmap.__version__
    text = open(source_file("CMakeLists.txt")).read()
    m = re.search(r"project\(wmap VERSION ([0-9.]+)", text)
    assert m and m.group(1) == wmap.__version__


def test_installed_package_uses_its_bundled_library():
    if os.environ.get("WMAP_TEST_EXPECT_BUNDLED") != "1":
        pytest.skip("not run from an installed package with a bundled lib")
    assert wmap.library_origin == "bundled"
    assert wmap.library_path.startswith(os.path.dirname(wmap.__file__))
    assert re.search(r"libwmap\.so\.\d+\.\d+$", wmap.library_path)
    names = {b["name"]: b for b in wmap.backends()["backends"]}
    assert names["ref"]["origin"] == "built-in"
    assert "cpu" in names, wmap.backends()
    assert names["cpu"]["origin"].startswith(
        os.path.join(os.path.dirname(wmap.__file__), "_lib", "wmap",
                     "backends"))
    assert wmap.cli_path() == os.path.join(os.path.dirname(wmap.__file__),
                                           "_lib", "wmap-cli")


def test_every_status_code_has_its_error_class():
    from wmap import errors
    for code in range(1, 12):
        name = _capi.lib.wm_status_code_name(code).decode()
        cls = errors.BY_CODE[code]
        assert issubclass(cls, wmap.Error)
        assert cls.code_name == name
    assert issubclass(wmap.InvalidArgument, ValueError)
    assert issubclass(wmap.NotFound, LookupError)


def test_a_library_of_another_version_is_refused(tmp_path):
    # A fake libwmap whose wm_version says 9.9.9, through WMAP_LIBRARY in a
    # process that cannot see a bundled copy (the source package).
    cc = subprocess.run(["sh", "-c", "command -v cc"], capture_output=True,
                        text=True).stdout.strip()
    if not cc:
        pytest.skip("no C compiler")
    src = tmp_path / "fake.c"
    src.write_text('const char *wm_version(void) { return "9.9.9"; }\n')
    lib = tmp_path / "libfake.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)],
                   check=True)
    pkg = os.path.join(SOURCE_DIR, "python")
    if glob.glob(os.path.join(pkg, "wmap", "_lib", "libwmap.so*")):
        pytest.skip("the source package has a bundled library")
    r = subprocess.run(
        [sys.executable, "-c", "import wmap"], cwd=pkg, capture_output=True,
        text=True, env=dict(os.environ, WMAP_LIBRARY=str(lib)))
    assert r.returncode != 0
    assert "is libwmap 9.9.9, but this package is %s" % wmap.__version__ \
        in r.stderr


def test_wheel_is_a_platform_wheel_with_the_native_files(tmp_path):
    build = os.environ.get("WMAP_BUILD_DIR")
    if not build:
        pytest.skip("WMAP_BUILD_DIR unset")
    pkg = tmp_path / "src"
    import shutil
    shutil.copytree(source_file("python"), pkg,
                    ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                  "__pycache__", "_lib"))
    out = tmp_path / "dist"
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps",
         "--no-build-isolation", "-q", "-w", str(out), str(pkg)],
        capture_output=True, text=True,
        env=dict(os.environ, WMAP_BUILD_DIR=build))
    assert r.returncode == 0, r.stdout + r.stderr
    wheels = glob.glob(str(out / "*.whl"))
    assert len(wheels) == 1, wheels
    name = os.path.basename(wheels[0])
    assert not name.endswith("-none-any.whl"), name
    assert name.startswith("wmap-%s-py3-none-linux_" % wmap.__version__)
    files = zipfile.ZipFile(wheels[0]).namelist()
    assert any(re.match(r"wmap/_lib/libwmap\.so\.\d+\.\d+$", f)
               for f in files), files
    assert "wmap/_lib/wmap/backends/libwmap_backend_cpu.so" in files
    assert "wmap/_lib/wmap-cli" in files
    assert "wmap/session.py" in files
