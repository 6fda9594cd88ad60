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
Log-probs are taken at the rollout temperature. The training runs on TRL (trl_engine.py, trainers.py): this
module keeps the math, the routing and the settings.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field

import torch

from .envs import Score, integrity_problem
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
# settings (the training runs on TRL: trainers.ChorusOPDTrainer)


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
