#!/usr/bin/env bash
# Installs the design front end's compiler, slang (the PyPI wheel `pyslang`, MIT, ~15 MB), into a
# venv of its own in the per-machine CHORUS folder, so every checkout and the editor share it and
# the user's Python is never touched:
#   ${XDG_CACHE_HOME:-~/.cache}/chorus/slang/<version>/venv   (override: CHORUS_SLANG_DIR)
# The engine finds it there (or wherever CHORUS_SLANG_PYTHON points: a Python with pyslang).
# Idempotent: a finished install (stamp file) is reused. Prints the interpreter's path last.
set -euo pipefail
VERSION="${PYSLANG_VERSION:-12.1.0}"
DIR="${CHORUS_SLANG_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/chorus/slang/$VERSION}"
STAMP="$DIR/.installed"
PYBIN="$DIR/venv/bin/python"

if [[ -f "$STAMP" && -x "$PYBIN" ]] && "$PYBIN" -c 'import pyslang' >/dev/null 2>&1; then
  echo "pyslang $VERSION already installed" >&2
else
  # Debian's Python first: the jail binds /usr, so an interpreter there needs nothing else bound.
  PY="${PYTHON:-}"
  [[ -z "$PY" && -x /usr/bin/python3 ]] && PY=/usr/bin/python3
  [[ -z "$PY" ]] && PY="$(command -v python3 || true)"
  [[ -n "$PY" ]] || { echo "install-slang: python3 not found; install Python 3.10+ and rerun" >&2; exit 1; }
  "$PY" -c 'import venv, ensurepip' >/dev/null 2>&1 ||
    { echo "install-slang: $PY has no venv/ensurepip module (Debian: apt-get install python3-venv)" >&2; exit 1; }
  rm -rf "$DIR"
  mkdir -p "$DIR"
  "$PY" -m venv "$DIR/venv"
  "$DIR/venv/bin/pip" install --quiet --disable-pip-version-check "pyslang==$VERSION"
  "$PYBIN" -c 'import pyslang' || { echo "install-slang: pyslang $VERSION does not import in $PYBIN" >&2; exit 1; }
  touch "$STAMP"
  echo "pyslang $VERSION installed in $DIR" >&2
fi
echo "$PYBIN"
