"""Recipes (training/recipes/*.yaml) -> stage configs, and the `--dry-run` plans (GPUs, batch,
steps, memory estimate)."""
from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

from .merge import MergeSpec
from .opd import OPDConfig
from .rl import RLConfig

# parameter counts of the model families the recipes name (for the memory estimates)
KNOWN_PARAMS = {'qwen3-4b': 4.02e9, 'qwen3-1.7b': 1.72e9, 'qwen3-0.6b': 0.6e9, 'tiny': 2.5e6}


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
            res.append((MergeSpec(method=m['method'], models=models, base=b, weights=m.get('weights'), density=m.get('density', 0.5),
                                  label=m.get('label', name)), out_root / name))
    return res


def _params(model: str, cluster: dict) -> float:
    if 'params' in cluster:
        return float(cluster['params'])
    cfg = Path(model) / 'config.json'
    if cfg.exists():
        c = json.loads(cfg.read_text())
        H, L, I, V = c['hidden_size'], c['num_hidden_layers'], c['intermediate_size'], c['vocab_size']
        hd, nh, nkv = c.get('head_dim', H // c['num_attention_heads']), c['num_attention_heads'], c['num_key_value_heads']
        per = H * hd * (2 * nh + 2 * nkv) + 3 * H * I
        return V * H * (1 if c.get('tie_word_embeddings') else 2) + L * per
    for k, v in KNOWN_PARAMS.items():
        if k in model.lower().replace('_', '-'):
            return v
    return KNOWN_PARAMS['qwen3-4b']


def _gb(x: float) -> str:
    return f'{x / 2**30:.1f} GiB'


def memory_estimate(params: float, gpus: int, strategy: str, rollout_gpus: int = 0, teachers: int = 0) -> dict:
    """bf16 weights and grads, fp32 AdamW moments + fp32 master weights (mixed precision):
    16 bytes/param; ZeRO-3/FSDP shards them over the policy GPUs; activations not included."""
    states = params * 16
    shard = states / gpus if strategy in ('fsdp', 'zero3', 'deepspeed-zero3') else states
    out = {'policy_states_total': _gb(states), 'per_policy_gpu': _gb(shard)}
    if rollout_gpus:
        out['rollout_weights_per_gpu'] = _gb(params * 2)
    if teachers:
        out['teacher_weights'] = _gb(teachers * params * 2)
    return out


def plan_rl(cfg: RLConfig, cluster: dict) -> str:
    gpus = int(cluster.get('gpus', 8))
    strategy = cluster.get('strategy', 'fsdp')
    p = _params(cfg.model, cluster)
    seqs = cfg.prompts_per_step * cfg.group_size * cfg.agentic_rounds
    steps = math.ceil(cfg.updates / cfg.mini_batches)
    plan = {
        'stage': 'rl (DAPO, agentic refinement)', 'model': cfg.model, 'params': f'{p / 1e9:.2f}B', 'gpus': gpus, 'strategy': strategy,
        'rollout_engine': cfg.rollout_engine, 'rollout_gpus': cluster.get('rollout_gpus', gpus),
        'global_batch_prompts': cfg.prompts_per_step, 'group_size': cfg.group_size, 'agentic_rounds': cfg.agentic_rounds,
        'carry': cfg.carry, 'sequences_per_step': seqs, 'updates': cfg.updates, 'mini_batches_per_step': cfg.mini_batches,
        'rollout_steps': steps, 'lr': cfg.lr, 'clip': [cfg.eps_lo, cfg.eps_hi], 'max_new_tokens': cfg.max_new_tokens,
        'save_every': cfg.save_every, 'memory': memory_estimate(p, gpus, strategy, cluster.get('rollout_gpus', gpus)),
        'max_tokens_per_step': seqs * cfg.max_new_tokens, 'out': cfg.out,
    }
    return 'plan: ' + json.dumps(plan, indent=2)


def plan_opd(cfg: OPDConfig, cluster: dict) -> str:
    gpus = int(cluster.get('gpus', 8))
    strategy = cluster.get('strategy', 'fsdp')
    p = _params(cfg.student, cluster)
    plan = {
        'stage': 'opd (adaptive multi-teacher)', 'student': cfg.student, 'teachers': cfg.teachers, 'routing': cfg.routing,
        'params': f'{p / 1e9:.2f}B', 'gpus': gpus, 'strategy': strategy, 'global_batch_prompts': cfg.prompts_per_step,
        'samples_per_prompt': {'student': cfg.student_samples, 'each_teacher': cfg.teacher_samples}, 'top_k': cfg.top_k,
        'updates': cfg.updates, 'lr': cfg.lr, 'memory': memory_estimate(p, gpus, strategy, gpus, len(cfg.teachers)), 'out': cfg.out,
    }
    return 'plan: ' + json.dumps(plan, indent=2)
