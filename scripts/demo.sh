#!/usr/bin/env bash
# The demo: the backends found, then the workload map of resnet50 printed
# and written as an HTML page.
set -euo pipefail
build=${1:-build}
echo "== wmap backends"
"$build/wmap" backends
echo
echo "== wmap map --zoo resnet50 --html wmap-resnet50.html"
"$build/wmap" map --zoo resnet50 --html wmap-resnet50.html
echo
echo "wrote wmap-resnet50.html (open it in a browser)"
