#!/usr/bin/env bash
# Installs the Debian packages wmap needs, only those missing. Idempotent.
# Without root (and without sudo) it prints the exact command and fails.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libprotobuf-c-dev protobuf-c-compiler libonnx-dev
  libonnx-testdata
  libopenblas-dev
  libcjson-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd  # OpenCL on the CPU (PoCL)
  libjpeg62-turbo-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev  # ImageDecoder
  clang-format-15 clang-15
  libopenmpi-dev openmpi-bin  # MPI: collectives across processes (mpirun)
  python3-venv
  chromium  # headless screenshots of the map's HTML report (e2e.html_view)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
      grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: missing: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo=(sudo)
else
  echo "install-deps: cannot install without root; run:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${missing[*]}"
