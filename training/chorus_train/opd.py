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
import math
import random
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from . import dapo
from .dist import Dist
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
    dist: Dist | None = None,
    owned: list[list[int]] | None = None,
) -> dict:
    """One optimizer update over the step's prompt rounds: the distillation loss where the gate
    opened, the DAPO loss everywhere else (gate closed, integrity failures, fallback variants).
    `decisions` is updated in place when a teacher's log-probs turn out not finite (RL fallback).
    The loss is normalized by the response tokens of every group that trains (token-level mean).

    Under data parallelism every rank holds the whole step (groups and scores gathered) and
    trains the members `owned[g]` of each group; the non-finite check is agreed across ranks,
    and every rank runs as many micro-batches as the busiest one (zero-loss passes)."""
    dist = dist or Dist()
    if owned is None:
        owned = [list(range(len(g))) for g in student_groups]
    work = []  # (samples, kind, per-micro-batch teacher advantages | DAPO advantages)
    pending = []  # distill groups: (group index, this rank's advantages or None)
    for gi, samples in enumerate(student_groups):
        if decisions[gi].kind == 'distill':
            mine = [samples[i] for i in owned[gi]]
            pending.append((gi, _teacher_advantages(student, teachers[decisions[gi].teacher], mine, cfg, pad_id) if mine else []))
    bad = dist.all_max([float(a is None) for _, a in pending]) if pending else []
    for (gi, _), b in zip(pending, bad, strict=True):
        if b:
            decisions[gi] = Route('rl', None, 'integrity:non-finite-teacher-logprobs')
    distilled = {gi: a for (gi, a), b in zip(pending, bad, strict=True) if not b}
    n_tok = 0
    for gi, (samples, sc) in enumerate(zip(student_groups, student_scores, strict=True)):
        if gi in distilled:
            work.append(([samples[i] for i in owned[gi]], 'distill', distilled[gi]))
            n_tok += sum(len(x.response_ids) for x in samples)
            continue
        padded = (list(sc) + [None] * len(samples))[: len(samples)]
        adv, keep = _scored(padded)
        n_tok += sum(len(samples[i].response_ids) for i in keep)
        mine = [n for n, i in enumerate(keep) if i in owned[gi]]
        work.append(([samples[keep[n]] for n in mine], 'rl', adv[mine] if mine else adv[:0]))
    stats = {'mean_r': 0.0, 'mean_b': 0.0, 'mean_a': 0.0, 'loss': 0.0, 'tokens': n_tok}
    optimizer.zero_grad(set_to_none=True)
    if not n_tok:
        return stats
    student.train()
    dist_tok = 0.0
    batches = [(samples, kind, adv, mb, j) for samples, kind, adv in work for mb, j in enumerate(range(0, len(samples), cfg.micro_batch))]
    for k in range(int(dist.all_max([len(batches)])[0])):
        if k >= len(batches):  # keep every gradient all-reduce complete
            dummy = make_batch([Sample([pad_id], [pad_id], '')], pad_id)
            dist.backward(response_logits(student, dummy).float().sum() * 0.0)
            continue
        samples, kind, adv, mb, j = batches[k]
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
        dist.backward(loss)
        stats['loss'] += float(loss.detach())
    if cfg.grad_clip:
        dist.clip_grad_norm(student, cfg.grad_clip)
    optimizer.step()
    keys = ['mean_r', 'mean_b', 'mean_a', 'loss']
    summed = dist.all_sum([stats[k] for k in keys] + [dist_tok])
    stats.update(zip(keys, summed[:-1], strict=True))
    dist_tok = summed[-1]
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
    owned: list[int] | None = None  # members this rank trains (None: all)


def opd_rollout(task: dict, env: Env, tok, student_sampler, teacher_samplers: list, cfg: OPDConfig, rng: random.Random) -> list[Unit]:
    """The agentic rounds of one prompt, gated round by round (one process)."""
    return opd_rollout_batch([task], env, tok, student_sampler, teacher_samplers, cfg, rng)


def opd_rollout_batch(
    tasks: list[dict], env: Env, tok, student_sampler, teacher_samplers: list, cfg: OPDConfig, rng: random.Random, dist: Dist | None = None
) -> list[Unit]:
    """The agentic rounds of the step's prompts, gated round by round, the sampling spread over the
    data-parallel ranks as in RL (rl.rollout_batch): each rank draws a contiguous share of the
    student members, the rank holding a prompt's first member draws its teachers' samples, and
    the scores are gathered so every rank routes, re-scores and carries alike. The units hold the
    whole groups; `Unit.owned` names the members this rank trains."""
    from .rl import carry_messages, pick_carry

    dist = dist or Dist()
    S = cfg.student_samples
    share = math.ceil(len(tasks) * S / dist.world)
    mine = set(range(dist.rank * share, min((dist.rank + 1) * share, len(tasks) * S)))
    msgs = [list(env.first_turn(t)) for t in tasks]
    live = list(range(len(tasks)))
    units: list[Unit] = []
    for rnd in range(cfg.agentic_rounds):
        prompts = {i: render(tok, msgs[i]) for i in live}
        local = []  # ('s', prompt, member, sample, score) | ('t', prompt, teacher, k, sample, score)
        for i in live:
            js = [j for j in range(S) if i * S + j in mine]
            if js:
                got = student_sampler.sample([prompts[i]], len(js))[0]
                local += [('s', i, j, x, sc) for j, x, sc in zip(js, got, env.score(tasks[i], got), strict=True)]
            if i * S in mine:
                for t, ts_ in enumerate(teacher_samplers):
                    got = ts_.sample([prompts[i]], cfg.teacher_samples)[0]
                    local += [('t', i, t, k, x, sc) for k, (x, sc) in enumerate(zip(got, env.score(tasks[i], got), strict=True))]
        everyone = dist.gather(local) if dist.world > 1 else local
        routed = []
        for i in live:
            st = sorted((x for x in everyone if x[0] == 's' and x[1] == i), key=lambda x: x[2])
            samples, scores = [x[3] for x in st], [x[4] for x in st]
            t_sc = [
                [x[5] for x in sorted((y for y in everyone if y[0] == 't' and y[1] == i and y[2] == t), key=lambda y: y[3])]
                for t in range(len(teacher_samplers))
            ]
            d = route(cfg.routing, scores, t_sc, rng, S, [cfg.teacher_samples] * len(teacher_samplers))
            routed.append((i, samples, scores, t_sc, d))
        # the RL loss needs the student's rewards: the owners ask again for the missing ones
        again = []
        for i, samples, scores, _, d in routed:
            if d.kind == 'rl':
                for j, sc in enumerate(scores):
                    if (sc is None or sc.failed) and i * S + j in mine:
                        again.append((i, j, rescore_failed(env, tasks[i], [samples[j]], [sc], tries=cfg.rescore_tries)[0]))
        if any(d.kind == 'rl' for *_, d in routed) and dist.world > 1:
            again = dist.gather(again)
        fixed = {(i, j): sc for i, j, sc in again}
        carried = []
        for i, samples, scores, t_sc, d in routed:
            scores = [fixed.get((i, j), sc) for j, sc in enumerate(scores)]
            units.append(Unit(tasks[i], rnd, prompts[i], samples, scores, t_sc, d, [j for j in range(S) if i * S + j in mine]))
            if rnd + 1 < cfg.agentic_rounds:
                k = pick_carry(scores, cfg.carry)
                if k is not None:
                    msgs[i] = carry_messages(msgs[i], env, tasks[i], samples[k], scores[k])
                    carried.append(i)
        live = carried
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

    dist = Dist()
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
        # each rank samples with its own stream
        student_sampler = HFSampler(student, tok, cfg.max_new_tokens, cfg.temperature, cfg.top_p, seed=cfg.seed + 7919 * dist.rank)
    elif hasattr(student_sampler, 'model') and ck is not None:
        student_sampler.model = student
    teacher_samplers = teacher_samplers or [
        HFSampler(t, tok, cfg.max_new_tokens, cfg.temperature, cfg.top_p, seed=cfg.seed + 1 + i + 7919 * dist.rank)
        for i, t in enumerate(teachers)
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
    model, optimizer = dist.prepare(student, optimizer)
    if hasattr(student_sampler, 'model'):
        student_sampler.model = dist.unwrap(model)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    path = out / 'metrics.csv'
    if dist.main:
        (out / 'opd_config.json').write_text(json.dumps(asdict(cfg), indent=2) + '\n')
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
        units = opd_rollout_batch(batch, env, tok, student_sampler, teacher_samplers, cfg, rng, dist)
        decisions = [u.route for u in units]
        st = opd_step(
            model,
            teachers,
            optimizer,
            [u.prompt for u in units],
            [u.samples for u in units],
            decisions,
            [u.scores for u in units],
            cfg,
            pad,
            dist,
            [u.owned for u in units],
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
        history.append({'row': row, 'decisions': [{**asdict(d), 'round': u.round} for d, u in zip(decisions, units, strict=True)]})
        if dist.main:
            with open(path, 'a', newline='') as f:
                csv.DictWriter(f, fieldnames=OPD_METRICS).writerow({k: row.get(k) for k in OPD_METRICS})
            log(
                f'opd step {state["step"]}: distilled {row["distilled"]} gate-closed {row["gate_closed"]} rl {row["rl_fallback"]} '
                f'(integrity {row["integrity_failures"]}) mean a {row["mean_a"]:.3f}'
            )
        if cfg.save_every and (state['step'] % cfg.save_every == 0 or state['step'] == n_steps):
            sd = dist.state_dict(model)  # collective under FSDP: every rank takes part
            if dist.main:
                save_checkpoint(
                    out, dist.unwrap(model), tok, optimizer, {**state, 'route_rng': rng.getstate()}, cfg.keep_checkpoints, state_dict=sd
                )
            dist.barrier()
    if dist.main:
        (out / 'opd_summary.json').write_text(json.dumps(totals, indent=2) + '\n')
    return {
        'totals': totals,
        'history': history,
        'model': dist.unwrap(model),
        'tokenizer': tok,
        'state': state,
        'optimizer': optimizer,
        'rank': dist.rank,
        'world': dist.world,
    }


def _safe_mean(xs):
    xs = [x for x in xs if x is not None and x == x]
    return sum(xs) / len(xs) if xs else float('nan')
