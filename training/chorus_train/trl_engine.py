"""RL (DAPO) and OPD on TRL's `GRPOTrainer` (trl 1.16): the engine owns generation (HF generate, or
vLLM colocated / as a `trl vllm-serve` server with weight sync), the clipped surrogate, data
parallelism and sharding (accelerate: DDP, FSDP, DeepSpeed), checkpoints and resume. CHORUS
supplies only what is its own:

- the environment (`ChorusRollout`, TRL's `rollout_func`): per task, the direct group, then the
  worst scored member (its <think> stripped) and the service's feedback turn as the refinement
  prompt (envs.py / rl.carry_messages; the service owns prompts, parsing and feedback);
- the reward, R = 1 + coverage when the testbench runs, else 0, from the service (a member the
  service fails to score is re-scored, then left out: reward None and no loss tokens, never 0);
- for OPD (`ChorusOPDTrainer`), the gate, routing and integrity rules of opd.py, decided on every
  agentic round; a round whose gate opens gets the per-token distillation advantage
  a_t = r_t - b_t (opd.opd_advantages) in place of the group advantage, every other round keeps
  the DAPO loss on the student's group.

The pieces: trainers.py (the GRPOConfig and the GRPOTrainer subclasses), rollout.py (the rollout and
the reward function), opd_state.py (OPD's part of the rollout), callbacks.py (metrics, the routing
RNG in checkpoints). This module wires them into the entry points `train_rl` and `train_opd`.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

from . import opd as O
from .callbacks import ROUTE_RNG, _metrics_callback, _rng_state, _route_rng_callback
from .envs import Env
from .opd_state import OPDState
from .policy import save_tokenizer
from .rollout import ChorusRollout, chorus_reward
from .trainers import _trainer_classes, grpo_args

# ---------------------------------------------------------------------------------------------
# the entry points


def _dataset(tasks: list[dict]):
    from datasets import Dataset

    # the prompt column is a label: the conversation comes from the environment, inside the rollout
    return Dataset.from_list([{'prompt': f'chorus task {t.get("id", i)}', 'task_idx': i} for i, t in enumerate(tasks)])


def _last_step(out: Path) -> tuple[Path | None, int]:
    from transformers.trainer_utils import get_last_checkpoint

    ck = get_last_checkpoint(str(out)) if out.exists() else None
    if ck is None:
        return None, 0
    st = json.loads((Path(ck) / 'trainer_state.json').read_text())
    return Path(ck), int(st.get('global_step', 0))


def _build(cfg, tasks, env, model, tok, *, group, rounds, prompts, steps, resume, sample_fn, opd_state, teachers, log, use_vllm, args_over):
    from .policy import load_policy

    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    ck, done = _last_step(out) if resume else (None, 0)
    if model is None:
        model, tok = load_policy(str(ck) if ck else (getattr(cfg, 'model', '') or getattr(cfg, 'student', '')), cfg.dtype, cfg.device)
    mini = max(int(getattr(cfg, 'mini_batches', 1)), 1)
    total = cfg.updates if steps is None else min(cfg.updates, done + steps * mini)
    world = int(os.environ.get('WORLD_SIZE', '1'))
    top_k = getattr(cfg, 'top_k', None) if opd_state is None else None  # OPD's top_k is the baseline's K, not sampling
    args = grpo_args(
        cfg,
        group=group,
        rounds=rounds,
        prompts=prompts,
        world=world,
        steps_total=total,
        use_vllm=use_vllm,
        sample_top_k=top_k,
        **(args_over or {}),
    )
    rollout = ChorusRollout(tasks, env, tok, cfg, group, rounds, sample_fn=sample_fn, opd=opd_state)
    if opd_state is not None:
        opd_state.rollout = rollout
    Plain, OPDT = _trainer_classes()
    kw = dict(
        model=model,
        reward_funcs=[chorus_reward],
        args=args,
        train_dataset=_dataset(tasks),
        processing_class=tok,
        rollout_func=rollout,
        chorus_rounds=rounds,
        callbacks=[_metrics_callback(out, rollout, opd_state, log)],
    )
    trainer = OPDT(teachers=teachers, opd_state=opd_state, **kw) if opd_state is not None else Plain(**kw)
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # our metrics line per step replaces the raw log dicts
    return trainer, ck, tok


def _finish(trainer, cfg, tok, out: Path, name: str) -> None:
    if trainer.is_world_process_zero():
        (out / name).write_text(json.dumps(asdict(cfg), indent=2) + '\n')
        for ck in out.glob('checkpoint-*'):  # transformers.js and the exporter read the template from tokenizer_config.json
            if (ck / 'config.json').exists():
                save_tokenizer(tok, ck)


def end_distributed() -> None:
    """Leave the process group cleanly once the caller is done with training: every rank waits for the
    others (rank 0 may still be saving), then the group is destroyed. Without it a rank that reaches
    interpreter shutdown first can abort in gloo's destructor ("terminate called without an active
    exception"), which torchrun reports as a failed run although the step finished."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def train_rl(
    cfg,
    tasks: list[dict],
    env: Env,
    model=None,
    tok=None,
    steps: int | None = None,
    resume: bool = True,
    sample_fn=None,
    log=print,
    args_over: dict | None = None,
) -> dict:
    """DAPO with agentic refinement on TRL. Returns {'trainer', 'model', 'tokenizer', 'rollout', 'rank', 'world'}."""
    if cfg.rollout_engine not in ('hf', 'vllm'):
        raise SystemExit(f"rollout_engine must be 'hf' or 'vllm', got '{cfg.rollout_engine}'")
    trainer, ck, tok = _build(
        cfg,
        tasks,
        env,
        model,
        tok,
        group=cfg.group_size,
        rounds=cfg.agentic_rounds,
        prompts=cfg.prompts_per_step,
        steps=steps,
        resume=resume,
        sample_fn=sample_fn,
        opd_state=None,
        teachers=(),
        log=log,
        use_vllm=cfg.rollout_engine == 'vllm',
        args_over=args_over,
    )
    if ck is not None:
        log(f'resuming from {ck}')
    trainer.train(resume_from_checkpoint=str(ck) if ck else None)
    if cfg.save_every:
        trainer.save_model(str(Path(cfg.out) / f'checkpoint-{trainer.state.global_step}'))
    _finish(trainer, cfg, tok, Path(cfg.out), 'rl_config.json')
    acc = trainer.accelerator
    return {
        'trainer': trainer,
        'model': acc.unwrap_model(trainer.model),
        'tokenizer': tok,
        'rollout': trainer.rollout_func,
        'rank': acc.process_index,
        'world': acc.num_processes,
    }


def train_opd(
    cfg,
    tasks: list[dict],
    env: Env,
    student=None,
    tok=None,
    teachers: list | None = None,
    steps: int | None = None,
    resume: bool = True,
    sample_fn=None,
    teacher_sample_fn=None,
    log=print,
    args_over: dict | None = None,
) -> dict:
    """Adaptive multi-teacher OPD on TRL. Returns {'trainer', 'model', 'tokenizer', 'history', 'totals', 'rank', 'world'}."""
    from .policy import load_policy

    if student is None:
        ck = _last_step(Path(cfg.out))[0] if resume else None
        student, tok = load_policy(str(ck) if ck else cfg.student, cfg.dtype, cfg.device)
    if teachers is None:
        teachers = []
        for p in cfg.teachers:
            m, ttok = load_policy(p, cfg.dtype, cfg.device)
            if ttok.get_vocab() != tok.get_vocab():
                raise SystemExit(f"teacher {p}: its tokenizer differs from the student's (OPD needs one vocabulary)")
            teachers.append(m.eval().requires_grad_(False))
    state = OPDState(cfg, teachers, teacher_sample_fn)
    trainer, ck, tok = _build(
        cfg,
        tasks,
        env,
        student,
        tok,
        group=cfg.student_samples,
        rounds=cfg.agentic_rounds,
        prompts=cfg.prompts_per_step,
        steps=steps,
        resume=resume,
        sample_fn=sample_fn,
        opd_state=state,
        teachers=teachers,
        log=log,
        use_vllm=cfg.rollout_engine == 'vllm',
        args_over=args_over,
    )
    if ck is not None:
        log(f'resuming from {ck}')
        rs = ck / ROUTE_RNG
        if rs.exists():  # the routing variants' draws continue where the checkpoint left them
            state.rng.setstate(_rng_state(json.loads(rs.read_text())))
    trainer.add_callback(_route_rng_callback(state))
    trainer.train(resume_from_checkpoint=str(ck) if ck else None)
    if cfg.save_every:
        d = Path(cfg.out) / f'checkpoint-{trainer.state.global_step}'
        trainer.save_model(str(d))
        if trainer.is_world_process_zero():
            (d / ROUTE_RNG).write_text(json.dumps(state.rng.getstate()))
    _finish(trainer, cfg, tok, Path(cfg.out), 'opd_config.json')
    totals = {'distilled': 0, 'gate_closed': 0, 'rl_fallback': 0, 'integrity_failures': 0}
    for h in state.history:
        for d in h:
            r = O.Route(d['kind'], d['teacher'], d['reason'])
            totals['distilled'] += r.kind == 'distill'
            totals['gate_closed'] += r.gate_closed
            totals['rl_fallback'] += r.kind == 'rl' and not r.gate_closed
            totals['integrity_failures'] += r.integrity
    if trainer.is_world_process_zero():
        (Path(cfg.out) / 'opd_summary.json').write_text(json.dumps(totals, indent=2) + '\n')
    acc = trainer.accelerator
    return {
        'trainer': trainer,
        'model': acc.unwrap_model(trainer.model),
        'tokenizer': tok,
        'history': state.history,
        'totals': totals,
        'state': state,
        'rank': acc.process_index,
        'world': acc.num_processes,
    }
