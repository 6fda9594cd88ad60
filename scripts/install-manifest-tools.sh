#!/usr/bin/env bash
# Installs the two package-manager tools CHORUS asks for a design's file list, outside package.json,
# into the per-machine CHORUS cache (CHORUS_CACHE_DIR, else $XDG_CACHE_HOME/chorus or ~/.cache/chorus,
# the folder the engine caches Verilator's runtime in), so every checkout on the machine shares one build:
#   FuseSoC  (PyPI `fusesoc`, in a venv)          -> <cache>/manifest-tools/bin/fusesoc
#   Bender   (crates.io `bender`, cargo install)  -> <cache>/manifest-tools/bin/bender
# Idempotent: a tool already installed at the pinned version is reused (Bender compiles for several
# minutes on two cores the first time). Prints where each tool is and the environment that makes
# CHORUS and its tests use them:
#   export CHORUS_FUSESOC=...; export CHORUS_BENDER=...
# Override the folder with CHORUS_MANIFEST_TOOLS_DIR. Versions: FUSESOC_VERSION, BENDER_VERSION.
set -euo pipefail
CACHE="${CHORUS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/chorus}"
DIR="${CHORUS_MANIFEST_TOOLS_DIR:-$CACHE/manifest-tools}"
FUSESOC_VERSION="${FUSESOC_VERSION:-2.4.7}"
BENDER_VERSION="${BENDER_VERSION:-0.32.1}"
mkdir -p "$DIR/bin"

# FuseSoC: a venv of its own, so that it never touches the user's Python.
if [[ -x "$DIR/bin/fusesoc" ]] && "$DIR/bin/fusesoc" --version 2>/dev/null | grep -qF "$FUSESOC_VERSION"; then
  echo "fusesoc $FUSESOC_VERSION already installed"
else
  PY="${PYTHON:-$(command -v python3 || true)}"
  [[ -n "$PY" ]] || { echo "install-manifest-tools: python3 not found; install Python 3.9+ and rerun" >&2; exit 1; }
  "$PY" -m venv "$DIR/fusesoc-venv"
  "$DIR/fusesoc-venv/bin/pip" install --quiet --disable-pip-version-check "fusesoc==$FUSESOC_VERSION"
  ln -sf "$DIR/fusesoc-venv/bin/fusesoc" "$DIR/bin/fusesoc"
  echo "fusesoc $FUSESOC_VERSION installed"
fi

# Bender: cargo install into the cache (its own --root, so ~/.cargo/bin is not touched). Without
# default features: they add the slang SystemVerilog parser (a long C++ build) that `bender script`
# does not need.
if [[ -x "$DIR/bin/bender" ]] && "$DIR/bin/bender" --version 2>/dev/null | grep -qF "$BENDER_VERSION"; then
  echo "bender $BENDER_VERSION already installed"
else
  command -v cargo >/dev/null || { echo "install-manifest-tools: cargo not found; install Rust (https://rustup.rs) and rerun" >&2; exit 1; }
  CARGO_TARGET_DIR="$DIR/cargo-target" cargo install --locked --quiet --no-default-features --root "$DIR/cargo" --version "$BENDER_VERSION" bender
  ln -sf "$DIR/cargo/bin/bender" "$DIR/bin/bender"
  rm -rf "$DIR/cargo-target"
  echo "bender $BENDER_VERSION installed"
fi

echo "fusesoc: $DIR/bin/fusesoc ($("$DIR/bin/fusesoc" --version 2>&1 | tail -n1))"
echo "bender:  $DIR/bin/bender ($("$DIR/bin/bender" --version 2>&1 | tail -n1))"
echo "export CHORUS_FUSESOC=$DIR/bin/fusesoc"
echo "export CHORUS_BENDER=$DIR/bin/bender"
