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
    assert (cfg.lr, cfg.adam_beta2, cfg.temperature, cfg.routing) == (1e-6, 0.95, 1.0, 'best')
    # the paper's "best + skip" (Eq. 3: a closed gate gives no gradient), lambda 1, data offset 1,000 steps
    assert (cfg.gate_closed, cfg.opd_lambda, cfg.data_offset_steps) == ('skip', 1.0, 1000)


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
    # experts that differ: each RL stage its own seed and draw; the overlaps are those of the sampler's order
    from chorus_train.trainers import prompt_draw

    st = {s['stage']: s for s in plan['stages']}
    assert [st[f'rl stage{i}']['seed'] for i in range(3)] == [0, 1, 2] and st['opd']['seed'] == 2
    draws = {f'rl stage{i}': set(prompt_draw(11488, i, 4, 1000)) for i in range(3)}
    draws['opd'] = set(prompt_draw(11488, 2, 4, 100, 4000))
    for name, d in draws.items():
        assert st[name]['prompts_drawn'] == len(d) == st[name]['distinct_prompts']
        assert st[name]['overlap_prompts'] == {
            k: len(d & v) for k, v in draws.items() if k != name and list(draws).index(k) < list(draws).index(name)
        }
    assert 0 < st['rl stage1']['overlap_prompts']['rl stage0'] < 4000  # independent draws, not the same 4,000
    assert st['opd']['overlap_prompts']['rl stage2'] == 0  # OPD reads the student's order after its RL prompts
    # long prompts, bounded: the largest prompt and the KV cache it needs at the recipe's batch
    per_gpu = 1 if chain == 'chain_2x8.yaml' else 2  # 16 sequences per round over 16 / 8 rollout GPUs
    for name in ('rl stage0', 'opd'):
        ctx = st[name]['context']
        assert (ctx['largest_prompt_tokens'], ctx['vllm_max_model_len'], ctx['sequences_per_rollout_gpu']) == (24576, 40960, per_gpu)
        kv = 2 * 36 * 8 * 128 * 2 * 40960 * per_gpu  # Qwen3-4B: K and V, 36 layers, 8 KV heads of 128, bf16
        assert ctx['kv_cache_largest_round_per_gpu'] == f'{kv / 2**30:.1f} GiB'
    # checkpoints: a bf16 model file (2 B/param) + fp32 moments (8) + the masters' low bits (2), FSDP
    gib = lambda b: f'{4.02e9 * b / 2**30:.1f} GiB'  # noqa: E731
    ck = st['rl stage0']['checkpoints']
    assert (ck['model_file'], ck['per_checkpoint'], ck['checkpoints_written'], ck['checkpoints_kept']) == (
        gib(2) + ' (bf16)',
        gib(12),
        20,
        3,
    )
    assert ck['disk_peak'] == gib(48) and st['opd']['checkpoints']['checkpoints_written'] == 4
    assert st['merge']['checkpoints']['disk_peak'] == gib(2 * 7)
    # the estimated step time against the collective timeout, per training stage
    for name in ('rl stage0', 'rl stage1', 'rl stage2', 'opd'):
        t = st[name]['step_time']
        assert t['fits'] and 0 < t['step_s'] < t['ddp_timeout_s']


def test_each_rl_stage_has_its_own_seed():
    """The recipe's stages draw with seeds 0, 1, 2; a stage that names none gets the section's seed plus its
    index (never the same draw by default); --seed overrides; OPD uses the student's (stage 2's) seed."""
    from chorus_train.recipes import load_recipe, opd_config, rl_config

    rec = load_recipe(RECIPES / 'rl.yaml')
    assert [rl_config(rec, f'stage{i}', {}).seed for i in range(3)] == [0, 1, 2]
    r = {'rl': {'seed': 10, 'stages': {'a': {'model': 'x'}, 'b': {'model': 'y'}}}}
    assert [rl_config(r, s, {}).seed for s in 'ab'] == [10, 11] and rl_config(r, None, {}).seed == 10
    assert rl_config(r, 'b', {'seed': 3}).seed == 3
    o = opd_config(load_recipe(RECIPES / 'opd.yaml'), {})
    assert o.seed == rl_config(rec, 'stage2', {}).seed and 'rl-stage2' in o.student
    assert rl_config(load_recipe(RECIPES / 'rl_best_carry.yaml'), None, {}).seed == 2  # the ablation draws as stage2


def test_unknown_setting_is_refused(tmp_path):
    y = tmp_path / 'bad.yaml'
    y.write_text('rl:\n  model: x\n  learning_rate: 1\n')
    r = subprocess.run([sys.executable, '-m', 'chorus_train', 'rl', '--config', str(y), '--dry-run'], capture_output=True, text=True)
    assert r.returncode != 0 and 'learning_rate' in (r.stderr + r.stdout)


@pytest.mark.parametrize(
    'strategy,kind',
    [('ddp', 'MULTI_GPU'), ('fsdp', 'FSDP'), ('zero2', 'DEEPSPEED'), ('zero3', 'DEEPSPEED'), ('deepspeed-zero3', 'DEEPSPEED')],
)
def test_distribution_configs_are_shipped_and_passed(strategy, kind):
    """cluster.strategy -> the accelerate config in training/configs/accelerate, passed by the printed
    launch commands; FSDP checkpoints are FULL_STATE_DICT and ZeRO-3 gathers a 16-bit HF model on save
    (so merge/OPD/export read them); accelerate itself parses each file."""
    import yaml
    from accelerate.commands.config.config_args import load_config_from_file

    from chorus_train.recipes import _launch, accelerate_config

    cluster = {'nodes': 2, 'gpus_per_node': 8, 'strategy': strategy}
    path = accelerate_config(cluster)
    assert path.exists(), path
    cmd = _launch(cluster, 'rl --config x.yaml')
    assert f'--config_file {path}' in cmd and '--num_machines 2' in cmd and '--num_processes 16' in cmd
    assert f'--config_file {path}' in _launch({**cluster, 'nodes': 1}, 'rl')
    d = yaml.safe_load(path.read_text())
    assert d['distributed_type'] == kind
    parsed = load_config_from_file(str(path))
    assert str(getattr(parsed.distributed_type, 'value', parsed.distributed_type)) == kind
    if kind == 'FSDP':
        assert d['fsdp_config']['fsdp_state_dict_type'] == 'FULL_STATE_DICT' and d['mixed_precision'] == 'bf16'
        assert d['fsdp_config']['fsdp_transformer_layer_cls_to_wrap'] == 'Qwen3DecoderLayer'
    if kind == 'DEEPSPEED':
        ds_file = Path(__file__).resolve().parents[2] / d['deepspeed_config']['deepspeed_config_file']
        ds = json.loads(ds_file.read_text())
        stage = 3 if '3' in strategy else 2
        assert ds['zero_optimization']['stage'] == stage and ds['bf16']['enabled'] == 'auto'
        assert ds['gradient_accumulation_steps'] == 'auto'  # filled from the GRPOConfig, never a second truth
        if stage == 3:
            assert ds['zero_optimization']['stage3_gather_16bit_weights_on_model_save'] is True
    if kind == 'MULTI_GPU':
        assert d['mixed_precision'] == 'bf16'


def test_recipes_name_a_known_strategy_and_single_process_runs_plainly():
    from chorus_train.recipes import _launch, accelerate_config, load_recipe

    for f in RECIPES.glob('*.yaml'):
        r = load_recipe(f)
        if 'cluster' in r:
            accelerate_config(r['cluster'])  # raises on an unknown strategy
    assert accelerate_config({'strategy': 'none'}) is None
    assert _launch({'gpus': 0, 'strategy': 'none'}, 'rl').startswith('python -m chorus_train')
    with pytest.raises(SystemExit):
        accelerate_config({'strategy': 'zero9'})


def test_gpu_requirements_match_the_named_stack():
    """training/requirements-gpu.txt pins the stack the README names (trl 1.16.0 with its vLLM extra,
    vLLM 0.31.0, the torch it pins, transformers below 5.18) and the same trl as requirements-train.txt;
    scripts/check_gpu_requirements.sh runs pip's resolver over it (network; CI)."""
    root = Path(__file__).resolve().parents[1]
    pins = {}
    for line in (root / 'requirements-gpu.txt').read_text().splitlines():
        line = line.split('#')[0].strip()
        if line:
            name = line.split('==')[0].split('>=')[0].split('[')[0].lower()
            pins[name] = line
    assert pins['trl'] == 'trl[vllm]==1.16.0' and pins['vllm'] == 'vllm==0.31.0' and pins['torch'] == 'torch==2.13.0'
    assert pins['transformers'] == 'transformers>=5.10.4,<5.18'
    train = (root / 'requirements-train.txt').read_text()
    assert 'trl==1.16.0' in train and 'accelerate==1.16.0' in train and pins['accelerate'] == 'accelerate==1.16.0'
    readme = (root / 'README.md').read_text()
    assert 'requirements-gpu.txt' in readme and 'vllm==0.31.0' in readme
    assert (root / 'scripts' / 'check_gpu_requirements.sh').exists()


def test_step_time_is_checked_against_the_collective_timeout():
    """Teachers that keep up: the plan estimates a step at its worst (each round's longest reply decoded token by
    token, OPD's teachers one after the other, each in ONE batched HF generate call per round, one
    simulation; then the update) from the tokens/s it states (assumed, or the recipe's measured cluster
    figures) and refuses a recipe whose step passes ddp_timeout_s, which the GRPOConfig carries."""
    from chorus_train import recipes, trainers
    from chorus_train.recipes import load_recipe, opd_config, plan_opd, plan_rl, rl_config

    rec = load_recipe(RECIPES / 'rl.yaml')
    cfg = rl_config(rec, 'stage0', {})
    st = json.loads(plan_rl(cfg, rec['cluster']).removeprefix('plan: '))['step_time']
    rnd = 16384 / 150 + 60
    upd = 8 * 4.02e9 * 32 * 40960 / (8 * 150e12)
    assert (st['round_s'], st['update_s'], st['step_s'], st['ddp_timeout_s'], st['fits']) == (
        round(rnd),
        round(upd),
        round(2 * rnd + upd),
        1800,
        True,
    )
    assert 'assumed' in st['basis']
    with pytest.raises(SystemExit, match='ddp_timeout_s'):
        plan_rl(cfg, {**rec['cluster'], 'decode_tokens_per_s': 5})  # a measured figure that cannot keep up: refused
    orec = load_recipe(RECIPES / 'opd.yaml')
    ocfg = opd_config(orec, {})
    st = json.loads(plan_opd(ocfg, orec['cluster']).removeprefix('plan: '))['step_time']
    rnd = 16384 / 150 + 2 * 16384 / 30 + 60
    upd = 12 * 4.02e9 * 32 * 40960 / (8 * 150e12)
    assert (st['teachers_s'], st['step_s'], st['ddp_timeout_s']) == (round(2 * 16384 / 30), round(2 * rnd + upd), 3600)
    # 8 ranks, 4 blocks of 2 rounds x 4 rows: a rank heads one block a round, its teachers' calls decode 2 sequences
    assert st['teacher_batch'] == 2 and 'one batched HF generate call each per round (2 sequences)' in st['basis']
    assert 'up to 16 sequences a call (assumed)' in st['basis']
    # batched: one rank heading all 4 blocks (8 sequences a call) takes a teacher's call as long as one block
    # (sequential per-block calls would take 4 x); past 16 sequences a call the step slows in proportion
    one = recipes.step_time(ocfg, orec['cluster'], 4.02e9, 1, 32, 2)
    assert (recipes.teacher_batch(ocfg, 1), one['teachers_s']) == (8, round(2 * 16384 / 30))
    wide = opd_config(orec, {'teacher_samples': 8})
    assert recipes.teacher_batch(wide, 1) == 32
    assert recipes.step_time(wide, orec['cluster'], 4.02e9, 1, 32, 2)['teachers_s'] == round(2 * 2 * 16384 / 30)
    assert recipes.teacher_batch(ocfg, 32) == 2  # more ranks than blocks x rounds: still a block per call at most
    with pytest.raises(SystemExit, match='past the collective timeout of 1800 s'):
        plan_opd(opd_config(orec, {'ddp_timeout_s': 1800}), orec['cluster'])  # HF's default timeout: the step cannot fit
    fast = json.loads(
        plan_opd(opd_config(orec, {'ddp_timeout_s': 1800}), {**orec['cluster'], 'teacher_tokens_per_s': 150}).removeprefix('plan: ')
    )
    assert fast['step_time']['fits'] and 'cluster.teacher_tokens_per_s' in fast['step_time']['basis']
    a = trainers.grpo_args(ocfg, group=4, rounds=2, prompts=4, world=8, steps_total=1)
    assert a.ddp_timeout == 3600
