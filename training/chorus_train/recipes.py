"""Recipes (training/recipes/*.yaml) -> stage configs, and the `--dry-run` plans (GPUs, batch,
steps, memory estimate)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .merge import MergeSpec
from .opd import OPDConfig
from .rl import RLConfig
from .trainers import prompt_draw

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
    """The rl section with `stage`'s settings over it. A stage that names no seed gets the section's seed
    plus its index among the stages: each expert draws its own prompts by default (the experts that
    the merge and OPD combine are meant to differ, paper §5.2), never the same 4,000 by accident."""
    sec = dict(recipe.get('rl', {}))
    stages = sec.pop('stages', {})
    if not stage and stages and not overrides.get('model'):
        stage = next(iter(stages))
    if stage:
        if stage not in stages:
            raise SystemExit(f'stage {stage!r} not in the recipe (stages: {", ".join(stages) or "none"})')
        base_seed = int(sec.get('seed', 0))
        sec.update(stages[stage])
        if 'seed' not in stages[stage]:
            sec['seed'] = base_seed + list(stages).index(stage)
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


def context_plan(cfg, shape: dict, seqs_per_round: int, rollout_gpus: int, cluster: dict, params: float) -> dict:
    """The prompt bound and what it costs the rollout engine: the largest prompt a row may have (the recipe's
    context less the reply budget: rl.fit_prompt cuts older turns to it), vLLM's max_model_len (the
    context), and the KV cache of one round's sequences on a rollout GPU if every one is as long as the
    context, against what vLLM may take (`vllm_gpu_memory_utilization` x `gpu_memory_gib`, less its bf16
    weights)."""
    kv_token = 2 * shape['num_hidden_layers'] * shape['num_key_value_heads'] * shape['head_dim'] * 2  # K and V, bf16
    per_gpu = math.ceil(seqs_per_round / max(rollout_gpus, 1))
    need = kv_token * cfg.max_context * per_gpu
    out = {
        'max_context': cfg.max_context,
        'largest_prompt_tokens': cfg.prompt_cap,
        'vllm_max_model_len': cfg.max_context,
        'sequences_per_rollout_gpu': per_gpu,
        'kv_cache_largest_round_per_gpu': _gb(need),
    }
    if cfg.rollout_engine == 'vllm':
        gib = float(cluster.get('gpu_memory_gib', 80))
        util = float(cluster.get('vllm_gpu_memory_utilization', 0.3))  # TRL 1.16's default
        avail = util * gib * 2**30 - 2 * params
        out['kv_cache_available_per_gpu'] = _gb(max(avail, 0))
        if need > avail:
            out['kv_note'] = (
                "the largest round does not fit vLLM's share: vLLM queues the rest (slower), or raise vllm_gpu_memory_utilization"
            )
        if getattr(cfg, 'vllm_mode', 'colocate') == 'server':
            out['vllm_server_flag'] = f'trl vllm-serve --max_model_len {cfg.max_context}'
    return out


def checkpoint_disk(cfg, params: float, strategy: str, steps: int) -> dict:
    """Disk of a stage's checkpoints. Each holds the model in the compute dtype (bf16: masters.py, what merge,
    OPD and export read), AdamW's two fp32 moments (8 B/param) and the fp32 masters' low bits (2 B/param,
    chorus_resume/) for an exact resume; under DeepSpeed its own checkpoint (fp32 masters and moments, 12
    B/param) beside a 16-bit model. The Trainer keeps the newest `keep_checkpoints` and writes the next
    before it removes the oldest: the peak is one more."""
    model_b = 2 if cfg.dtype == 'bfloat16' else 4
    deepspeed = strategy in ('zero2', 'deepspeed-zero2', 'zero3', 'deepspeed-zero3')
    resume_b = 12 if deepspeed else 8 + (2 if model_b == 2 else 0)
    per = params * (model_b + resume_b)
    saves = math.ceil(steps / cfg.save_every) if cfg.save_every else 0
    kept = min(saves, max(int(cfg.keep_checkpoints or 0), 1))
    return {
        'model_file': _gb(params * model_b) + (' (bf16)' if model_b == 2 else ' (fp32)'),
        'resume_state': _gb(params * resume_b),
        'per_checkpoint': _gb(per),
        'checkpoints_written': saves,
        'checkpoints_kept': kept,
        'disk_peak': _gb(per * (kept + 1 if saves > kept else kept)),
    }


# Throughput figures for the step-time check (ASSUMED: no accelerator here, and no public benchmark of this
# exact setup is cited): a recipe's `cluster` may replace each one with a measured figure
# (scripts/gpu_smoke.sh prints the rollout tokens/s and the step seconds).
ASSUMED_DECODE_TOKENS_PER_S = 150.0  # one sequence in vLLM, ~4B bf16 on one H100: below the ~400/s bandwidth
# bound (8 GB of weights read per token at 3.35 TB/s), for KV reads at long context and sampling
ASSUMED_TEACHER_TOKENS_PER_S = 30.0  # decode steps per second of one HF generate call (OPD's teachers:
# opd_state.py), i.e. tokens/s of each sequence in it: a kernel launch per op per token, no CUDA graphs
ASSUMED_TEACHER_BATCH = 16  # sequences one such call decodes at that step rate: a teacher answers every block a
# rank heads in a round in ONE batched call (left-padded), and up to this many sequences a decode step is bound by
# the launches and the weight reads, as for one; past it the step slows in proportion (ceil(batch / 16))
ASSUMED_TRAIN_TFLOPS = 150.0  # effective bf16 TFLOP/s per GPU in the update (H100 dense peak ~989; FSDP, recompute)


def teacher_batch(cfg, world: int) -> int:
    """The largest batch one teacher's generate call decodes on a rank in a round: teacher_samples x the task
    blocks whose first student member of that round the rank holds (opd_state.OPDState.round; the rows of a
    step split over the ranks in order: prompts x rounds x student_samples)."""
    G, R = cfg.student_samples, cfg.agentic_rounds
    rows = cfg.prompts_per_step * R * G
    per = max(rows // max(world, 1), 1)
    heads = 0
    for r0 in range(0, rows, per):
        for rnd in range(R):
            heads = max(heads, sum(1 for g in range(r0, min(r0 + per, rows)) if g % G == 0 and (g % (R * G)) // G == rnd))
    return heads * cfg.teacher_samples


def step_time(cfg, cluster: dict, params: float, gpus: int, rows: int, teachers: int = 0) -> dict:
    """A step's wall time at its worst, against the collective timeout (`ddp_timeout_s`): each round waits for
    its longest reply (max_new_tokens decoded one after another), for the rank that samples a block's
    teachers (one batched HF generate call per teacher, the teachers one after the other: `teacher_batch`), and
    for one simulation (the service's timeout_s); then the update (8 x params FLOPs per token: forward, backward, recompute; OPD adds the student's and a
    teacher's forward on distilled rows) over every row at the full context."""
    dec = float(cluster.get('decode_tokens_per_s', ASSUMED_DECODE_TOKENS_PER_S))
    tdec = float(cluster.get('teacher_tokens_per_s', ASSUMED_TEACHER_TOKENS_PER_S))
    tflops = float(cluster.get('train_tflops_per_gpu', ASSUMED_TRAIN_TFLOPS))
    decode_s = cfg.max_new_tokens / dec
    batch = teacher_batch(cfg, gpus) if teachers else 0
    teacher_s = teachers * cfg.max_new_tokens / tdec * max(-(-batch // ASSUMED_TEACHER_BATCH), 1)
    round_s = decode_s + teacher_s + float(cfg.timeout_s)
    train_s = (8 + (4 if teachers else 0)) * params * rows * cfg.max_context / (max(gpus, 1) * tflops * 1e12)
    step_s = cfg.agentic_rounds * round_s + train_s
    timeout = int(getattr(cfg, 'ddp_timeout_s', 1800))
    basis = [
        f'decode {dec:g} tokens/s per sequence ({"cluster.decode_tokens_per_s" if "decode_tokens_per_s" in cluster else "assumed"})',
        f'training {tflops:g} TFLOP/s per GPU ({"cluster.train_tflops_per_gpu" if "train_tflops_per_gpu" in cluster else "assumed"})',
    ]
    if teachers:
        basis.insert(
            1,
            f'teachers: one batched HF generate call each per round ({batch} sequences), {tdec:g} tokens/s per sequence '
            f'({"cluster.teacher_tokens_per_s" if "teacher_tokens_per_s" in cluster else "assumed"}) for up to '
            f'{ASSUMED_TEACHER_BATCH} sequences a call (assumed)',
        )
    return {
        'round_s': round(round_s),
        'decode_s': round(decode_s),
        **({'teachers_s': round(teacher_s), 'teacher_batch': batch} if teachers else {}),
        'simulation_s': cfg.timeout_s,
        'update_s': round(train_s),
        'step_s': round(step_s),
        'ddp_timeout_s': timeout,
        'fits': step_s < timeout,
        'basis': '; '.join(basis),
    }


def refuse_slow(name: str, st: dict) -> None:
    """A recipe whose step cannot end inside the collective timeout stops here (the dry run and the run alike)."""
    if not st['fits']:
        raise SystemExit(
            f'{name}: a step may take ~{st["step_s"]} s ({st["basis"]}), past the collective timeout of {st["ddp_timeout_s"]} s '
            '(a rank waiting that long in a gather stops the job): raise ddp_timeout_s in the recipe, or shorten the step '
            '(max_new_tokens, teachers), or set the measured cluster.decode_tokens_per_s / teacher_tokens_per_s'
        )


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
    n = data_records(data)
    out = {'data_records': n, 'data_records_basis': 'file' if p and p.is_file() else 'paper (11,488)', 'prompts_drawn': drawn}
    out['epochs'] = round((offset + drawn) / n, 3) if n else None
    if n and offset + drawn > n:
        out['data_note'] = f'{offset + drawn} prompts from {n} records: the stage wraps into a second epoch'
    return out


def data_records(data: str) -> int:
    """Records in the tasks file when it is here, else the paper's 11,488 (what a dry run plans with)."""
    p = Path(data) if data else None
    return sum(1 for line in p.open() if line.strip()) if p and p.is_file() else PAPER_RECORDS


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
        'context': context_plan(cfg, _shape(cfg.model), per_round, rollout_gpus, cluster, p),
        'seed': cfg.seed,
        **_data_math(cfg.data, steps * cfg.prompts_per_step),
        'checkpoints': checkpoint_disk(cfg, p, strategy, cfg.updates),
        'step_time': step_time(cfg, cluster, p, gpus, seqs),
        'out': cfg.out,
        'estimate': gpu_hours(float(cluster.get('step_gpu_s', REFERENCE_STEP_GPU_S)), steps, gpus),
    }
    if gpus and seqs % gpus and strategy != 'none':
        plan['note'] = f'{seqs} sequences per step over {gpus} GPUs: micro-batches are uneven (DP ranks take prompts; see README)'
    refuse_slow(f'rl ({cfg.out})', plan['step_time'])
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
        # the student's samples go through vLLM; the teachers' through HF generate on each rank, one batched call per
        # teacher and round (opd_state.py)
        'context': context_plan(cfg, _shape(cfg.student), cfg.prompts_per_step * cfg.student_samples, gpus, cluster, p),
        'seed': cfg.seed,
        **_data_math(cfg.data, cfg.updates * cfg.prompts_per_step, cfg.data_offset_steps * cfg.prompts_per_step),
        'lr': cfg.lr,
        'adam_betas': [cfg.adam_beta1, cfg.adam_beta2],
        'temperature': cfg.temperature,
        'checkpoints': checkpoint_disk(cfg, p, strategy, cfg.updates),
        'step_time': step_time(cfg, cluster, p, gpus, cfg.prompts_per_step * cfg.agentic_rounds * cfg.student_samples, len(cfg.teachers)),
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
    refuse_slow(f'opd ({cfg.out})', plan['step_time'])
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


def _trained_stage(name: str, seed: int, plan: dict, draws: dict[str, set], **extra: Any) -> dict:
    """A chain plan row for a stage that trains (RL, OPD): its draw and its plan's figures."""
    return {
        'stage': name,
        'gpus': plan['gpus'],
        'updates': plan['updates'],
        **extra,
        'runs_on': EVERY_NODE,
        **_draw_summary(name, seed, plan, draws),
        **{k: plan[k] for k in ('context', 'memory', 'checkpoints', 'step_time', 'estimate')},
    }


def _draw_summary(name: str, seed: int, plan: dict, draws: dict[str, set]) -> dict:
    """A stage's seed, prompts drawn (distinct) and how many of them each earlier stage drew too."""
    mine = draws[name]
    return {
        'seed': seed,
        'prompts_drawn': plan['prompts_drawn'],
        'distinct_prompts': len(mine),
        'overlap_prompts': {k: len(mine & v) for k, v in draws.items() if k != name},
    }


EVERY_NODE, ONCE = 'every node', 'once per job (node 0; the other nodes wait for it)'


def chain_plan(recipe: dict, path) -> tuple[str, list[tuple[str, bool]]]:
    """The chain recipe -> (plan JSON with per-stage estimates and totals, [(command, once per job)]): the
    distributed launches run on every node (each joins the job with its NODE_RANK); the merges and the
    export, which write shared files, run once per job (cli.run_chain)."""
    c = recipe.get('chain')
    if not c:
        raise SystemExit(f'{path}: no `chain` section (rl, stages, merge, opd, export)')
    root = Path(path).parent
    rel = lambda f: str(root / f)  # noqa: E731
    rl_recipe = load_recipe(root / c['rl'])
    opd_recipe = load_recipe(root / c['opd'])
    stages, total, commands, draws = [], 0.0, [], {}
    for st in c.get('stages', ['stage0', 'stage1', 'stage2']):
        cfg = rl_config(rl_recipe, st, {})
        p = json.loads(plan_rl(cfg, rl_recipe.get('cluster', {})).removeprefix('plan: '))
        draws[f'rl {st}'] = set(prompt_draw(p['data_records'], cfg.seed, cfg.prompts_per_step, p['rollout_steps']))
        stages.append(_trained_stage(f'rl {st}', cfg.seed, p, draws, sequences_per_step=p['sequences_per_step']))
        total += p['estimate']['gpu_hours']
        commands.append((_launch(rl_recipe.get('cluster', {}), f'rl --config {rel(c["rl"])} --stage {st}'), False))
    merges = merge_specs(load_recipe(root / c['merge']))
    mp = _params('', rl_recipe.get('cluster', {}))
    stages.append(
        {
            'stage': 'merge',
            'merges': len(merges),
            'runs_on': ONCE,
            'where': 'CPU (streams; about 1 GiB of memory whatever the model size)',
            'reads': f'{len(merges)} x 3 bf16 model files of {_gb(mp * 2)}',
            'checkpoints': {'per_checkpoint': _gb(mp * 2) + ' (bf16 model)', 'disk_peak': _gb(mp * 2 * len(merges))},
        }
    )
    commands.append((f'python -m chorus_train merge --config {rel(c["merge"])}', True))
    ocfg = opd_config(opd_recipe, {})
    p = json.loads(plan_opd(ocfg, opd_recipe.get('cluster', {})).removeprefix('plan: '))
    draws['opd'] = set(prompt_draw(p['data_records'], ocfg.seed, ocfg.prompts_per_step, ocfg.updates, p['data_offset_prompts']))
    stages.append(_trained_stage('opd', ocfg.seed, p, draws))
    total += p['estimate']['gpu_hours']
    commands.append((_launch(opd_recipe.get('cluster', {}), f'opd --config {rel(c["opd"])}'), False))
    ex = c.get('export', {})
    if ex:
        commands.append((f'python -m chorus_train export {ex["checkpoint"]} {ex["out"]}', True))
        stages.append({'stage': 'export', 'runs_on': ONCE, 'where': 'CPU, minutes'})
    plan = {
        'chain': str(path),
        'nodes': cluster_shape(rl_recipe.get('cluster', {}))[0],
        'stages': stages,
        'total_gpu_hours_estimate': round(total, 1),
        'basis': REFERENCE_BASIS,
    }
    return 'plan: ' + json.dumps(plan, indent=2), commands
