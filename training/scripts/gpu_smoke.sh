#!/usr/bin/env bash
# Accelerator smoke run (one GPU, a few minutes). First the GPU checks (chorus_train/gpu_checks.py, the
# tiny model): lockstep (2 processes sharing the GPU: every rank in every generate call), the OPD gate (a
# closed round is the DAPO step, skip moves nothing, an open one distills) and bf16 checkpoints (bf16
# weights, fp32 masters resumed bit for bit), one table row each (check, result, seconds). Without a CUDA
# device the script says it skipped them and exits 0. Then the engine path: a random model with
# Qwen3-0.6B's shapes, 2 DAPO steps on TRL's GRPOTrainer with TRL's colocated vLLM rollouts (the
# policy's weights synced into vLLM after every update), then 1 OPD step on TRL, and the vLLM
# rollout throughput against HF generate on the same prompts; checks that the steps at lr 1e-6 move the
# weights (fp32 master weights), runs again on 2 ranks when 2 GPUs exist, and prints one JSON object
# (also written to $OUT/gpu_smoke.json, or /tmp/chorus-gpu-smoke) and a short table. Exit status 1 when a
# GPU check failed.
#
#   bash training/scripts/gpu_smoke.sh            # from the repository root
#   PY=/path/to/python MAX_NEW_TOKENS=1024 bash training/scripts/gpu_smoke.sh
#   DRY_RUN=1 bash training/scripts/gpu_smoke.sh  # print the TRL configurations only (no GPU needed)
#   SKIP_ENGINE=1 bash training/scripts/gpu_smoke.sh  # the three GPU checks only
#
# Needs: a CUDA GPU (without one: the skip message, exit 0); a Python with torch (CUDA), transformers, accelerate, trl, datasets,
# safetensors, numpy, PyYAML, and optionally vLLM (without it the RL steps sample with HF
# generate inside TRL and the report says so). A set of versions that install together (checked with `pip download --no-deps`):
# vllm==0.31.0 (torch==2.13.0, transformers>=5.10.4,<5.18), trl==1.16.0 for the engine path.
# Not run yet: written in a session without an accelerator (README, "Accelerator smoke run").
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-}
if [[ -z "$PY" ]]; then
  if [[ -x training/.venv/bin/python ]]; then PY=training/.venv/bin/python; else PY=python3; fi
fi
OUT=${OUT:-/tmp/chorus-gpu-smoke}
MODEL=${MODEL:-/tmp/chorus-qwen3-0.6b-random}
MAX_NEW_TOKENS=${MAX_NEW_TOKENS:-512}
export PYTHONPATH="$PWD/training${PYTHONPATH:+:$PYTHONPATH}"
export TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
if [[ "${DRY_RUN:-0}" == 1 ]]; then
  exec "$PY" -m chorus_train.gpu_smoke --model "$MODEL" --out "$OUT" --max-new-tokens "$MAX_NEW_TOKENS" --dry-run
fi

rc=0
"$PY" - <<'PYEOF' || rc=$?
import importlib, sys
missing = [m for m in ('torch', 'transformers', 'accelerate', 'trl', 'datasets', 'safetensors', 'numpy', 'yaml') if importlib.util.find_spec(m) is None]
if missing:
    sys.exit(f'gpu_smoke: missing Python packages: {", ".join(missing)} (pip install -r training/requirements.txt -r training/requirements-train.txt)')
import torch
if not torch.cuda.is_available():
    print('gpu_smoke: no CUDA device (torch.cuda.is_available() is false): skipped (the lockstep, OPD-gate and '
          'bf16-checkpoint checks and the engine run need a GPU)')
    sys.exit(3)
print('gpu_smoke:', torch.cuda.get_device_name(0), 'torch', torch.__version__, 'vllm', 'present' if importlib.util.find_spec('vllm') else 'absent')
PYEOF
if [[ $rc -eq 3 ]]; then exit 0; fi  # no GPU: nothing to check here (tests/test_gpu_smoke.py)
if [[ $rc -ne 0 ]]; then exit "$rc"; fi

# the GPU checks (tiny model, one GPU; chorus_train/gpu_checks.py): lockstep (2 ranks sharing the GPU),
# the OPD gate, bf16 checkpoints; each a table row (check, result, seconds)
checks_rc=0
"$PY" -m chorus_train.gpu_checks --out "$OUT/checks" || checks_rc=$?
if [[ "${SKIP_ENGINE:-0}" == 1 ]]; then exit "$checks_rc"; fi

if [[ ! -f "$MODEL/config.json" ]]; then
  echo "gpu_smoke: writing the random Qwen3-0.6B-shaped checkpoint to $MODEL"
  "$PY" - "$MODEL" <<'PYEOF'
import sys
from pathlib import Path
from chorus_train.tiny_model import DEFAULT_TOKENIZER, PRESETS, make_checkpoint
make_checkpoint(PRESETS['qwen3-0.6b'], Path(sys.argv[1]), seed=1, tokenizer_dir=DEFAULT_TOKENIZER, minify_tokenizer=False, fast_fill=True)
PYEOF
fi
"$PY" -m chorus_train.gpu_smoke --model "$MODEL" --out "$OUT" --max-new-tokens "$MAX_NEW_TOKENS"
# two ranks (one GPU each: DDP, colocated vLLM per rank) when the node has two GPUs
ngpu=$("$PY" -c 'import torch; print(torch.cuda.device_count())')
if [[ "$ngpu" -ge 2 && "${SKIP_2RANK:-0}" != 1 ]]; then
  echo "gpu_smoke: the same run on 2 ranks (torchrun, GPUs 0 and 1)"
  CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0,1} "$PY" -m torch.distributed.run --nproc_per_node 2 --master_port 29517 \
    -m chorus_train.gpu_smoke --model "$MODEL" --out "$OUT/2ranks" --max-new-tokens "$MAX_NEW_TOKENS"
else
  echo "gpu_smoke: one GPU: the 2-rank run is skipped"
fi
if [[ $checks_rc -ne 0 ]]; then echo "gpu_smoke: a GPU check failed (table above, $OUT/checks/gpu_checks.json)"; fi
exit "$checks_rc"
