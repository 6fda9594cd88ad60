"""One of each per node, not per rank (issue 43): one reward service per node on a distributed run (2 nodes
of 2 ranks simulated on this machine with torchrun --nnodes 2 on loopback), and the chain's merges and
export once per job (node 0) while the other nodes wait."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from chorus_train.cli import run_chain
from chorus_train.evaluate import free_port

WORKER = Path(__file__).with_name('node_worker.py')


def test_one_reward_service_per_node(tmp_path):
    """Two torchrun node groups (2 ranks each) on loopback, no --service: each node's first rank starts one
    service, the node's other rank uses it, the other node has its own; every rank reaches its node's."""
    env = {**os.environ, 'OMP_NUM_THREADS': '1', 'CUDA_VISIBLE_DEVICES': ''}
    for k in ('WORLD_SIZE', 'RANK', 'LOCAL_RANK'):
        env.pop(k, None)
    port = free_port()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                '-m',
                'torch.distributed.run',
                '--nnodes',
                '2',
                '--node_rank',
                str(n),
                '--nproc_per_node',
                '2',
                '--master_addr',
                '127.0.0.1',
                '--master_port',
                str(port),
                str(WORKER),
                str(tmp_path),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        for n in (0, 1)
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], '\n'.join(o[-3000:] for o in outs)
    ranks = [json.loads((tmp_path / f'rank{r}.json').read_text()) for r in range(4)]
    assert [r['node'] for r in ranks] == [0, 0, 1, 1]
    assert [r['started'] for r in ranks] == [True, False, True, False]  # one start per node, by its first rank
    assert ranks[0]['url'] == ranks[1]['url'] != ranks[2]['url'] == ranks[3]['url']
    assert all(r['health'] == 'ok' for r in ranks)


def _two_nodes(commands, run):
    port, errors = free_port(), {}

    def node(n):
        try:
            run_chain(commands, node_rank=n, nodes=2, port=port, run=lambda c: run(n, c), timeout_s=60)
        except SystemExit as e:
            errors[n] = str(e)

    threads = [threading.Thread(target=node, args=(n,)) for n in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    return errors


def test_the_chain_merges_and_exports_once_per_job():
    """run_chain on two nodes: the launches run on both, the merge and the export on node 0 only, and node 1
    starts OPD only after node 0's merge has ended (it waited)."""
    log: list[tuple] = []
    lock = threading.Lock()

    def run(n, c):
        with lock:
            log.append((n, c, 'start', time.monotonic()))
        if c == 'merge':
            time.sleep(1.0)
        with lock:
            log.append((n, c, 'end', time.monotonic()))
        return 0

    cmds = [('rl', False), ('merge', True), ('opd', False), ('export', True)]
    assert _two_nodes(cmds, run) == {}
    started = sorted((c, n) for n, c, ev, _ in log if ev == 'start')
    assert started == [('export', 0), ('merge', 0), ('opd', 0), ('opd', 1), ('rl', 0), ('rl', 1)]
    merge_end = next(t for n, c, ev, t in log if c == 'merge' and ev == 'end')
    opd1 = next(t for n, c, ev, t in log if c == 'opd' and n == 1 and ev == 'start')
    assert opd1 >= merge_end


def test_a_failed_once_per_job_command_stops_every_node():
    errors = _two_nodes([('merge', True), ('opd', False)], lambda n, c: 3 if c == 'merge' else 0)
    assert errors == {0: 'failed (exit 3): merge', 1: 'node 0 failed (exit 3): merge'}


@pytest.mark.parametrize('chain', ['chain_1x8.yaml', 'chain_2x8.yaml'])
def test_the_chain_plan_says_where_each_stage_runs(chain):
    from chorus_train.recipes import EVERY_NODE, ONCE, chain_plan, load_recipe

    path = Path(__file__).resolve().parents[1] / 'recipes' / chain
    plan, commands = chain_plan(load_recipe(path), path)
    p = json.loads(plan.removeprefix('plan: '))
    assert p['nodes'] == (2 if '2x8' in chain else 1)
    assert [s['runs_on'] for s in p['stages']] == [EVERY_NODE] * 3 + [ONCE, EVERY_NODE, ONCE]
    assert [once for _, once in commands] == [False, False, False, True, False, True]
