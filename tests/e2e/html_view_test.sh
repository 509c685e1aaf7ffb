#!/usr/bin/env bash
# End-to-end check of 'wmap map --format html' in a real browser: maps the
# zoo's ResNet-18 with fixed peaks, checks the page's structure, then lets
# headless Chromium render it to a PNG and checks that the plots were drawn
# (the roofline dots and the Pareto bars cover a real area; the page is
# not blank) and that the graph picture has a box per node.
# Usage: html_view_test.sh WMAP_BINARY OUTDIR (map.html and map.png stay
# there for a person to look at). Exits 77 when no Chromium is installed.
set -u
wmap=$1
outdir=$2
. "$(dirname "$0")/expect.sh"
unset WMAP_BACKEND_PATH WMAP_NUM_THREADS

browser=
for b in chromium chromium-browser google-chrome google-chrome-stable; do
  if command -v "$b" >/dev/null 2>&1; then
    browser=$(command -v "$b")
    break
  fi
done
if [ -z "$browser" ]; then
  echo "skip: no chromium, chromium-browser or google-chrome on PATH"
  exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "skip: python3 is needed to check the page and the PNG"
  exit 77
fi
mkdir -p "$outdir" || exit 1
html="$outdir/map.html"
png="$outdir/map.png"
rm -f "$html" "$png"

# Fixed peaks (no measurement): every backend the CLI may load is a host
# backend at 100 GFLOP/s FMA and 20 GB/s triad.
cat >"$tmp/peaks.json" <<'JSON'
{
  "format": "wmap.peaks/1",
  "machine": {"model": "e2e test machine", "cores": 4,
              "flags_hash": "0000000000000000", "kernel": "test",
              "fingerprint": "0123456789abcdef"},
  "measured_at": 1700000000,
  "cached": false,
  "host": {"threads": 4, "isa": "default",
    "fma_gflops_fp32": {"1": 50, "all": 100},
    "fma_gflops_fp64": {"1": 25, "all": 50},
    "triad_gbs": {"1": 10, "all": 20}},
  "backends": [
    {"name": "ref", "target": "host", "host": true,
     "gemm_gflops_fp32": {"1": 0, "all": 0}, "gemm_note": "",
     "declared_gflops_fp32": 0, "declared_gflops_fp16": 0,
     "declared_bandwidth_gbs": 0},
    {"name": "cpu", "target": "host", "host": true,
     "gemm_gflops_fp32": {"1": 0, "all": 0}, "gemm_note": "",
     "declared_gflops_fp32": 0, "declared_gflops_fp16": 0,
     "declared_bandwidth_gbs": 0}
  ]
}
JSON

# ref alone keeps the page short enough for the plots to fit the window.
expect map_html_written 0 "" "$wmap" map --zoo resnet18 --backends ref \
  --format html --peaks "$tmp/peaks.json" -o "$html"

if python3 - "$html" <<'PY' >"$tmp/py" 2>&1; then
import html.parser, sys
text = open(sys.argv[1], encoding="utf-8").read()
assert text.startswith("<!DOCTYPE html>"), "no doctype"
assert text.rstrip().endswith("</html>"), "not closed"

class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = {}
        self.rooflines = 0
        self.dots = 0
        self.bars = 0
        self.graphs = 0
        self.boxes = 0
        self.external = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        cls = a.get("class", "")
        if tag == "svg" and cls == "roofline":
            self.rooflines += 1
        if tag == "circle" and cls == "dot":
            self.dots += 1
        if tag == "rect" and cls == "pbar":
            self.bars += 1
        if tag == "svg" and cls == "graph":
            self.graphs += 1
        if tag == "g" and cls.split()[:1] == ["gn"]:
            self.boxes += 1
        for k in ("src", "href"):
            v = a.get(k, "")
            if v and not v.startswith("#"):
                self.external.append(v)
        if tag in ("script", "link", "iframe", "img"):
            self.external.append(tag)

p = Page()
p.feed(text)
assert p.rooflines >= 1, "no roofline plot"
assert p.dots >= 20, "only %d roofline dots" % p.dots  # 20 Conv at least
assert p.bars >= 5, "only %d Pareto bars" % p.bars
assert p.graphs == 1, "%d graph pictures" % p.graphs
assert p.boxes == 69, "%d graph boxes for resnet18's 69 nodes" % p.boxes
assert not p.external, "external resources: %s" % p.external[:5]
print("rooflines %d, dots %d, bars %d, graph boxes %d"
      % (p.rooflines, p.dots, p.bars, p.boxes))
PY
  echo "ok   map_html_structure: $(cat "$tmp/py")"
  passed=$((passed + 1))
else
  echo "FAIL map_html_structure"; sed 's/^/  /' "$tmp/py" | head -10
  failed=$((failed + 1))
fi

# The screenshot: a private profile so no user settings leak in.
timeout 120 "$browser" --headless --no-sandbox --disable-gpu \
  --disable-dev-shm-usage --hide-scrollbars --user-data-dir="$tmp/profile" \
  --screenshot="$png" --window-size=1280,2400 "file://$(realpath "$html")" \
  >"$tmp/browser" 2>&1
if [ ! -s "$png" ]; then
  echo "FAIL map_png_written: no screenshot"
  sed 's/^/  /' "$tmp/browser" | tail -5
  failed=$((failed + 1))
elif python3 - "$png" <<'PY' >"$tmp/py" 2>&1; then
# A PNG decoder in the standard library (8-bit RGB/RGBA, no interlace),
# enough for Chromium's screenshots.
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        assert depth == 8 and ctype in (2, 6) and interlace == 0, \
            "unsupported PNG: depth %d, colour type %d" % (depth, ctype)
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
# Roofline dot fills (compute #e4572e, memory #2e86de) are translucent: a
# dot pixel is white blended with one of them (alpha .5-.97 where dots
# stack). The Pareto bars are solid #4e79a7.
dot_fills = ((228, 87, 46), (46, 134, 222))
colours, nonwhite, bar, dot = {b"\xff\xff\xff"}, 0, 0, 0
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1:
            line[i] = (line[i] + a) & 255
        elif f == 2:
            line[i] = (line[i] + b) & 255
        elif f == 3:
            line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
            line[i] = (line[i] + pr) & 255
    for x in range(0, stride, bpp):
        px = bytes(line[x:x + 3])
        if px == b"\xff\xff\xff":
            continue
        colours.add(px)
        nonwhite += 1
        if px == b"\x4e\x79\xa7":
            bar += 1
        for fill in dot_fills:
            a = [(255 - px[k]) / (255.0 - fill[k]) for k in range(3)]
            if max(a) - min(a) < 0.04 and 0.5 <= sum(a) / 3 <= 0.97:
                dot += 1
    prev = line
frac = nonwhite / float(w * h)
print("%dx%d, %d colours, %.1f%% not white, %d dot pixels, %d bar pixels"
      % (w, h, len(colours), 100 * frac, dot, bar))
assert len(colours) >= 16, "too few colours: blank page?"
assert 0.02 < frac < 0.7, "non-white share %.3f out of range" % frac
assert dot >= 150, "the roofline dots were not drawn"
assert bar >= 2000, "the Pareto bars were not drawn"
PY
  echo "ok   map_png_shows_the_plots: $(cat "$tmp/py")"
  passed=$((passed + 1))
else
  echo "FAIL map_png_shows_the_plots"; sed 's/^/  /' "$tmp/py" | head -10
  failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
