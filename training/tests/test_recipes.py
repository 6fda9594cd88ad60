"""Every recipe validates with --dry-run (prints the plan: GPUs, batch, steps, memory, GPU-hour
estimate), and the RL/OPD recipes carry the reference's numbers (HejiaZ2023/slime
examples/agentic_cov run scripts; docs/protocol.md §8)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

RECIPES = Path(__file__).resolve().parents[1] / 'recipes'


@pytest.mark.parametrize(
    'recipe,cmd',
    [
        ('rl.yaml', ['rl', '--stage', 'stage0']),
        ('rl.yaml', ['rl', '--stage', 'stage2']),
        ('rl_best_carry.yaml', ['rl']),
        ('opd.yaml', ['opd']),
        ('merge.yaml', ['merge']),
        ('smoke.yaml', ['rl']),
        ('rl_2x8.yaml', ['rl', '--stage', 'stage1']),
        ('opd_2x8.yaml', ['opd']),
    ],
)
def test_dry_run(recipe, cmd):
    r = subprocess.run(
        [sys.executable, '-m', 'chorus_train', *cmd, '--config', str(RECIPES / recipe), '--dry-run'],
        capture_output=True,
        text=True,
        cwd=RECIPES.parent,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    if cmd[0] == 'merge':
        assert r.stdout.count('merge ') == 7
    else:
        for k in ('"gpus"', '"global_batch_prompts"', '"updates"', '"memory"'):
            assert k in r.stdout, k
    if recipe == 'rl.yaml':
        assert '"lr": 1e-06' in r.stdout and '"carry": "worst"' in r.stdout and '"group_size": 4' in r.stdout
    if cmd[0] != 'merge':
        plan = json.loads(r.stdout[r.stdout.index('{') :])
        assert plan['estimate']['gpu_hours'] > 0 and 'basis' in plan['estimate'] and plan['memory']['per_policy_gpu'].endswith('GiB')
        if recipe.endswith('2x8.yaml'):
            assert (plan['nodes'], plan['gpus_per_node'], plan['gpus']) == (2, 8, 16)


# The reference (run-qwen3-4B-2xH100.sh): PROMPT_BATCH_SIZE 4, N_STUDENT 4, NUM_AGENTIC_ROUNDS 2,
# GLOBAL_BATCH_SIZE = 4 x 2 x 4 = 32 (one update per rollout), --rollout-temperature 1.0,
# --rollout-max-response-len 16384, --lr 1e-6 constant, --adam-beta2 0.95, --eps-clip 0.2 / 0.28,
# no KL, no weight decay; §8: 1000 updates, group 4, global batch 16 (per round), 2 rounds.
REFERENCE_RL = {
    'prompts_per_step': 4,
    'group_size': 4,
    'agentic_rounds': 2,
    'mini_batches': 1,
    'updates': 1000,
    'lr': 1e-6,
    'adam_beta1': 0.9,
    'adam_beta2': 0.95,
    'eps_lo': 0.2,
    'eps_hi': 0.28,
    'temperature': 1.0,
    'top_p': 1.0,
    'max_new_tokens': 16384,
    'weight_decay': 0.0,
    'carry': 'worst',
}


@pytest.mark.parametrize('recipe', ['rl.yaml', 'rl_2x8.yaml'])
def test_rl_recipe_is_the_reference(recipe):
    from chorus_train.recipes import load_recipe, plan_rl, rl_config

    rec = load_recipe(RECIPES / recipe)
    for stage in ('stage0', 'stage1', 'stage2'):
        cfg = rl_config(rec, stage, {})
        got = {k: getattr(cfg, k) for k in REFERENCE_RL}
        assert got == REFERENCE_RL, stage
        plan = json.loads(plan_rl(cfg, rec['cluster']).removeprefix('plan: '))
        assert plan['sequences_per_round'] == 16 and plan['sequences_per_step'] == 32 and plan['rollout_steps'] == 1000
    best = rl_config(load_recipe(RECIPES / 'rl_best_carry.yaml'), None, {})
    assert best.carry == 'best' and {k: getattr(best, k) for k in REFERENCE_RL if k != 'carry'} == {
        k: v for k, v in REFERENCE_RL.items() if k != 'carry'
    }


def test_opd_recipe_is_the_reference():
    from chorus_train.recipes import load_recipe, opd_config

    cfg = opd_config(load_recipe(RECIPES / 'opd.yaml'), {})
    assert (
        cfg.prompts_per_step,
        cfg.student_samples,
        cfg.teacher_samples,
        len(cfg.teachers),
        cfg.agentic_rounds,
        cfg.top_k,
        cfg.updates,
    ) == (4, 4, 2, 2, 2, 16, 100)
    assert (cfg.lr, cfg.adam_beta2, cfg.temperature, cfg.routing) == (1e-6, 0.95, 1.0, 'best_skip')


@pytest.mark.parametrize('chain', ['chain_1x8.yaml', 'chain_2x8.yaml'])
def test_chain_dry_run(chain):
    r = subprocess.run(
        [sys.executable, '-m', 'chorus_train', 'chain', '--config', str(RECIPES / chain), '--dry-run'],
        capture_output=True,
        text=True,
        cwd=RECIPES.parent,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout[r.stdout.index('{') : r.stdout.index('\n$ ')])
    assert [s['stage'] for s in plan['stages']] == ['rl stage0', 'rl stage1', 'rl stage2', 'merge', 'opd', 'export']
    assert plan['total_gpu_hours_estimate'] > 100
    cmds = [line[2:] for line in r.stdout.splitlines() if line.startswith('$ ')]
    assert len(cmds) == 6 and '--stage stage2' in cmds[2]
    assert (
        ('--num_machines 2' in cmds[0] and '--num_processes 16' in cmds[0]) if chain == 'chain_2x8.yaml' else '--num_processes 8' in cmds[0]
    )


def test_unknown_setting_is_refused(tmp_path):
    y = tmp_path / 'bad.yaml'
    y.write_text('rl:\n  model: x\n  learning_rate: 1\n')
    r = subprocess.run([sys.executable, '-m', 'chorus_train', 'rl', '--config', str(y), '--dry-run'], capture_output=True, text=True)
    assert r.returncode != 0 and 'learning_rate' in (r.stderr + r.stdout)
