#!/usr/bin/env bash
# Sets up CHORUS on a Debian/Ubuntu machine: system packages (Verilator and its C++ toolchain,
# bubblewrap for the simulation jail), npm packages, the build. With --run-example it then runs the
# main job on the bundled example design (generate a testbench, print its coverage).
set -euo pipefail
cd "$(dirname "$0")/.."

run_example=0
for a in "$@"; do
  case "$a" in
    --run-example) run_example=1 ;;
    -h|--help) echo "usage: scripts/setup.sh [--run-example]"; exit 0 ;;
    *) echo "setup.sh: unknown option $a" >&2; exit 2 ;;
  esac
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# Debian packages the engine needs: verilator + g++/make/perl/python3 (Verilator's toolchain),
# bubblewrap (jails the simulation executable), util-linux/coreutils (prlimit, timeout).
need=()
for p in verilator g++ make perl python3 bubblewrap util-linux coreutils; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ! command -v node >/dev/null 2>&1; then need+=(nodejs npm); fi
if [ ${#need[@]} -gt 0 ]; then
  echo "==> installing Debian packages: ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "warning: Node $(node --version) is older than 20; the CLI may work, the test suite needs Node >= 20.19" >&2
fi

echo "==> installing npm packages"
# onnxruntime-node's postinstall would fetch CUDA libraries from outside the npm registry (and
# fail offline); the CPU binaries are inside the package. This is the package's documented switch.
export ONNXRUNTIME_NODE_INSTALL=skip
if [ -f package-lock.json ]; then npm ci --no-audit --no-fund --loglevel=error; else npm install --no-audit --no-fund --loglevel=error; fi
echo "==> building"
npm run --silent build

if [ "$run_example" -eq 1 ]; then
  echo "==> main job: generate a testbench for the example FSM with the built-in generator and measure its coverage"
  echo "    (the first run also builds Verilator's runtime once for this machine: ~10-20 s)"
  node dist/cli.js generate examples/fsm/seq_detector.sv --out out/tb_seq_detector.sv --force
fi
