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

import torch

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


COMPLETE = ('trainer_state.json', 'config.json')  # what a checkpoint needs to resume from


def _last_step(out: Path) -> tuple[Path | None, int]:
    """The latest COMPLETE checkpoint-N in `out` and its step. A checkpoint without trainer_state.json
    (an older run's model-only final save, or a save killed half-way) is passed over, not read."""
    import re

    if not out.exists():
        return None, 0
    cks = sorted((int(m.group(1)), d) for d in out.iterdir() if d.is_dir() and (m := re.fullmatch(r'checkpoint-(\d+)', d.name)))
    for _, d in reversed(cks):
        if all((d / f).exists() for f in COMPLETE):
            try:
                st = json.loads((d / 'trainer_state.json').read_text())
            except ValueError:
                continue
            return d, int(st.get('global_step', 0))
    return None, 0


def _device(cfg) -> str:
    """Where this rank loads a model: `cuda` means this rank's GPU (LOCAL_RANK), not GPU 0 on every rank."""
    dev = str(getattr(cfg, 'device', 'cpu'))
    if dev == 'cuda' and 'LOCAL_RANK' in os.environ:
        return f'cuda:{int(os.environ["LOCAL_RANK"])}'
    return dev


def _fp32_master(model, log=print):
    """The trained parameters in fp32 (the optimizer's master weights). `dtype: bfloat16` in a recipe is the
    COMPUTE dtype (bf16 autocast: GRPOConfig bf16=True); bf16 parameters under plain DDP + AdamW at lr
    1e-6 would round ~all updates away (test_trl_rl.py::test_one_step_at_the_recipe_lr_moves_the_weights)."""
    bad = {p.dtype for p in model.parameters() if p.is_floating_point() and p.dtype != torch.float32}
    if bad:
        log(f'policy parameters in {", ".join(sorted(map(str, bad)))}: upcast to float32 master weights (bf16 stays the compute dtype)')
        model.float()
    return model


def _save_final(trainer, out: Path, extra=None) -> None:
    """A COMPLETE checkpoint at the last step (model, optimizer, scheduler, RNG, trainer_state.json), unless
    the Trainer wrote it: a `--steps` run that ends between save boundaries must leave a checkpoint the
    next run can resume from. The Trainer itself saves at max_steps (transformers' DefaultFlowCallback),
    so this saves only when it did not: one final save, not two of the same checkpoint."""
    step = trainer.state.global_step
    d = out / f'checkpoint-{step}'
    # decided from the Trainer's own record of its saves (on_save runs on every rank), never from the file
    # system: every rank must take the same branch (_save_checkpoint is collective under FSDP / DeepSpeed),
    # and rank 0 may still be writing
    if step and getattr(trainer, 'chorus_saved_step', None) != step:
        trainer._save_checkpoint(trainer.model, trial=None)
        trainer.chorus_saved_step = step
        if extra is not None and trainer.is_world_process_zero() and d.exists():
            extra(d)


def _saves_callback(trainer):
    """Records the step of the Trainer's last save on the trainer (every rank): _save_final reads it."""
    from transformers import TrainerCallback

    class Saves(TrainerCallback):
        def on_save(self, args, state, control, **kw):
            trainer.chorus_saved_step = state.global_step

    return Saves()


MANIFEST = 'chorus_manifest.json'  # the run's seed and prompt draw, written when it starts (rank 0)


def _write_manifest(out: Path, cfg, tasks: list[dict], prompts: int, steps: int, offset: int, kind: str) -> None:
    """What this run draws, before it draws it: the seed, the data, and the task ids of every planned step in
    order (trainers.prompt_draw: the sampler's own order), so two experts' prompts can be compared from
    their run folders (`chain --dry-run` prints the same overlap from the recipes)."""
    from .trainers import prompt_draw

    draw = prompt_draw(len(tasks), cfg.seed, prompts, steps, offset)
    m = {
        'kind': kind,
        'seed': cfg.seed,
        'data': getattr(cfg, 'data', ''),
        'data_records': len(tasks),
        'prompts_per_step': prompts,
        'rollout_steps': steps,
        'data_offset_prompts': offset,
        'prompt_draw': [tasks[i].get('id', i) for i in draw],
    }
    (out / MANIFEST).write_text(json.dumps(m) + '\n')


def _build(cfg, tasks, env, model, tok, *, group, rounds, prompts, steps, resume, sample_fn, opd_state, teachers, log, use_vllm, args_over):
    from .policy import load_policy

    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    ck, done = _last_step(out) if resume else (None, 0)
    if model is None:  # fp32 master weights on this rank's device (cfg.dtype is the autocast dtype)
        model, tok = load_policy(str(ck) if ck else (getattr(cfg, 'model', '') or getattr(cfg, 'student', '')), 'float32', _device(cfg))
    model = _fp32_master(model, log)
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
        adv_eps=getattr(cfg, 'adv_eps', None),
        data_offset=int(getattr(cfg, 'data_offset_steps', 0) or 0) * prompts if opd_state is not None else 0,
        save_bf16=cfg.dtype == 'bfloat16',  # the compute dtype is what merge, OPD and export read
        callbacks=[_metrics_callback(out, rollout, opd_state, log)],
    )
    trainer = OPDT(teachers=teachers, opd_state=opd_state, **kw) if opd_state is not None else Plain(**kw)
    if trainer.is_world_process_zero():
        _write_manifest(out, cfg, tasks, prompts, -(-cfg.updates // mini), kw['data_offset'], 'opd' if opd_state is not None else 'rl')
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # our metrics line per step replaces the raw log dicts
    trainer.add_callback(_saves_callback(trainer))
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
        _save_final(trainer, Path(cfg.out))
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

    if student is None:  # fp32 master weights on this rank's device (_build upcasts a given model too)
        ck = _last_step(Path(cfg.out))[0] if resume else None
        student, tok = load_policy(str(ck) if ck else cfg.student, 'float32', _device(cfg))
    if teachers is None:
        teachers = []
        for p in cfg.teachers:  # frozen: the compute dtype is enough; on this rank's device (ChorusOPDTrainer re-checks)
            m, ttok = load_policy(p, cfg.dtype, _device(cfg))
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
        _save_final(trainer, Path(cfg.out), lambda d: (d / ROUTE_RNG).write_text(json.dumps(state.rng.getstate())))
    _finish(trainer, cfg, tok, Path(cfg.out), 'opd_config.json')
    totals = {'distilled': 0, 'gate_closed': 0, 'rl_fallback': 0, 'skipped': 0, 'integrity_failures': 0}
    for h in state.history:
        for d in h:
            r = O.Route(d['kind'], d['teacher'], d['reason'])
            totals['distilled'] += r.kind == 'distill'
            totals['gate_closed'] += r.gate_closed
            totals['rl_fallback'] += r.kind == 'rl' and not r.gate_closed
            totals['skipped'] += r.kind == 'skip'
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
