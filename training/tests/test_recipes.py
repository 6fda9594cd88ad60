"""Every recipe validates with --dry-run (prints the plan: GPUs, batch, steps, memory)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

RECIPES = Path(__file__).resolve().parents[1] / 'recipes'


@pytest.mark.parametrize('recipe,cmd', [
    ('rl.yaml', ['rl', '--stage', 'stage0']), ('rl.yaml', ['rl', '--stage', 'stage2']), ('rl_best_carry.yaml', ['rl']),
    ('opd.yaml', ['opd']), ('merge.yaml', ['merge']), ('smoke.yaml', ['rl']),
])
def test_dry_run(recipe, cmd):
    r = subprocess.run([sys.executable, '-m', 'chorus_train', *cmd, '--config', str(RECIPES / recipe), '--dry-run'],
                       capture_output=True, text=True, cwd=RECIPES.parent, timeout=120)
    assert r.returncode == 0, r.stderr
    if cmd[0] == 'merge':
        assert r.stdout.count('merge ') == 7
    else:
        for k in ('"gpus"', '"global_batch_prompts"', '"updates"', '"memory"'):
            assert k in r.stdout, k
    if recipe == 'rl.yaml':
        assert '"lr": 1e-06' in r.stdout and '"carry": "worst"' in r.stdout and '"group_size": 4' in r.stdout


def test_unknown_setting_is_refused(tmp_path):
    y = tmp_path / 'bad.yaml'
    y.write_text('rl:\n  model: x\n  learning_rate: 1\n')
    r = subprocess.run([sys.executable, '-m', 'chorus_train', 'rl', '--config', str(y), '--dry-run'], capture_output=True, text=True)
    assert r.returncode != 0 and 'learning_rate' in (r.stderr + r.stdout)
