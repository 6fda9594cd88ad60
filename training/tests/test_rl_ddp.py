"""Data parallelism through accelerate: a DAPO step on 2 CPU processes (torchrun, gloo) is the same
update as the step in one process: each rank rolls out its share of the prompts and the loss is
normalized by the whole step's token count."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from chorus_train.evaluate import free_port

WORKER = Path(__file__).with_name('ddp_worker.py')


def run(args: list[str], tmp: Path, nproc: int) -> None:
    env = {**os.environ, 'OMP_NUM_THREADS': '1', 'TOKENIZERS_PARALLELISM': 'false', 'HF_HUB_OFFLINE': '1'}
    env.pop('WORLD_SIZE', None)
    if nproc == 1:
        cmd = [sys.executable, str(WORKER), *args]
    else:
        port = free_port()  # torchrun's --master_port 0 hangs the static rendezvous: pick one
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
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


@pytest.mark.parametrize('split', ['prompts', 'members', 'opd'])
def test_two_ranks_take_the_same_step_as_one(tiny_ckpts, tmp_path, split):
    """`prompts`: each rank rolls out whole prompts; `members`: one prompt, each rank samples half
    of its group; `opd`: an OPD step (a distilled round, then an RL-fallback round) with the
    student's group split over the ranks (scores gathered, the same advantages and carry on both ranks)."""
    one, two = tmp_path / 'one', tmp_path / 'two'
    one.mkdir()
    two.mkdir()
    extra = [str(tiny_ckpts[1])] if split == 'opd' else []
    run([str(tiny_ckpts[0]), str(one), split, *extra], one, 1)
    run([str(tiny_ckpts[0]), str(two), split, *extra], two, 2)
    if split == 'opd':
        d1, d2 = (json.loads((x / 'decisions.json').read_text()) for x in (one, two))
        assert d1 == d2 and [x['kind'] for x in d1] == ['distill', 'rl'], d1
    assert (one / 'world.txt').read_text() == '1' and (two / 'world.txt').read_text() == '2'
    a, b = torch.load(one / 'final.pt'), torch.load(two / 'final.pt')
    start = {
        k: v for k, v in __import__('safetensors.torch', fromlist=['load_file']).load_file(str(tiny_ckpts[0] / 'model.safetensors')).items()
    }
    moved = 0
    for k in a:
        assert torch.allclose(a[k].float(), b[k].float(), atol=1e-6, rtol=1e-4), k
        key = k if k in start else k.removeprefix('model.')
        if key in start and not torch.equal(a[k].float(), start[key].float()):
            moved += 1
    assert moved > 0, 'the step did not change the weights: the comparison would prove nothing'
    ga, gb = torch.load(one / 'grads.pt'), torch.load(two / 'grads.pt')
    assert ga.keys() == gb.keys() and len(ga) > 0
    for k in ga:
        assert torch.allclose(ga[k], gb[k], atol=1e-7, rtol=1e-4), (k, float((ga[k] - gb[k]).abs().max()), float(ga[k].abs().max()))
