#!/usr/bin/env bash
# The one style gate (`npm run lint`; part of `npm test`, so CI runs it): ESLint and Prettier for
# TypeScript/JavaScript, ruff (lint + format check) for the Python of training/. `--fix` applies
# every automatic fix instead of checking. ruff comes from training/.venv when that exists, else
# from a small venv of its own in the per-machine CHORUS cache (installed once from PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
[[ "${1:-}" == "--fix" ]] && fix=1
RUFF_VERSION=0.17.6

ruff_bin() {
  if [[ -x training/.venv/bin/ruff ]]; then echo training/.venv/bin/ruff; return; fi
  local venv="${CHORUS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/chorus}/ruff-$RUFF_VERSION"
  if [[ ! -x "$venv/bin/ruff" ]]; then
    python3 -m venv "$venv" >/dev/null && "$venv/bin/pip" install -q --disable-pip-version-check "ruff==$RUFF_VERSION" >&2
  fi
  echo "$venv/bin/ruff"
}
RUFF=$(ruff_bin)
# The engine's own Python (the slang front end's and the formal engine's halves, and their tests), checked with training's rules.
ENGINE_PY="src/core/sim/slang src/core/sim/formal test/python"

if [[ $fix -eq 1 ]]; then
  npx prettier --write --log-level warn .
  npx eslint --fix .
  "$RUFF" check --fix training
  "$RUFF" format training
  "$RUFF" check --config training/pyproject.toml --fix $ENGINE_PY
  "$RUFF" format --config training/pyproject.toml $ENGINE_PY
else
  status=0
  npx eslint . || status=1
  npx prettier --check --log-level warn . || { echo "lint: run 'npm run format' to format" >&2; status=1; }
  "$RUFF" check training || status=1
  "$RUFF" format --check training || { echo "lint: run 'npm run format' to format training/" >&2; status=1; }
  "$RUFF" check --config training/pyproject.toml $ENGINE_PY || status=1
  "$RUFF" format --config training/pyproject.toml --check $ENGINE_PY || { echo "lint: run 'npm run format' to format the engine's Python" >&2; status=1; }
  [[ $status -eq 0 ]] && echo "lint: eslint, prettier, ruff clean"
  exit $status
fi
