"""Recipes (training/recipes/*.yaml) -> stage configs, and the `--dry-run` plans (GPUs, batch,
steps, memory estimate)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from .merge import MergeSpec
from .opd import OPDConfig
from .rl import RLConfig

# parameter counts of the model families the recipes name (for the memory estimates)
KNOWN_PARAMS = {'qwen3-4b': 4.02e9, 'qwen3-1.7b': 1.72e9, 'qwen3-0.6b': 0.6e9, 'tiny': 2.5e6}
# Qwen3-4B's shapes (config.json of Qwen/Qwen3-4B): layers, hidden, KV heads, head dim, vocabulary
QWEN3_4B = {'num_hidden_layers': 36, 'hidden_size': 2560, 'num_key_value_heads': 8, 'head_dim': 128, 'vocab_size': 151936}

# Throughput basis for the GPU-hour ESTIMATES (not measured here): the reference's 2 x H100 launch
# script (HejiaZ2023/slime examples/agentic_cov/run-qwen3-4B-2xH100.sh) notes a checkpoint every
# ~70 min at 50 steps per checkpoint (eval included): ~84 s per RL step of 4 prompts x 2 rounds x
# 4 samples (<= 16,384 new tokens) on 2 GPUs = ~168 H100-seconds per step. Replace it with your
# engine's measured figure (scripts/gpu_smoke.sh prints rollout tokens/s) via cluster.step_gpu_s.
REFERENCE_STEP_GPU_S = 168.0
REFERENCE_BASIS = 'reference 2xH100 script: ~70 min per 50 RL steps (incl. eval) = ~168 H100-s/step; an estimate, not measured here'


def load_recipe(path) -> dict:
    """A recipe YAML; `base: other.yaml` (relative to this file) is read first and this file's
    sections are merged over it, key by key (so a 2-node recipe only restates `cluster`)."""
    import yaml

    path = Path(path)
    d = yaml.safe_load(path.read_text()) or {}
    base = d.pop('base', None)
    if not base:
        return d
    merged = load_recipe(path.parent / base)
    for k, v in d.items():
        merged[k] = {**merged.get(k, {}), **v} if isinstance(v, dict) and isinstance(merged.get(k), dict) else v
    return merged


def cluster_shape(cluster: dict) -> tuple[int, int, int]:
    """(nodes, GPUs per node, GPUs) from `nodes` x `gpus_per_node` (or the older `gpus`)."""
    nodes = int(cluster.get('nodes', 1))
    per = int(cluster.get('gpus_per_node', cluster.get('gpus', 8) if nodes == 1 else 8))
    return nodes, per, nodes * per


def rl_config(recipe: dict, stage: str | None, overrides: dict) -> RLConfig:
    sec = dict(recipe.get('rl', {}))
    stages = sec.pop('stages', {})
    if stage:
        if stage not in stages:
            raise SystemExit(f'stage {stage!r} not in the recipe (stages: {", ".join(stages) or "none"})')
        sec.update(stages[stage])
    elif stages and not overrides.get('model'):
        stage = next(iter(stages))
        sec.update(stages[stage])
    sec.update(overrides)
    return RLConfig.from_dict(sec)


def opd_config(recipe: dict, overrides: dict) -> OPDConfig:
    sec = dict(recipe.get('opd', {}))
    sec.update(overrides)
    return OPDConfig.from_dict(sec)


def merge_specs(recipe: dict) -> list[tuple[MergeSpec, Path]]:
    sec = recipe.get('merge', {})
    models = [(n, Path(p)) for n, p in sec['models'].items()]
    out_root = Path(sec.get('out', 'runs/merge'))
    res = []
    for m in sec['merges']:
        bases = m.get('bases') or [m.get('base')]
        for b in bases:
            name = m.get('name', m['method']) + (f'_base-{b}' if b and len(bases) > 1 else '')
            res.append(
                (
                    MergeSpec(
                        method=m['method'],
                        models=models,
                        base=b,
                        weights=m.get('weights'),
                        density=m.get('density', 0.5),
                        label=m.get('label', name),
                    ),
                    out_root / name,
                )
            )
    return res


def _shape(model: str) -> dict:
    cfg = Path(model) / 'config.json'
    if cfg.exists():
        c = json.loads(cfg.read_text())
        return {k: c.get(k, QWEN3_4B[k]) for k in QWEN3_4B} | ({'head_dim': c['head_dim']} if 'head_dim' in c else {})
    return QWEN3_4B


def _params(model: str, cluster: dict) -> float:
    if 'params' in cluster:
        return float(cluster['params'])
    cfg = Path(model) / 'config.json'
    if cfg.exists():
        c = json.loads(cfg.read_text())
        H, L, I, V = c['hidden_size'], c['num_hidden_layers'], c['intermediate_size'], c['vocab_size']  # noqa: E741
        hd, nh, nkv = c.get('head_dim', H // c['num_attention_heads']), c['num_attention_heads'], c['num_key_value_heads']
        per = H * hd * (2 * nh + 2 * nkv) + 3 * H * I
        return V * H * (1 if c.get('tie_word_embeddings') else 2) + L * per
    for k, v in KNOWN_PARAMS.items():
        if k in model.lower().replace('_', '-'):
            return v
    return KNOWN_PARAMS['qwen3-4b']


def _gb(x: float) -> str:
    return f'{x / 2**30:.1f} GiB'


def memory_estimate(
    params: float,
    gpus: int,
    strategy: str,
    rollout_gpus: int = 0,
    teachers: int = 0,
    shape: dict | None = None,
    seq_tokens: int = 0,
    rollout_tokens: int = 0,
) -> dict:
    """Per-GPU memory, estimated: bf16 weights and grads, fp32 AdamW moments + fp32 master weights
    (mixed precision): 16 bytes/param, sharded over the policy GPUs by ZeRO-3/FSDP; activations
    of one training sequence of `seq_tokens` with full recomputation (bf16 layer inputs kept, one
    layer live) and its fp32 logits + their gradient (the largest single term at 16k tokens:
    compute log-probs in chunks); the rollout engine's bf16 weights and the KV cache of the step's
    `rollout_tokens` spread over the rollout GPUs; bf16 teachers (OPD, unsharded)."""
    states = params * 16
    if strategy in ('fsdp', 'zero3', 'deepspeed-zero3'):
        shard = states / gpus
    elif strategy in ('zero2', 'deepspeed-zero2'):  # bf16 parameters replicated; gradients, fp32 master and moments sharded
        shard = params * 2 + params * 14 / gpus
    else:  # ddp: fp32 parameters, gradients and AdamW moments on every rank (16 B/param)
        shard = states
    out = {'policy_states_total': _gb(states), 'per_policy_gpu': _gb(shard)}
    if shape and seq_tokens:
        L, H, V = shape['num_hidden_layers'], shape['hidden_size'], shape['vocab_size']
        out['activations_per_sequence'] = _gb(L * seq_tokens * H * 2 + seq_tokens * H * 34)
        out['logits_fp32_per_sequence'] = _gb(seq_tokens * V * 4 * 2)
    if rollout_gpus:
        out['rollout_weights_per_gpu'] = _gb(params * 2)
        if shape and rollout_tokens:
            kv = 2 * shape['num_hidden_layers'] * shape['num_key_value_heads'] * shape['head_dim'] * 2
            out['rollout_kv_cache_per_gpu'] = _gb(kv * rollout_tokens / rollout_gpus)
    if teachers:
        out['teacher_weights_per_gpu'] = _gb(teachers * params * 2)
    return out


def gpu_hours(step_gpu_s: float, steps: int, gpus: int) -> dict:
    h = step_gpu_s * steps / 3600
    return {'gpu_hours': round(h, 1), 'wall_hours_if_linear': round(h / max(gpus, 1), 1), 'basis': REFERENCE_BASIS}


PAPER_RECORDS = 11488  # CodeV-R1 after the paper's filter (docs/protocol.md §8); the reference code's file has 5,918


def _data_math(data: str, drawn: int, offset: int = 0) -> dict:
    """How many prompts a stage draws and what fraction of an epoch that is: of the tasks file when it is
    here, else of the paper's 11,488 filtered records. One step takes prompts_per_step distinct tasks
    (TRL's RepeatSampler: a seeded permutation, whole batches), so a stage repeats no prompt while
    offset + drawn <= records."""
    p = Path(data) if data else None
    n = sum(1 for line in p.open() if line.strip()) if p and p.is_file() else PAPER_RECORDS
    out = {'data_records': n, 'data_records_basis': 'file' if p and p.is_file() else 'paper (11,488)', 'prompts_drawn': drawn}
    out['epochs'] = round((offset + drawn) / n, 3) if n else None
    if n and offset + drawn > n:
        out['data_note'] = f'{offset + drawn} prompts from {n} records: the stage wraps into a second epoch'
    return out


def plan_rl(cfg: RLConfig, cluster: dict) -> str:
    nodes, per, gpus = cluster_shape(cluster)
    strategy = cluster.get('strategy', 'fsdp')
    p = _params(cfg.model, cluster)
    per_round = cfg.prompts_per_step * cfg.group_size
    seqs = per_round * cfg.agentic_rounds
    steps = math.ceil(cfg.updates / cfg.mini_batches)
    rollout_gpus = int(cluster.get('rollout_gpus', gpus))
    prompt_budget = int(cluster.get('prompt_tokens', 4096))
    plan = {
        'stage': 'rl (DAPO, agentic refinement)',
        'model': cfg.model,
        'params': f'{p / 1e9:.2f}B',
        'nodes': nodes,
        'gpus_per_node': per,
        'gpus': gpus,
        'strategy': strategy,
        'accelerate_config': str(accelerate_config(cluster) or '-'),
        'rollout_engine': cfg.rollout_engine,
        'rollout_gpus': rollout_gpus,
        'global_batch_prompts': cfg.prompts_per_step,
        'group_size': cfg.group_size,
        'sequences_per_round': per_round,
        'agentic_rounds': cfg.agentic_rounds,
        'carry': cfg.carry,
        'sequences_per_step': seqs,
        'updates': cfg.updates,
        'mini_batches_per_step': cfg.mini_batches,
        'rollout_steps': steps,
        'lr': cfg.lr,
        'adam_betas': [cfg.adam_beta1, cfg.adam_beta2],
        'clip': [cfg.eps_lo, cfg.eps_hi],
        'temperature': cfg.temperature,
        'top_p': cfg.top_p,
        'max_new_tokens': cfg.max_new_tokens,
        'save_every': cfg.save_every,
        'memory': memory_estimate(
            p,
            gpus,
            strategy,
            rollout_gpus,
            shape=_shape(cfg.model),
            seq_tokens=prompt_budget + cfg.max_new_tokens,
            rollout_tokens=per_round * (prompt_budget + cfg.max_new_tokens),
        ),
        'max_tokens_per_step': seqs * cfg.max_new_tokens,
        **_data_math(cfg.data, steps * cfg.prompts_per_step),
        'out': cfg.out,
        'estimate': gpu_hours(float(cluster.get('step_gpu_s', REFERENCE_STEP_GPU_S)), steps, gpus),
    }
    if gpus and seqs % gpus and strategy != 'none':
        plan['note'] = f'{seqs} sequences per step over {gpus} GPUs: micro-batches are uneven (DP ranks take prompts; see README)'
    return 'plan: ' + json.dumps(plan, indent=2)


def plan_opd(cfg: OPDConfig, cluster: dict) -> str:
    nodes, per, gpus = cluster_shape(cluster)
    strategy = cluster.get('strategy', 'fsdp')
    p = _params(cfg.student, cluster)
    prompt_budget = int(cluster.get('prompt_tokens', 4096))
    per_round = cfg.prompts_per_step * (cfg.student_samples + cfg.teacher_samples * len(cfg.teachers))
    # an OPD update rolls out student AND teachers: (4 + 2 x 2) / 4 = 2x an RL step's rollouts
    factor = (cfg.student_samples + cfg.teacher_samples * len(cfg.teachers)) / max(cfg.student_samples, 1)
    plan = {
        'stage': 'opd (adaptive multi-teacher)',
        'student': cfg.student,
        'teachers': cfg.teachers,
        'routing': cfg.routing,
        'params': f'{p / 1e9:.2f}B',
        'nodes': nodes,
        'gpus_per_node': per,
        'gpus': gpus,
        'strategy': strategy,
        'accelerate_config': str(accelerate_config(cluster) or '-'),
        'global_batch_prompts': cfg.prompts_per_step,
        'agentic_rounds': cfg.agentic_rounds,
        'gated': 'every round',
        'samples_per_prompt': {'student': cfg.student_samples, 'each_teacher': cfg.teacher_samples},
        'top_k': cfg.top_k,
        'updates': cfg.updates,
        'gate_closed': cfg.gate_closed,
        'opd_lambda': cfg.opd_lambda,
        'data_offset_prompts': cfg.data_offset_steps * cfg.prompts_per_step,
        **_data_math(cfg.data, cfg.updates * cfg.prompts_per_step, cfg.data_offset_steps * cfg.prompts_per_step),
        'lr': cfg.lr,
        'adam_betas': [cfg.adam_beta1, cfg.adam_beta2],
        'temperature': cfg.temperature,
        'memory': memory_estimate(
            p,
            gpus,
            strategy,
            gpus,
            len(cfg.teachers),
            shape=_shape(cfg.student),
            seq_tokens=prompt_budget + cfg.max_new_tokens,
            rollout_tokens=per_round * (prompt_budget + cfg.max_new_tokens),
        ),
        'out': cfg.out,
        'estimate': gpu_hours(float(cluster.get('step_gpu_s', REFERENCE_STEP_GPU_S)) * factor, cfg.updates, gpus),
    }
    return 'plan: ' + json.dumps(plan, indent=2)


# training/configs/accelerate/<file> per `cluster.strategy` (the distribution the launch commands pass)
ACCELERATE_CONFIGS = Path(__file__).resolve().parents[1] / 'configs' / 'accelerate'
STRATEGIES = {
    'ddp': 'ddp.yaml',
    'fsdp': 'fsdp.yaml',
    'zero2': 'zero2.yaml',
    'deepspeed-zero2': 'zero2.yaml',
    'zero3': 'zero3.yaml',
    'deepspeed-zero3': 'zero3.yaml',
}


def accelerate_config(cluster: dict) -> Path | None:
    """The accelerate config file for the recipe's `cluster.strategy` (None: one process, no distribution)."""
    strategy = str(cluster.get('strategy', 'fsdp'))
    if strategy == 'none':
        return None
    if strategy not in STRATEGIES:
        raise SystemExit(f'unknown cluster.strategy {strategy!r}; one of none, {", ".join(STRATEGIES)}')
    return ACCELERATE_CONFIGS / STRATEGIES[strategy]


def _launch(cluster: dict, args: str) -> str:
    nodes, per, gpus = cluster_shape(cluster)
    cfg = accelerate_config(cluster)
    if gpus <= 1 or cfg is None:
        return f'python -m chorus_train {args}'
    acc = f'accelerate launch --config_file {cfg}'
    if nodes == 1:
        return f'{acc} --num_machines 1 --num_processes {gpus} -m chorus_train {args}'
    return (
        f'{acc} --num_machines {nodes} --machine_rank $NODE_RANK --main_process_ip $MASTER_ADDR '
        f'--main_process_port 29500 --num_processes {gpus} -m chorus_train {args}'
    )


def chain_plan(recipe: dict, path) -> tuple[str, list[str]]:
    """The chain recipe -> (plan JSON with per-stage estimates and totals, launch commands)."""
    c = recipe.get('chain')
    if not c:
        raise SystemExit(f'{path}: no `chain` section (rl, stages, merge, opd, export)')
    root = Path(path).parent
    rel = lambda f: str(root / f)  # noqa: E731
    rl_recipe = load_recipe(root / c['rl'])
    opd_recipe = load_recipe(root / c['opd'])
    stages, total, commands = [], 0.0, []
    for st in c.get('stages', ['stage0', 'stage1', 'stage2']):
        p = json.loads(plan_rl(rl_config(rl_recipe, st, {}), rl_recipe.get('cluster', {})).removeprefix('plan: '))
        stages.append(
            {
                'stage': f'rl {st}',
                'gpus': p['gpus'],
                'updates': p['updates'],
                'sequences_per_step': p['sequences_per_step'],
                'memory': p['memory'],
                'estimate': p['estimate'],
            }
        )
        total += p['estimate']['gpu_hours']
        commands.append(_launch(rl_recipe.get('cluster', {}), f'rl --config {rel(c["rl"])} --stage {st}'))
    merges = merge_specs(load_recipe(root / c['merge']))
    stages.append({'stage': 'merge', 'merges': len(merges), 'where': 'CPU (streams; about 1 GiB of memory whatever the model size)'})
    commands.append(f'python -m chorus_train merge --config {rel(c["merge"])}')
    p = json.loads(plan_opd(opd_config(opd_recipe, {}), opd_recipe.get('cluster', {})).removeprefix('plan: '))
    stages.append({'stage': 'opd', 'gpus': p['gpus'], 'updates': p['updates'], 'memory': p['memory'], 'estimate': p['estimate']})
    total += p['estimate']['gpu_hours']
    commands.append(_launch(opd_recipe.get('cluster', {}), f'opd --config {rel(c["opd"])}'))
    ex = c.get('export', {})
    if ex:
        commands.append(f'python -m chorus_train export {ex["checkpoint"]} {ex["out"]}')
        stages.append({'stage': 'export', 'where': 'CPU, minutes'})
    plan = {'chain': str(path), 'stages': stages, 'total_gpu_hours_estimate': round(total, 1), 'basis': REFERENCE_BASIS}
    return 'plan: ' + json.dumps(plan, indent=2), commands
