"""DAPO reinforcement learning with agentic refinement (docs/protocol.md §8).

Each step takes `prompts_per_step` tasks (the global batch, 16) and, per task:
  1. direct group: `group_size` (4) samples from the first turn;
  2. refinement group(s): the WORST-coverage member of the previous group (`carry: best` is the
     paper's ablation) is carried into the conversation with the service's feedback turn, and
     `group_size` new samples are drawn; `agentic_rounds` (2) counts the direct round too.
Every group gets group-relative advantages (equal rewards -> zero advantage); the clip-higher
surrogate (eps 0.2 / 0.28) is averaged over all response tokens of the step; no KL, no dynamic
sampling; AdamW at a constant 1e-6. `mini_batches` optimizer updates per rollout batch (1: on
policy). Checkpoints every `save_every` updates (model + optimizer + RNG + data cursor), resumable;
metrics per step in metrics.csv (and TensorBoard when installed).
"""
from __future__ import annotations

import csv
import json
import math
import random
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from . import dapo
from .dist import Dist
from .envs import Env, Score
from .policy import HFSampler, Sample, Sampler, make_batch, render, response_logits, save_tokenizer
from .settings import TrainerSettings

METRICS = ['step', 'updates', 'reward', 'coverage', 'pass_rate', 'reward_direct', 'reward_refine', 'coverage_direct',
           'coverage_refine', 'clip_frac', 'clip_lo_frac', 'clip_hi_frac', 'entropy', 'response_len', 'truncated_frac',
           'loss', 'zero_adv_groups', 'seconds']


@dataclass
class RLConfig(TrainerSettings):
    model: str = ''
    out: str = 'runs/rl'
    updates: int = 1000
    group_size: int = 4
    prompts_per_step: int = 16
    agentic_rounds: int = 2
    carry: str = 'worst'  # worst | best
    top_k: int | None = None
    mini_batches: int = 1
    weight_decay: float = 0.0
    save_every: int = 100
    keep_checkpoints: int = 3
    threshold: float | None = None
    rollout_engine: str = 'hf'  # hf | vllm

    SECTION = 'rl'


def pick_carry(scores: list[Score], carry: str) -> int:
    """Index of the member carried into refinement: worst coverage (ties: lowest reward, first), or best."""
    key = [((s.coverage if s.coverage is not None else -1.0), (s.reward if s.reward is not None else -1.0)) for s in scores]
    if carry == 'worst':
        return min(range(len(scores)), key=lambda i: (key[i], i))
    if carry == 'best':
        return max(range(len(scores)), key=lambda i: (key[i], -i))
    raise ValueError(f'carry must be worst or best, got {carry}')


@dataclass
class Group:
    task: dict
    round: int
    samples: list[Sample]
    scores: list[Score]
    advantages: torch.Tensor


def rollout(task: dict, env: Env, sampler: Sampler, tok, cfg: RLConfig) -> list[Group]:
    msgs0 = env.first_turn(task)
    msgs = list(msgs0)
    groups = []
    for rnd in range(cfg.agentic_rounds):
        samples = sampler.sample([render(tok, msgs)], cfg.group_size)[0]
        scores = env.score(task, samples)
        rewards = torch.tensor([s.reward if s.reward is not None and math.isfinite(s.reward) else 0.0 for s in scores])
        groups.append(Group(task, rnd, samples, scores, dapo.group_advantages(rewards)))
        if rnd + 1 < cfg.agentic_rounds:
            k = pick_carry(scores, cfg.carry)
            fb = env.feedback(task, samples[k], scores[k])
            msgs = msgs + [{'role': 'assistant', 'content': samples[k].text}, {'role': 'user', 'content': fb}]
    return groups


def policy_update(model, optimizer, samples: list[Sample], advantages: torch.Tensor, cfg: RLConfig, pad_id: int, dist: Dist | None = None) -> dict:
    """One rollout batch -> `mini_batches` optimizer steps of the DAPO loss. Returns averaged stats.

    Under data parallelism `samples` are this rank's share; the token-level mean is over the
    response tokens of every rank's share of the mini-batch, and the stats are global."""
    dist = dist or Dist()
    dev = dist.device(model)
    n = len(samples)
    # rollout-time log-probs (the ratio's denominator), same forward as training
    old = []
    model.eval()
    with torch.no_grad():
        for i in range(0, n, cfg.micro_batch):
            b = make_batch(samples[i:i + cfg.micro_batch], pad_id)
            old.append(dapo.token_logprobs(response_logits(model, b), b.tokens.to(dev)).cpu())
    model.train()
    order = list(range(n))
    per = math.ceil(n / cfg.mini_batches)
    acc = {'loss': 0.0, 'clip_frac': 0.0, 'clip_lo_frac': 0.0, 'clip_hi_frac': 0.0, 'entropy': 0.0}
    tok_total = 0
    for mb in range(cfg.mini_batches):
        idx = order[mb * per:(mb + 1) * per]
        if not idx:
            continue
        n_tok = dist.all_sum([sum(max(len(samples[i].response_ids), 0) for i in idx)])[0]
        optimizer.zero_grad(set_to_none=True)
        for j in range(0, len(idx), cfg.micro_batch):
            sub = idx[j:j + cfg.micro_batch]
            b = make_batch([samples[i] for i in sub], pad_id)
            logits = response_logits(model, b)
            lp = dapo.token_logprobs(logits, b.tokens.to(dev))
            # old log-probs of these rows (micro-batches of the rollout pass may differ in width)
            o = torch.zeros_like(lp)
            for r, i in enumerate(sub):
                src = old[i // cfg.micro_batch][i % cfg.micro_batch]
                L = len(samples[i].response_ids)
                o[r, :L] = src[:L].to(o.device)
            loss, st = dapo.dapo_loss(lp, o, advantages[sub].to(lp.device), b.mask.to(lp.device), cfg.eps_lo, cfg.eps_hi, n_tokens=n_tok)
            dist.backward(loss)
            with torch.no_grad():
                ent = dapo.token_entropy(logits.detach())
                m = b.mask.to(ent.device)
                acc['entropy'] += float((ent * m).sum())
            acc['loss'] += st.loss
            for k in ('clip_frac', 'clip_lo_frac', 'clip_hi_frac'):
                acc[k] += getattr(st, k) * st.tokens
            tok_total += st.tokens
        if cfg.grad_clip:
            dist.clip_grad_norm(model, cfg.grad_clip)
        optimizer.step()
    keys = ['loss', 'clip_frac', 'clip_lo_frac', 'clip_hi_frac', 'entropy']
    summed = dist.all_sum([acc[k] for k in keys] + [tok_total])
    acc = dict(zip(keys, summed[:-1]))
    tok_total = summed[-1]
    t = max(tok_total, 1)
    return {'loss': acc['loss'] / max(cfg.mini_batches, 1), 'clip_frac': acc['clip_frac'] / t, 'clip_lo_frac': acc['clip_lo_frac'] / t,
            'clip_hi_frac': acc['clip_hi_frac'] / t, 'entropy': acc['entropy'] / t}


def _mean(xs) -> float:
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else float('nan')


class Logger:
    def __init__(self, out: Path, resume_step: int):
        self.path = out / 'metrics.csv'
        rows = []
        if self.path.exists() and resume_step > 0:
            with open(self.path) as f:
                rows = [r for r in csv.DictReader(f) if int(r['step']) <= resume_step]
        with open(self.path, 'w', newline='') as f:
            w = csv.DictWriter(f, fieldnames=METRICS)
            w.writeheader()
            w.writerows(rows)
        self.tb = None
        try:
            from torch.utils.tensorboard import SummaryWriter

            self.tb = SummaryWriter(str(out / 'tb'))
        except Exception:
            self.tb = None

    def log(self, row: dict) -> None:
        with open(self.path, 'a', newline='') as f:
            csv.DictWriter(f, fieldnames=METRICS).writerow({k: row.get(k) for k in METRICS})
        if self.tb:
            for k, v in row.items():
                if k != 'step' and isinstance(v, (int, float)):
                    self.tb.add_scalar(k, v, row['step'])


def latest_checkpoint(out: Path) -> Path | None:
    cks = [p for p in out.glob('checkpoint-*') if (p / 'trainer_state.pt').exists()]
    return max(cks, key=lambda p: int(p.name.split('-')[1])) if cks else None


def save_checkpoint(out: Path, model, tok, optimizer, state: dict, keep: int, state_dict: dict | None = None) -> Path:
    d = out / f"checkpoint-{state['updates']}"
    tmp = out / f".tmp-{d.name}"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True, **({'state_dict': state_dict} if state_dict is not None else {}))
    save_tokenizer(tok, tmp)
    torch.save({**state, 'optimizer': optimizer.state_dict(), 'torch_rng': torch.get_rng_state(), 'py_rng': random.getstate()}, tmp / 'trainer_state.pt')
    shutil.rmtree(d, ignore_errors=True)
    tmp.rename(d)
    cks = sorted((p for p in out.glob('checkpoint-*') if p.is_dir()), key=lambda p: int(p.name.split('-')[1]))
    for p in cks[:-keep] if keep > 0 else []:
        shutil.rmtree(p, ignore_errors=True)
    return d


def train(cfg: RLConfig, tasks: list[dict], env: Env, model=None, tok=None, sampler: Sampler | None = None,
          steps: int | None = None, resume: bool = True, log=print) -> dict:
    """Run DAPO until `cfg.updates` optimizer updates (or `steps` rollout steps). Returns the final state."""
    from .policy import load_policy

    if cfg.rollout_engine != 'hf' and sampler is None:
        # vLLM would keep sampling from the weights it loaded: on-policy RL needs the policy pushed to
        # it after every update, which is not built yet.
        raise SystemExit(f"rollout_engine '{cfg.rollout_engine}' is not supported yet (vLLM would need the weights after every update); use 'hf'")
    dist = Dist()
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    ck = latest_checkpoint(out) if resume else None
    state = {'step': 0, 'updates': 0, 'cursor': 0, 'epoch': 0}
    if ck is not None:
        model, tok = load_policy(str(ck), cfg.dtype, cfg.device)
        log(f'resuming from {ck}')
    elif model is None:
        model, tok = load_policy(cfg.model, cfg.dtype, cfg.device)
    torch.manual_seed(cfg.seed)
    random.seed(cfg.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.999))
    if ck is not None:
        st = torch.load(ck / 'trainer_state.pt', weights_only=False)
        optimizer.load_state_dict(st.pop('optimizer'))
        torch.set_rng_state(st.pop('torch_rng'))
        random.setstate(st.pop('py_rng'))
        state.update(st)
    if sampler is None:
        # each rank samples with its own stream (same prompts on two ranks must not draw the same)
        sampler = HFSampler(model, tok, cfg.max_new_tokens, cfg.temperature, cfg.top_p, cfg.top_k, seed=cfg.seed + state['step'] + 7919 * dist.rank)
    elif hasattr(sampler, 'model'):
        sampler.model = model
    model, optimizer = dist.prepare(model, optimizer)
    if hasattr(sampler, 'model'):
        sampler.model = dist.unwrap(model)
    if dist.main:
        (out / 'rl_config.json').write_text(json.dumps(asdict(cfg), indent=2) + '\n')
    logger = Logger(out, state['step']) if dist.main else None
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    order = list(range(len(tasks)))
    random.Random(cfg.seed + state['epoch']).shuffle(order)
    target_steps = None if steps is None else state['step'] + steps
    while state['updates'] < cfg.updates and (target_steps is None or state['step'] < target_steps):
        t0 = time.time()
        batch_tasks = []
        for _ in range(cfg.prompts_per_step):
            if state['cursor'] >= len(order):
                state['epoch'] += 1
                state['cursor'] = 0
                order = list(range(len(tasks)))
                random.Random(cfg.seed + state['epoch']).shuffle(order)
            batch_tasks.append(tasks[order[state['cursor']]])
            state['cursor'] += 1
        groups: list[Group] = []
        for task in dist.shard(batch_tasks, 'prompts_per_step'):
            groups += rollout(task, env, sampler, tok, cfg)
        samples = [s for g in groups for s in g.samples]
        adv = torch.cat([g.advantages for g in groups])
        stats = policy_update(model, optimizer, samples, adv, cfg, pad, dist)
        state['step'] += 1
        state['updates'] += cfg.mini_batches
        # per-sample facts from every rank, for the step's metrics
        facts = dist.gather([(g.round, s.reward, s.coverage, float(s.passed), len(x.response_ids), float(x.truncated))
                             for g in groups for s, x in zip(g.scores, g.samples)])
        zero_adv = int(dist.all_sum([sum(1 for g in groups if float(g.advantages.abs().sum()) == 0.0)])[0])
        direct = [f for f in facts if f[0] == 0]
        refine = [f for f in facts if f[0] > 0]
        row = {'step': state['step'], 'updates': state['updates'], 'reward': _mean(f[1] for f in facts),
               'coverage': _mean(f[2] for f in facts), 'pass_rate': _mean(f[3] for f in facts),
               'reward_direct': _mean(f[1] for f in direct), 'reward_refine': _mean(f[1] for f in refine),
               'coverage_direct': _mean(f[2] for f in direct), 'coverage_refine': _mean(f[2] for f in refine),
               'response_len': _mean(f[4] for f in facts), 'truncated_frac': _mean(f[5] for f in facts),
               'zero_adv_groups': zero_adv, 'seconds': round(time.time() - t0, 3), **stats}
        if dist.main:
            logger.log(row)
            log(f"step {row['step']} updates {row['updates']}: reward {row['reward']:.3f} coverage {row['coverage']:.3f} "
                f"pass {row['pass_rate']:.2f} clip {row['clip_frac']:.3f} entropy {row['entropy']:.2f} len {row['response_len']:.0f}")
        if cfg.save_every and state['updates'] % cfg.save_every < cfg.mini_batches or state['updates'] >= cfg.updates:
            sd = dist.state_dict(model)  # collective under FSDP: every rank takes part
            if dist.main:
                save_checkpoint(out, dist.unwrap(model), tok, optimizer, dict(state), cfg.keep_checkpoints, state_dict=sd)
            dist.barrier()
    return {'state': state, 'model': dist.unwrap(model), 'tokenizer': tok, 'rank': dist.rank, 'world': dist.world}


def load_tasks(path: str) -> list[dict]:
    p = Path(path)
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
