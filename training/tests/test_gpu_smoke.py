"""scripts/gpu_smoke.sh and chorus_train/gpu_checks.py without a GPU: the script says it skipped and exits 0;
the three checks (lockstep, OPD gate, bf16 checkpoints) run on the CPU with `--device cpu`, the same code the
GPU run takes except the device (the CUDA path itself needs a GPU: not run here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TRAINING = Path(__file__).resolve().parents[1]
NO_GPU = {**os.environ, 'CUDA_VISIBLE_DEVICES': '', 'OMP_NUM_THREADS': '1', 'TOKENIZERS_PARALLELISM': 'false'}


def test_gpu_smoke_without_a_gpu_says_so_and_exits_0(tmp_path):
    r = subprocess.run(
        ['bash', str(TRAINING / 'scripts' / 'gpu_smoke.sh')],
        env={**NO_GPU, 'PY': sys.executable, 'OUT': str(tmp_path / 'out')},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'no CUDA device' in r.stdout and 'skipped' in r.stdout, r.stdout
    assert 'lockstep' in r.stdout and 'OPD-gate' in r.stdout and 'bf16-checkpoint' in r.stdout
    assert not (tmp_path / 'out').exists()  # nothing ran


def test_gpu_checks_without_a_gpu_skip_and_exit_0(tmp_path):
    r = subprocess.run(
        [sys.executable, '-m', 'chorus_train.gpu_checks', '--out', str(tmp_path)],
        cwd=TRAINING,
        env=NO_GPU,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'skipped' in r.stdout and 'torch.cuda.is_available() is false' in r.stdout


@pytest.mark.parametrize('check', ['lockstep', 'opd_gate', 'bf16_checkpoint'])
def test_the_gpu_checks_pass_on_the_cpu(tiny_ckpts, tmp_path, check):
    """Each check's own logic, on the CPU (2 gloo ranks for lockstep): PASS, and a table row with its seconds."""
    pytest.importorskip('trl')
    r = subprocess.run(
        [sys.executable, '-m', 'chorus_train.gpu_checks', '--device', 'cpu', '--out', str(tmp_path), '--model', str(tiny_ckpts[0])]
        + ['--only', check],
        cwd=TRAINING,
        env=NO_GPU,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    rows = json.loads((tmp_path / 'gpu_checks.json').read_text())['rows']
    assert [(x['check'], x['result']) for x in rows] == [(check, 'PASS')], rows
    head, line = r.stdout.strip().splitlines()[-2:]
    assert head.split()[:3] == ['check', 'result', 'seconds'] and line.split()[:2] == [check, 'PASS']
    float(line.split()[2])
