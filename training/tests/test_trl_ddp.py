"""Data parallelism on TRL (accelerate, gloo on CPU): a step on 2 processes is the same update as the
step in one process, with the ranks holding whole tasks, with the carry crossing ranks (direct group
on one rank, refinement group on the other), and for an OPD step (one round distilled, one DAPO)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from chorus_train.evaluate import free_port

pytest.importorskip('trl')
WORKER = Path(__file__).with_name('trl_ddp_worker.py')


def run(args: list[str], nproc: int, timeout: float = 900) -> None:
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
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f'{nproc} ranks did not finish in {timeout:.0f} s (a rank waiting in a collective the others never call): {e}')
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


def test_colocate_style_generation_decodes_no_filler_rows(tiny_ckpts, tmp_path):
    """Generation that is per-rank (HF generate under plain DDP here; colocated vLLM with TP 1 on a GPU):
    with the direct group on rank 0 and the refinement group on rank 1, each rank decodes its own 4
    rows and one filler row in the round where it has none (it still takes part in the engine's call:
    test_every_rank_takes_part_in_every_generate_call), not 4 + 4 filler rows padded to the busiest rank."""
    two = tmp_path / 'two'
    two.mkdir()
    run([str(tiny_ckpts[0]), str(two), 'count'], 2)
    rows = [json.loads((two / f'rank{r}.json').read_text())['gen_rows'] for r in (0, 1)]
    assert rows == [5, 5], rows


def test_every_rank_takes_part_in_every_generate_call(tiny_ckpts, tmp_path):
    """The direct group on rank 0, the refinement group on rank 1, generation through the engine's call with a
    collective inside (an all-reduce, as in vLLM's weight sync from sleep mode): rank 1 has no row in round
    0 and rank 0 none in round 1, yet both call the engine in both rounds (one filler row where it has
    none), so the step finishes. A rank that skipped its empty round hangs the other (the timeout)."""
    two = tmp_path / 'two'
    two.mkdir()
    run([str(tiny_ckpts[0]), str(two), 'lockstep'], 2, timeout=240)
    ranks = [json.loads((two / f'rank{r}.json').read_text()) for r in (0, 1)]
    assert [r['gen_calls'] for r in ranks] == [[4, 1], [1, 4]], ranks
    # the worker made the process group first, for one reward service on the node (connect_for_job), and the
    # trainer ran on it
    assert [r['started'] for r in ranks] == [1, 0] and ranks[0]['service'] == ranks[1]['service']
    assert [r['health'] for r in ranks] == ['ok', 'ok']


def test_opd_ranks_run_the_same_student_forwards(tiny_ckpts, tmp_path):
    """OPD on 2 ranks where rank 1 holds no distilled row: it runs padding forwards, so a sharded student
    (FSDP / ZeRO-3) would see both ranks in every collective; the step equals 1 process's
    (test_two_ranks_take_the_same_trl_step_as_one[opd])."""
    two = tmp_path / 'two'
    two.mkdir()
    run([str(tiny_ckpts[0]), str(two), 'opd', str(tiny_ckpts[2])], 2)
    fw = [json.loads((two / f'rank{r}.json').read_text())['forwards'] for r in (0, 1)]
    assert fw[0] == fw[1] == 4, fw  # 4 distilled student rows on rank 0; rank 1: 4 padding forwards


def test_the_shipped_ddp_config_launches_two_cpu_ranks(tiny_ckpts, tmp_path):
    """`accelerate launch --config_file training/configs/accelerate/ddp.yaml` (the shipped file, what the
    printed launch commands run for cluster.strategy ddp) with 2 processes on a machine without CUDA
    (accelerate falls back to gloo; --mixed_precision no: bf16 autocast is for the GPU): the step runs
    on 2 ranks and equals the 1-process step. FSDP/DeepSpeed need GPUs: config-level tests in
    test_recipes.py."""
    from chorus_train.recipes import accelerate_config

    cfg = accelerate_config({'strategy': 'ddp'})
    one, two = tmp_path / 'one', tmp_path / 'two'
    one.mkdir()
    two.mkdir()
    run([str(tiny_ckpts[0]), str(one), 'rl'], 1)
    env = {**os.environ, 'OMP_NUM_THREADS': '1', 'TOKENIZERS_PARALLELISM': 'false', 'HF_HUB_OFFLINE': '1', 'CUDA_VISIBLE_DEVICES': ''}
    for k in ('WORLD_SIZE', 'RANK', 'LOCAL_RANK'):
        env.pop(k, None)
    cmd = [
        sys.executable, '-m', 'accelerate.commands.launch', '--config_file', str(cfg), '--mixed_precision', 'no',
        '--num_machines', '1', '--num_processes', '2', '--main_process_port', str(free_port()),
        str(WORKER), str(tiny_ckpts[0]), str(two), 'rl',
    ]  # fmt: skip
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert (two / 'world.txt').read_text() == '2'
    a, b = torch.load(one / 'final.pt'), torch.load(two / 'final.pt')
    for k in a:
        assert torch.allclose(a[k].float(), b[k].float(), atol=2e-6), k
