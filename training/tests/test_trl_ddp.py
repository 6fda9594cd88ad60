"""Data parallelism on TRL (accelerate, gloo on CPU): a step on 2 processes is the same update as the
step in one process, with the ranks holding whole tasks, with the carry crossing ranks (direct group
on one rank, refinement group on the other), and for an OPD step (one round distilled, one DAPO)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from chorus_train.evaluate import free_port

pytest.importorskip('trl')
WORKER = Path(__file__).with_name('trl_ddp_worker.py')


def run(args: list[str], nproc: int) -> None:
    env = {**os.environ, 'OMP_NUM_THREADS': '1', 'TOKENIZERS_PARALLELISM': 'false', 'HF_HUB_OFFLINE': '1', 'CUDA_VISIBLE_DEVICES': ''}
    for k in ('WORLD_SIZE', 'RANK', 'LOCAL_RANK'):
        env.pop(k, None)
    if nproc == 1:
        cmd = [sys.executable, str(WORKER), *args]
    else:
        port = free_port()
        cmd = [
            sys.executable,
            '-m',
            'torch.distributed.run',
            '--nproc_per_node',
            str(nproc),
            '--master_addr',
            '127.0.0.1',
            '--master_port',
            str(port),
            str(WORKER),
            *args,
        ]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


@pytest.mark.parametrize('mode', ['rl', 'split', 'opd'])
def test_two_ranks_take_the_same_trl_step_as_one(tiny_ckpts, tmp_path, mode):
    one, two = tmp_path / 'one', tmp_path / 'two'
    one.mkdir()
    two.mkdir()
    extra = [str(tiny_ckpts[2])] if mode == 'opd' else []
    run([str(tiny_ckpts[0]), str(one), mode, *extra], 1)
    run([str(tiny_ckpts[0]), str(two), mode, *extra], 2)
    assert (one / 'world.txt').read_text() == '1' and (two / 'world.txt').read_text() == '2'
    a, b = torch.load(one / 'final.pt'), torch.load(two / 'final.pt')
    start = {
        k: v.float()
        for k, v in __import__('safetensors.torch', fromlist=['load_file']).load_file(str(tiny_ckpts[0] / 'model.safetensors')).items()
    }
    moved = 0
    for k in a:
        assert torch.allclose(a[k].float(), b[k].float(), atol=2e-6), k
        if k in start:
            moved += not torch.equal(a[k].float(), start[k])
    assert moved > 0, 'the step must change the weights'
