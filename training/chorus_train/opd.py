"""Adaptive multi-teacher on-policy distillation (docs/protocol.md §8).

Per prompt round the student draws `student_samples` (4) candidates and each teacher
`teacher_samples` (2); the reward service scores all of them. Routing decides per prompt:

- `best_skip` (default): the teacher whose best rollout scores highest; distill from it only if
  that beats the student's best, otherwise skip the prompt (no gradient from it).
- `median`: the same with the median of each source's rollouts instead of the best.
- `always_best`: the teacher with the best best-of-rollouts score, always distilled.
- `random_teacher`: a teacher drawn uniformly, always distilled (selection ablated).
- `random_source`: a source drawn uniformly from {student, teachers}: a teacher is distilled, the
  student means the RL fallback.
- `rl_fallback`: never distill; every prompt uses the RL fallback.

Distillation on the student's own samples: r_t = log pi_T(y_t|c_t) - log pi_S(y_t|c_t); baseline
b_t = -KL(pibar_S || pibar_T) over the student's top-K (16) tokens at that position, both
renormalized over those K; a_t = r_t - b_t, detached; loss = -sum_t a_t log pi_S(y_t|c_t) over
the step's tokens (token-level mean, as the DAPO part). The RL fallback is the DAPO loss on the
student's group (group-relative advantages, clip-higher). Integrity failures (missing, non-finite,
truncated or mismatched scores, see envs.integrity_problem) always take the RL fallback and are
counted.
"""
from __future__ import annotations

import csv
import json
import random
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from . import dapo
from .envs import Env, Score, integrity_problem
from .policy import HFSampler, Sample, make_batch, render, response_logits, save_tokenizer
from .settings import TrainerSettings

ROUTES = ('best_skip', 'median', 'always_best', 'random_teacher', 'random_source', 'rl_fallback')
TOP_K = 16


# ---------------------------------------------------------------------------------------------
# math

def opd_advantages(student_logits: torch.Tensor, teacher_logits: torch.Tensor, tokens: torch.Tensor, k: int = TOP_K):
    """(r, b, a), each [B, T], detached. Logits [B, T, V] at the response positions."""
    with torch.no_grad():
        ls = torch.log_softmax(student_logits.float(), -1)
        lt = torch.log_softmax(teacher_logits.float(), -1)
        tok = tokens.unsqueeze(-1)
        r = (lt.gather(-1, tok) - ls.gather(-1, tok)).squeeze(-1)
        idx = ls.topk(min(k, ls.shape[-1]), dim=-1).indices
        ls_k = torch.log_softmax(ls.gather(-1, idx), -1)  # student renormalized over its top-K
        lt_k = torch.log_softmax(lt.gather(-1, idx), -1)  # teacher renormalized over the same K
        kl = (ls_k.exp() * (ls_k - lt_k)).sum(-1)
        b = -kl
        a = r - b
    return r, b, a


def opd_loss(student_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, n_tokens: float | None = None) -> torch.Tensor:
    """-sum_t a_t log pi_S(y_t) / n_tokens (a detached)."""
    m = mask.to(student_logp.dtype)
    denom = float(n_tokens) if n_tokens is not None else float(m.sum().clamp(min=1))
    return -(advantages.detach() * student_logp * m).sum() / max(denom, 1.0)


@dataclass
class Route:
    kind: str  # distill | skip | rl
    teacher: int | None = None
    reason: str = ''


def _best(scores: list[Score]) -> float:
    return max(s.reward for s in scores)


def _median(scores: list[Score]) -> float:
    return float(statistics.median(s.reward for s in scores))


def route(variant: str, student: list[Score], teachers: list[list[Score]], rng: random.Random,
          n_student: int | None = None, n_teacher: list[int] | None = None) -> Route:
    """The routing decision for one prompt (integrity failures -> RL fallback)."""
    if variant not in ROUTES:
        raise ValueError(f'unknown routing {variant}; one of {", ".join(ROUTES)}')
    prob = integrity_problem(student, n_student if n_student is not None else len(student))
    for i, t in enumerate(teachers):
        prob = prob or integrity_problem(t, n_teacher[i] if n_teacher else len(t))
    if prob:
        return Route('rl', None, f'integrity:{prob}')
    if variant == 'rl_fallback':
        return Route('rl', None, 'variant')
    if variant == 'random_teacher':
        return Route('distill', rng.randrange(len(teachers)), 'random')
    if variant == 'random_source':
        j = rng.randrange(len(teachers) + 1)
        return Route('rl', None, 'random:student') if j == len(teachers) else Route('distill', j, 'random')
    stat = _median if variant == 'median' else _best
    tvals = [stat(t) for t in teachers]
    best_t = max(range(len(teachers)), key=lambda i: (tvals[i], -i))
    if variant == 'always_best':
        return Route('distill', best_t, 'always')
    if tvals[best_t] > stat(student):
        return Route('distill', best_t, f'{tvals[best_t]:.4f}>{stat(student):.4f}')
    return Route('skip', None, f'{tvals[best_t]:.4f}<={stat(student):.4f}')


# ---------------------------------------------------------------------------------------------
# the loop

@dataclass
class OPDConfig(TrainerSettings):
    student: str = ''
    teachers: list[str] = field(default_factory=list)
    out: str = 'runs/opd'
    routing: str = 'best_skip'
    updates: int = 100
    prompts_per_step: int = 16
    student_samples: int = 4
    teacher_samples: int = 2
    top_k: int = TOP_K
    save_every: int = 25

    SECTION = 'opd'


OPD_METRICS = ['step', 'distilled', 'skipped', 'rl_fallback', 'integrity_failures', 'reward_student', 'reward_teachers',
               'mean_r', 'mean_b', 'mean_a', 'loss', 'tokens', 'seconds']


def opd_step(student, teachers: list, optimizer, prompts: list[list[int]], student_groups: list[list[Sample]],
             decisions: list[Route], student_scores: list[list[Score]], cfg: OPDConfig, pad_id: int) -> dict:
    """One optimizer update from routed prompts (distill) and fallback prompts (DAPO). Skipped
    prompts contribute nothing."""
    work = []  # (samples, kind, teacher, advantages for rl)
    for samples, d, sc in zip(student_groups, decisions, student_scores):
        if d.kind == 'skip':
            continue
        if d.kind == 'distill':
            work.append((samples, 'distill', d.teacher, None))
        else:
            rewards = torch.tensor([s.reward if s is not None and s.reward is not None and s.reward == s.reward and abs(s.reward) != float('inf') else 0.0
                                    for s in (list(sc) + [None] * (len(samples) - len(sc)))[:len(samples)]])
            work.append((samples, 'rl', None, dapo.group_advantages(rewards)))
    n_tok = sum(len(s.response_ids) for w in work for s in w[0])
    stats = {'mean_r': 0.0, 'mean_b': 0.0, 'mean_a': 0.0, 'loss': 0.0, 'tokens': n_tok}
    optimizer.zero_grad(set_to_none=True)
    if not work:
        return stats
    student.train()
    dist_tok = 0
    for samples, kind, t, adv in work:
        for j in range(0, len(samples), cfg.micro_batch):
            sub = samples[j:j + cfg.micro_batch]
            b = make_batch(sub, pad_id)
            logits = response_logits(student, b)
            tokens = b.tokens.to(logits.device)
            mask = b.mask.to(logits.device)
            lp = dapo.token_logprobs(logits, tokens)
            if kind == 'distill':
                with torch.no_grad():
                    tl = response_logits(teachers[t], b).to(logits.device)
                r, bb, a = opd_advantages(logits.detach(), tl, tokens, cfg.top_k)
                loss = opd_loss(lp, a, mask, n_tok)
                m = float(mask.sum())
                stats['mean_r'] += float((r * mask).sum())
                stats['mean_b'] += float((bb * mask).sum())
                stats['mean_a'] += float((a * mask).sum())
                dist_tok += m
            else:
                loss, _ = dapo.dapo_loss(lp, lp.detach(), adv[j:j + cfg.micro_batch].to(lp.device), mask, cfg.eps_lo, cfg.eps_hi, n_tokens=n_tok)
            loss.backward()
            stats["loss"] += float(loss.detach())
    if cfg.grad_clip:
        torch.nn.utils.clip_grad_norm_(student.parameters(), cfg.grad_clip)
    optimizer.step()
    for k in ('mean_r', 'mean_b', 'mean_a'):
        stats[k] = stats[k] / dist_tok if dist_tok else 0.0
    return stats


def train(cfg: OPDConfig, tasks: list[dict], env: Env, student=None, tok=None, teachers: list | None = None,
          student_sampler=None, teacher_samplers: list | None = None, steps: int | None = None, log=print) -> dict:
    from .policy import load_policy

    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    if student is None:
        student, tok = load_policy(cfg.student, cfg.dtype, cfg.device)
    if teachers is None:
        teachers = []
        for p in cfg.teachers:
            m, ttok = load_policy(p, cfg.dtype, cfg.device)
            if ttok.get_vocab() != tok.get_vocab():
                raise SystemExit(f'teacher {p}: its tokenizer differs from the student\'s (OPD needs one vocabulary)')
            m.eval().requires_grad_(False)
            teachers.append(m)
    student_sampler = student_sampler or HFSampler(student, tok, cfg.max_new_tokens, cfg.temperature, cfg.top_p, seed=cfg.seed)
    teacher_samplers = teacher_samplers or [HFSampler(t, tok, cfg.max_new_tokens, cfg.temperature, cfg.top_p, seed=cfg.seed + 1 + i) for i, t in enumerate(teachers)]
    optimizer = torch.optim.AdamW(student.parameters(), lr=cfg.lr, weight_decay=0.0)
    rng = random.Random(cfg.seed)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    (out / 'opd_config.json').write_text(json.dumps(asdict(cfg), indent=2) + '\n')
    path = out / 'metrics.csv'
    with open(path, 'w', newline='') as f:
        csv.DictWriter(f, fieldnames=OPD_METRICS).writeheader()
    totals = {'distilled': 0, 'skipped': 0, 'rl_fallback': 0, 'integrity_failures': 0}
    n_steps = steps if steps is not None else cfg.updates
    cursor = 0
    history = []
    for step in range(1, n_steps + 1):
        t0 = time.time()
        batch = [tasks[(cursor + i) % len(tasks)] for i in range(cfg.prompts_per_step)]
        cursor += cfg.prompts_per_step
        prompts, groups, decisions, sscores, tscores_all = [], [], [], [], []
        for task in batch:
            p = render(tok, env.first_turn(task))
            s = student_sampler.sample([p], cfg.student_samples)[0]
            ts = [ts_.sample([p], cfg.teacher_samples)[0] for ts_ in teacher_samplers]
            s_sc = env.score(task, s)
            t_sc = [env.score(task, t) for t in ts]
            d = route(cfg.routing, s_sc, t_sc, rng, cfg.student_samples, [cfg.teacher_samples] * len(ts))
            prompts.append(p)
            groups.append(s)
            decisions.append(d)
            sscores.append(s_sc)
            tscores_all.append(t_sc)
        st = opd_step(student, teachers, optimizer, prompts, groups, decisions, sscores, cfg, pad)
        row = {'step': step, 'distilled': sum(d.kind == 'distill' for d in decisions), 'skipped': sum(d.kind == 'skip' for d in decisions),
               'rl_fallback': sum(d.kind == 'rl' for d in decisions), 'integrity_failures': sum(d.reason.startswith('integrity') for d in decisions),
               'reward_student': _safe_mean([x.reward for sc in sscores for x in sc if x is not None]),
               'reward_teachers': _safe_mean([x.reward for t in tscores_all for sc in t for x in sc if x is not None]),
               'seconds': round(time.time() - t0, 3), **st}
        for k in totals:
            totals[k] += row[k]
        with open(path, 'a', newline='') as f:
            csv.DictWriter(f, fieldnames=OPD_METRICS).writerow({k: row.get(k) for k in OPD_METRICS})
        history.append({'row': row, 'decisions': [asdict(d) for d in decisions]})
        log(f"opd step {step}: distilled {row['distilled']} skipped {row['skipped']} rl {row['rl_fallback']} "
            f"(integrity {row['integrity_failures']}) mean a {row['mean_a']:.3f}")
        if cfg.save_every and (step % cfg.save_every == 0 or step == n_steps):
            d = out / f'checkpoint-{step}'
            student.save_pretrained(d, safe_serialization=True)
            save_tokenizer(tok, d)
    (out / 'opd_summary.json').write_text(json.dumps(totals, indent=2) + '\n')
    return {'totals': totals, 'history': history, 'model': student, 'tokenizer': tok}


def _safe_mean(xs):
    xs = [x for x in xs if x is not None and x == x]
    return sum(xs) / len(xs) if xs else float('nan')
