"""The ctypes mirrors match the C headers: size and every field's offset,
as a C compiler sees include/wmap (skipped without a compiler or the
headers)."""

import ctypes
import os
import shutil
import subprocess

import pytest

from wmap import _capi
from conftest import source_file


def test_struct_mirrors_match_the_headers(tmp_path):
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.skip("no C compiler")
    include = source_file("include")
    lines = ['#include <stddef.h>', '#include <stdio.h>',
             '#include "wmap/bench.h"', '#include "wmap/map.h"',
             '#include "wmap/session.h"', '#include "wmap/zoo.h"',
             'int main(void) {']
    want = []
    for cname, cls in _capi.MIRRORS.items():
        lines.append('  printf("%s %%zu\\n", sizeof(%s));' % (cname, cname))
        want.append("%s %d" % (cname, ctypes.sizeof(cls)))
        for field, *_ in cls._fields_:
            c_field = _capi.MIRROR_C_NAMES.get((cname, field), field)
            lines.append('  printf("%s.%s %%zu\\n", offsetof(%s, %s));'
                         % (cname, field, cname, c_field))
            want.append("%s.%s %d" % (cname, field,
                                      getattr(cls, field).offset))
    lines += ["  return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    r = subprocess.run([cc, "-std=c11", "-D_GNU_SOURCE", "-I", include,
                        "-o", str(exe), str(src)], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    got = subprocess.run([str(exe)], capture_output=True, text=True,
                         check=True).stdout.split("\n")[:-1]
    diff = ["C %s, ctypes %s" % (g, w) for g, w in zip(got, want) if g != w]
    assert not diff, "mirrors out of date:\n" + "\n".join(diff)
