"""Adaptive multi-teacher on-policy distillation (docs/protocol.md §8).

Per prompt ROUND the student draws `student_samples` (4) candidates and each teacher
`teacher_samples` (2) on the same conversation; the reward service scores all of them. Rounds are
agentic as in RL (`agentic_rounds`, 2): the worst student reply (its <think> stripped) and the
service's feedback turn make the next round's prompt, and the gate is decided again on every
round (the reference gates every agentic round). Routing decides per prompt round:

- `best_skip` (default): the teacher whose best rollout scores highest; distill from it only if
  that beats the student's best; otherwise the gate stays closed and the round keeps the RL
  (DAPO) loss on the student's group ("skip" skips the distillation, not the gradient).
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
truncated or mismatched scores, see envs.integrity_problem; and non-finite teacher log-probs on
the student's tokens) always take the RL fallback and are counted; in the fallback, student
members without a score are scored again and, if still missing, left out (never reward 0).
Log-probs are taken at the rollout temperature. Checkpoints hold the optimizer, RNG and data
cursor; a rerun resumes from the latest one.
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
from .envs import Env, Score, integrity_problem, rescore_failed
from .policy import HFSampler, Sample, make_batch, render, response_logits
from .settings import TrainerSettings

ROUTES = ('best_skip', 'median', 'always_best', 'random_teacher', 'random_source', 'rl_fallback')
TOP_K = 16


# ---------------------------------------------------------------------------------------------
# math


def opd_advantages(
    student_logits: torch.Tensor, teacher_logits: torch.Tensor, tokens: torch.Tensor, k: int = TOP_K, temperature: float = 1.0
):
    """(r, b, a), each [B, T], detached. Logits [B, T, V] at the response positions; both policies
    are read at the rollout temperature."""
    with torch.no_grad():
        ls = torch.log_softmax(student_logits.float() / temperature, -1)
        lt = torch.log_softmax(teacher_logits.float() / temperature, -1)
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
    kind: str  # distill | rl (gate closed, integrity failure, the rl_fallback variant, random student)
    teacher: int | None = None
    reason: str = ''  # gate:... | integrity:... | variant | random | always | random:student

    @property
    def gate_closed(self) -> bool:
        return self.kind == 'rl' and self.reason.startswith('gate')

    @property
    def integrity(self) -> bool:
        return self.reason.startswith('integrity')


def _best(scores: list[Score]) -> float:
    return max(s.reward for s in scores)


def _median(scores: list[Score]) -> float:
    return float(statistics.median(s.reward for s in scores))


def route(
    variant: str,
    student: list[Score],
    teachers: list[list[Score]],
    rng: random.Random,
    n_student: int | None = None,
    n_teacher: list[int] | None = None,
) -> Route:
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
    return Route('rl', None, f'gate:{tvals[best_t]:.4f}<={stat(student):.4f}')


# ---------------------------------------------------------------------------------------------
# the loop


@dataclass
class OPDConfig(TrainerSettings):
    student: str = ''
    teachers: list[str] = field(default_factory=list)
    out: str = 'runs/opd'
    routing: str = 'best_skip'
    updates: int = 100
    prompts_per_step: int = 4
    student_samples: int = 4
    teacher_samples: int = 2
    agentic_rounds: int = 2
    carry: str = 'worst'
    top_k: int = TOP_K
    save_every: int = 25
    keep_checkpoints: int = 3
    rescore_tries: int = 1

    SECTION = 'opd'


OPD_METRICS = [
    'step',
    'units',
    'distilled',
    'gate_closed',
    'rl_fallback',
    'integrity_failures',
    'reward_student',
    'reward_teachers',
    'mean_r',
    'mean_b',
    'mean_a',
    'loss',
    'tokens',
    'score_failures',
    'seconds',
]


def _teacher_advantages(student, teacher, samples: list[Sample], cfg: OPDConfig, pad_id: int):
    """Per micro-batch (r, b, a) of one distilled group, or None when the teacher's log-probs on the
    student's tokens are not finite somewhere (an integrity failure: the group takes the RL
    fallback instead of pushing NaN or inf into the student)."""
    out = []
    with torch.no_grad():
        for j in range(0, len(samples), cfg.micro_batch):
            b = make_batch(samples[j : j + cfg.micro_batch], pad_id)
            ls = response_logits(student, b)
            tl = response_logits(teacher, b).to(ls.device)
            tokens, mask = b.tokens.to(ls.device), b.mask.to(ls.device).bool()
            r, bb, a = opd_advantages(ls, tl, tokens, cfg.top_k, cfg.temperature)
            if not bool(torch.isfinite(torch.where(mask, r, 0.0)).all() and torch.isfinite(torch.where(mask, bb, 0.0)).all()):
                return None
            out.append((r, bb, a))
    return out


def opd_step(
    student,
    teachers: list,
    optimizer,
    prompts: list[list[int]],
    student_groups: list[list[Sample]],
    decisions: list[Route],
    student_scores: list[list[Score]],
    cfg: OPDConfig,
    pad_id: int,
) -> dict:
    """One optimizer update over the step's prompt rounds: the distillation loss where the gate
    opened, the DAPO loss everywhere else (gate closed, integrity failures, fallback variants).
    `decisions` is updated in place when a teacher's log-probs turn out not finite (RL fallback).
    The loss is normalized by the response tokens of every group that trains (token-level mean)."""
    work = []  # (samples, kind, per-micro-batch teacher advantages | DAPO advantages)
    for gi, (samples, sc) in enumerate(zip(student_groups, student_scores, strict=True)):
        d = decisions[gi]
        if d.kind == 'distill':
            adv = _teacher_advantages(student, teachers[d.teacher], samples, cfg, pad_id)
            if adv is not None:
                work.append((samples, 'distill', adv))
                continue
            decisions[gi] = d = Route('rl', None, 'integrity:non-finite-teacher-logprobs')
        padded = (list(sc) + [None] * len(samples))[: len(samples)]
        adv, keep = _scored(padded)
        work.append(([samples[i] for i in keep], 'rl', adv))
    n_tok = sum(len(s.response_ids) for w in work for s in w[0])
    stats = {'mean_r': 0.0, 'mean_b': 0.0, 'mean_a': 0.0, 'loss': 0.0, 'tokens': n_tok}
    optimizer.zero_grad(set_to_none=True)
    if not n_tok:
        return stats
    student.train()
    dist_tok = 0.0
    for samples, kind, adv in work:
        for mb, j in enumerate(range(0, len(samples), cfg.micro_batch)):
            b = make_batch(samples[j : j + cfg.micro_batch], pad_id)
            logits = response_logits(student, b)
            tokens = b.tokens.to(logits.device)
            mask = b.mask.to(logits.device)
            lp = dapo.token_logprobs(logits, tokens, cfg.temperature)
            if kind == 'distill':
                r, bb, a = (x.to(lp.device) for x in adv[mb])
                loss = opd_loss(lp, a, mask, n_tok)
                stats['mean_r'] += float((r * mask).sum())
                stats['mean_b'] += float((bb * mask).sum())
                stats['mean_a'] += float((a * mask).sum())
                dist_tok += float(mask.sum())
            else:
                loss, _ = dapo.dapo_loss(
                    lp, lp.detach(), adv[j : j + cfg.micro_batch].to(lp.device), mask, cfg.eps_lo, cfg.eps_hi, n_tokens=n_tok
                )
            loss.backward()
            stats['loss'] += float(loss.detach())
    if cfg.grad_clip:
        torch.nn.utils.clip_grad_norm_(student.parameters(), cfg.grad_clip)
    optimizer.step()
    for k in ('mean_r', 'mean_b', 'mean_a'):
        stats[k] = stats[k] / dist_tok if dist_tok else 0.0
    return stats


def _scored(scores: list[Score | None]) -> tuple[torch.Tensor, list[int]]:
    """DAPO advantages over the members that have a score (rl.scored_advantages, with None allowed)."""
    keep = [i for i, s in enumerate(scores) if s is not None and not s.failed]
    return dapo.group_advantages(torch.tensor([float(scores[i].reward) for i in keep], dtype=torch.float32)), keep


@dataclass
class Unit:
    """One prompt round of OPD: the student's group, its scores, the teachers' scores, the route."""

    task: dict
    round: int
    prompt: list[int]
    samples: list[Sample]
    scores: list[Score | None]
    teacher_scores: list[list[Score | None]]
    route: Route


def opd_rollout(task: dict, env: Env, tok, student_sampler, teacher_samplers: list, cfg: OPDConfig, rng: random.Random) -> list[Unit]:
    """The agentic rounds of one prompt, gated round by round."""
    from .rl import carry_messages, pick_carry

    msgs = list(env.first_turn(task))
    units = []
    for rnd in range(cfg.agentic_rounds):
        p = render(tok, msgs)
        s = student_sampler.sample([p], cfg.student_samples)[0]
        ts = [ts_.sample([p], cfg.teacher_samples)[0] for ts_ in teacher_samplers]
        s_sc = env.score(task, s)
        t_sc = [env.score(task, t) for t in ts]
        d = route(cfg.routing, s_sc, t_sc, rng, cfg.student_samples, [cfg.teacher_samples] * len(ts))
        if d.kind == 'rl':
            # the RL loss needs the student's rewards: ask again for the missing ones, never read 0
            s_sc = rescore_failed(env, task, s, s_sc, tries=cfg.rescore_tries)
        units.append(Unit(task, rnd, p, s, s_sc, t_sc, d))
        if rnd + 1 < cfg.agentic_rounds:
            k = pick_carry(s_sc, cfg.carry)
            if k is None:
                break
            msgs = carry_messages(msgs, env, task, s[k], s_sc[k])
    return units


def train(
    cfg: OPDConfig,
    tasks: list[dict],
    env: Env,
    student=None,
    tok=None,
    teachers: list | None = None,
    student_sampler=None,
    teacher_samplers: list | None = None,
    steps: int | None = None,
    resume: bool = True,
    log=print,
) -> dict:
    from .policy import load_policy
    from .rl import latest_checkpoint, save_checkpoint

    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    ck = latest_checkpoint(out) if resume else None
    state = {'step': 0, 'updates': 0, 'cursor': 0}
    if ck is not None:
        student, tok = load_policy(str(ck), cfg.dtype, cfg.device)
        log(f'resuming from {ck}')
    elif student is None:
        student, tok = load_policy(cfg.student, cfg.dtype, cfg.device)
    if teachers is None:
        teachers = []
        for p in cfg.teachers:
            m, ttok = load_policy(p, cfg.dtype, cfg.device)
            if ttok.get_vocab() != tok.get_vocab():
                raise SystemExit(f"teacher {p}: its tokenizer differs from the student's (OPD needs one vocabulary)")
            m.eval().requires_grad_(False)
            teachers.append(m)
    if student_sampler is None:
        student_sampler = HFSampler(student, tok, cfg.max_new_tokens, cfg.temperature, cfg.top_p, seed=cfg.seed)
    elif hasattr(student_sampler, 'model') and ck is not None:
        student_sampler.model = student
    teacher_samplers = teacher_samplers or [
        HFSampler(t, tok, cfg.max_new_tokens, cfg.temperature, cfg.top_p, seed=cfg.seed + 1 + i) for i, t in enumerate(teachers)
    ]
    optimizer = cfg.optimizer(student.parameters())
    rng = random.Random(cfg.seed)
    if ck is not None:
        st = torch.load(ck / 'trainer_state.pt', weights_only=False)
        optimizer.load_state_dict(st.pop('optimizer'))
        torch.set_rng_state(st.pop('torch_rng'))
        random.setstate(st.pop('py_rng'))
        rng.setstate(st.pop('route_rng'))
        state.update(st)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    (out / 'opd_config.json').write_text(json.dumps(asdict(cfg), indent=2) + '\n')
    path = out / 'metrics.csv'
    rows = []
    if path.exists() and ck is not None:
        with open(path) as f:
            rows = [r for r in csv.DictReader(f) if int(r['step']) <= state['step']]
    with open(path, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=OPD_METRICS)
        w.writeheader()
        w.writerows(rows)
    totals = {'distilled': 0, 'gate_closed': 0, 'rl_fallback': 0, 'integrity_failures': 0}
    n_steps = cfg.updates if steps is None else min(cfg.updates, state['step'] + steps)
    history = []
    while state['step'] < n_steps:
        t0 = time.time()
        batch = [tasks[(state['cursor'] + i) % len(tasks)] for i in range(cfg.prompts_per_step)]
        state['cursor'] += cfg.prompts_per_step
        units: list[Unit] = []
        for task in batch:
            units += opd_rollout(task, env, tok, student_sampler, teacher_samplers, cfg, rng)
        decisions = [u.route for u in units]
        st = opd_step(
            student,
            teachers,
            optimizer,
            [u.prompt for u in units],
            [u.samples for u in units],
            decisions,
            [u.scores for u in units],
            cfg,
            pad,
        )
        state['step'] += 1
        state['updates'] += 1
        row = {
            'step': state['step'],
            'units': len(units),
            'distilled': sum(d.kind == 'distill' for d in decisions),
            'gate_closed': sum(d.gate_closed for d in decisions),
            'rl_fallback': sum(d.kind == 'rl' and not d.gate_closed for d in decisions),
            'integrity_failures': sum(d.integrity for d in decisions),
            'reward_student': _safe_mean([x.reward for u in units for x in u.scores if x is not None]),
            'reward_teachers': _safe_mean([x.reward for u in units for sc in u.teacher_scores for x in sc if x is not None]),
            'score_failures': sum(1 for u in units for x in u.scores if x is None or x.failed),
            'seconds': round(time.time() - t0, 3),
            **st,
        }
        for k in totals:
            totals[k] += row[k]
        with open(path, 'a', newline='') as f:
            csv.DictWriter(f, fieldnames=OPD_METRICS).writerow({k: row.get(k) for k in OPD_METRICS})
        history.append({'row': row, 'decisions': [{**asdict(d), 'round': u.round} for d, u in zip(decisions, units, strict=True)]})
        log(
            f'opd step {state["step"]}: distilled {row["distilled"]} gate-closed {row["gate_closed"]} rl {row["rl_fallback"]} '
            f'(integrity {row["integrity_failures"]}) mean a {row["mean_a"]:.3f}'
        )
        if cfg.save_every and (state['step'] % cfg.save_every == 0 or state['step'] == n_steps):
            save_checkpoint(out, student, tok, optimizer, {**state, 'route_rng': rng.getstate()}, cfg.keep_checkpoints)
    (out / 'opd_summary.json').write_text(json.dumps(totals, indent=2) + '\n')
    return {'totals': totals, 'history': history, 'model': student, 'tokenizer': tok, 'state': state, 'optimizer': optimizer}


def _safe_mean(xs):
    xs = [x for x in xs if x is not None and x == x]
    return sum(xs) / len(xs) if xs else float('nan')
