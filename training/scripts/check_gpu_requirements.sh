#!/usr/bin/env bash
# Does training/requirements-gpu.txt (the GPU node's own venv) resolve to one installable set
# on a Linux x86_64 GPU node? Runs pip's resolver (`pip install --dry-run --ignore-installed`, no
# download of the big wheels: PyPI serves their metadata) in a throw-away virtual environment.
# Needs the package index: without network it prints SKIP and exits 0 (CI stays green offline;
# the skip is visible in the log). Exit 1 when the set does not resolve.
#   bash training/scripts/check_gpu_requirements.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-python3}
INDEX=${PIP_INDEX_URL:-https://pypi.org/simple}
if ! "$PY" - "$INDEX" <<'PYEOF'
import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1].rstrip('/') + '/pip/', timeout=10)
except Exception as e:
    print(f'unreachable: {e}')
    sys.exit(1)
PYEOF
then
  echo "check_gpu_requirements: SKIP (the package index $INDEX is not reachable from here)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PY" -m venv "$tmp/venv" >/dev/null
"$tmp/venv/bin/pip" install -q --disable-pip-version-check --upgrade 'pip>=24.2' >/dev/null 2>&1 || true
# Python 3.11 / 3.12 on manylinux x86_64 is what vLLM's wheels target (the resolver checks the running Python)
if "$tmp/venv/bin/pip" install --disable-pip-version-check --dry-run --ignore-installed --quiet \
    --report "$tmp/report.json" -r training/requirements-gpu.txt; then
  "$PY" - "$tmp/report.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
v = {i['metadata']['name'].lower(): i['metadata']['version'] for i in r['install']}
print('check_gpu_requirements: OK, resolves to ' + ', '.join(f'{k}=={v[k]}' for k in ('torch', 'transformers', 'accelerate', 'trl', 'vllm') if k in v)
      + f' ({len(v)} packages)')
PYEOF
else
  echo "check_gpu_requirements: FAILED: training/requirements-gpu.txt does not resolve (pip's message above)"
  exit 1
fi
