#!/usr/bin/env bash
# Installs code-server (VS Code 1.100.3 in a browser) for the end-to-end tests, outside package.json,
# into .chorus-cache/e2e/code-server (gitignored). Idempotent: a stamp file marks a finished install.
# Recipe from docs/environment.md: the registry install works offline only with --ignore-scripts plus the
# manual rebuild steps below (ripgrep comes from Debian instead of a GitHub download).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
DIR="${CHORUS_CODE_SERVER_DIR:-$ROOT/.chorus-cache/e2e/code-server}"
VERSION=4.100.3
STAMP="$DIR/.installed-$VERSION"
if [[ -f "$STAMP" ]]; then echo "code-server $VERSION already installed in $DIR"; exit 0; fi

need=()
command -v rg >/dev/null || need+=(ripgrep)
command -v chromium >/dev/null || need+=(chromium)
command -v g++ >/dev/null || need+=(build-essential)
command -v python3 >/dev/null || need+=(python3)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need+=(libkrb5-dev)
if ((${#need[@]})); then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi

mkdir -p "$DIR"
cd "$DIR"
[[ -f package.json ]] || echo '{"name":"chorus-e2e-code-server","private":true}' > package.json
export npm_config_nodedir=/usr npm_config_yes=true ONNXRUNTIME_NODE_INSTALL=skip
npm install --no-audit --no-fund --ignore-scripts "code-server@$VERSION"
npm rebuild argon2
cd node_modules/code-server/lib/vscode
npm install --no-audit --no-fund --omit=dev --ignore-scripts
mkdir -p node_modules/@vscode/ripgrep/bin
ln -sf "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
npm rebuild
cd extensions
npm install --no-audit --no-fund --omit=dev
touch "$STAMP"
echo "code-server $VERSION installed in $DIR"
