"""Adaptive multi-teacher on-policy distillation (docs/protocol.md §8).

Per prompt ROUND the student draws `student_samples` (4) candidates and each teacher
`teacher_samples` (2) on the same conversation; the reward service scores all of them. Rounds are
agentic as in RL (`agentic_rounds`, 2): the worst student reply (its <think> stripped) and the
service's feedback turn make the next round's prompt, and the gate is decided again on every
round (the reference gates every agentic round). Routing decides per prompt round:

- `best` (default): the teacher whose best rollout scores highest; distill from it only if that
  beats the student's best; otherwise the gate is closed, and `gate_closed` says what the round does:
    - `skip` (default; the paper, Eq. 3 and App. C.3/C.4, "best + skip"): the round contributes no
      gradient (its rows leave the loss and the token normalizer);
    - `rl_fallback` (the reference CODE's behaviour, which this package called best_skip before): the
      round keeps the RL (DAPO) loss on the student's group.
  The recipe follows the paper (opd.yaml: best + skip): the paper's reported OPD result and its
  ablations are defined by Eq. 3; rl_fallback is kept to reproduce the reference code.
- `median`: the same with the median of each source's rollouts instead of the best (gate_closed
  applies alike).
- `always_best`: the teacher with the best best-of-rollouts score, always distilled.
- `random_teacher`: a teacher drawn uniformly, always distilled (selection ablated).
- `random_source`: a source drawn uniformly from {student, teachers}: a teacher is distilled, the
  student means the RL fallback.
- `always_rl`: never distill; every prompt uses the RL fallback (the paper's "always RL").
Deprecated names: `best_skip` -> `best` (with gate_closed; it was the rl_fallback behaviour),
`rl_fallback` as a ROUTING -> `always_rl` (rl_fallback now names the gate-closed behaviour).

The distilled rows' advantage is `opd_lambda` x a_t (the OPD coefficient; 1 in the paper).
OPD's data starts `data_offset_steps` (1,000, as the reference) x prompts_per_step tasks into the
seeded task order, i.e. after the prompts the RL stage's 1,000 steps drew (same data, same seed).

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

ROUTES = ('best', 'median', 'always_best', 'random_teacher', 'random_source', 'always_rl')
GATE_CLOSED = ('skip', 'rl_fallback')
# old routing names -> (new name, why); a recipe using one still runs, with this message
DEPRECATED_ROUTES = {
    'best_skip': (
        'best',
        "routing 'best_skip' is now 'best' + gate_closed (default 'skip', the paper: a closed gate gives no "
        'gradient); the old best_skip behaviour (a closed gate keeps the DAPO loss, the reference code) is gate_closed: rl_fallback',
    ),
    'rl_fallback': (
        'always_rl',
        "routing 'rl_fallback' (never distill) is now 'always_rl'; rl_fallback names the gate-closed behaviour (gate_closed: rl_fallback)",
    ),
}
TOP_K = 16
# Positions per log-softmax chunk in opd_advantages_chunked. Peak extra memory per chunk is about
# 20 x LOGIT_CHUNK x V bytes (the teacher's bf16 logits, fp32 copies and log-softmaxes of both
# models, the KL terms): 2.9 GiB at 1,024 x 151,936 (Qwen3), whatever the sequence length; unchunked
# it grows with T (~46 GiB at 16,384 tokens). The student's logits come from the wrapped model's own
# forward (bf16, 2 x T x V bytes = 4.6 GiB at 16k: what TRL's training forward holds anyway).
LOGIT_CHUNK = 1024


def canonical_routing(name: str, warn=print) -> str:
    """The routing's current name (a deprecated one is mapped, with its message)."""
    if name in DEPRECATED_ROUTES:
        new, why = DEPRECATED_ROUTES[name]
        import warnings

        warnings.warn(why, DeprecationWarning, stacklevel=2)
        warn(f'DEPRECATED: {why}')
        return new
    return name


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


def opd_advantages_chunked(
    student_logits: torch.Tensor,
    teacher,
    ids: torch.Tensor,
    att: torch.Tensor,
    tokens: torch.Tensor,
    k: int = TOP_K,
    temperature: float = 1.0,
    chunk: int = LOGIT_CHUNK,
):
    """opd_advantages over the sequence in chunks of `chunk` positions. `student_logits` [1, T, V] (any
    dtype); the teacher runs its decoder once and its LM head chunk by chunk on the last T+1 positions
    (the teacher is a plain unsharded module on this rank's device), so neither the teacher's full
    logits nor any fp32 [T, V] tensor is ever held."""
    T = tokens.shape[1]
    with torch.no_grad():
        dev = next(teacher.parameters()).device
        dec, head = teacher.get_decoder(), teacher.get_output_embeddings()
        h = dec(input_ids=ids.to(dev), attention_mask=att.to(dev), use_cache=False).last_hidden_state[:, -(T + 1) : -1]
        parts = []
        for j in range(0, T, chunk):
            lt = head(h[:, j : j + chunk]).to(student_logits.device)
            parts.append(opd_advantages(student_logits[:, j : j + chunk], lt, tokens[:, j : j + chunk], k, temperature))
            del lt
        return tuple(torch.cat([p[i] for p in parts], 1) for i in range(3))


def opd_loss(student_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, n_tokens: float | None = None) -> torch.Tensor:
    """-sum_t a_t log pi_S(y_t) / n_tokens (a detached)."""
    m = mask.to(student_logp.dtype)
    denom = float(n_tokens) if n_tokens is not None else float(m.sum().clamp(min=1))
    return -(advantages.detach() * student_logp * m).sum() / max(denom, 1.0)


@dataclass
class Route:
    kind: str  # distill | rl (gate closed + rl_fallback, integrity failure, always_rl, random student) | skip (gate closed + skip)
    teacher: int | None = None
    reason: str = ''  # gate:... | integrity:... | variant | random | always | random:student

    @property
    def gate_closed(self) -> bool:
        return self.kind in ('rl', 'skip') and self.reason.startswith('gate')

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
    gate_closed: str = 'skip',
) -> Route:
    """The routing decision for one prompt (integrity failures -> RL fallback; a closed gate -> `gate_closed`)."""
    variant = DEPRECATED_ROUTES[variant][0] if variant in DEPRECATED_ROUTES else variant
    if gate_closed not in GATE_CLOSED:
        raise ValueError(f'unknown gate_closed {gate_closed}; one of {", ".join(GATE_CLOSED)}')
    if variant not in ROUTES:
        raise ValueError(f'unknown routing {variant}; one of {", ".join(ROUTES)}')
    prob = integrity_problem(student, n_student if n_student is not None else len(student))
    for i, t in enumerate(teachers):
        prob = prob or integrity_problem(t, n_teacher[i] if n_teacher else len(t))
    if prob:
        return Route('rl', None, f'integrity:{prob}')
    if variant == 'always_rl':
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
    return Route('skip' if gate_closed == 'skip' else 'rl', None, f'gate:{tvals[best_t]:.4f}<={stat(student):.4f}')


# ---------------------------------------------------------------------------------------------
# settings (the training runs on TRL: trainers.ChorusOPDTrainer)


@dataclass
class OPDConfig(TrainerSettings):
    student: str = ''
    teachers: list[str] = field(default_factory=list)
    out: str = 'runs/opd'
    routing: str = 'best'
    gate_closed: str = 'skip'  # skip (the paper, Eq. 3) | rl_fallback (the reference code)
    opd_lambda: float = 1.0  # the OPD coefficient: distilled rows' advantage = opd_lambda x a_t
    data_offset_steps: int = 1000  # OPD's data starts after the RL stage's 1,000 steps x prompts_per_step tasks (the reference)
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

    def __post_init__(self):
        self.routing = canonical_routing(self.routing)
        if self.routing not in ROUTES:
            raise SystemExit(f'unknown routing {self.routing}; one of {", ".join(ROUTES)}')
        if self.gate_closed not in GATE_CLOSED:
            raise SystemExit(f'unknown gate_closed {self.gate_closed}; one of {", ".join(GATE_CLOSED)}')


OPD_METRICS = [
    'step',
    'units',
    'distilled',
    'gate_closed',
    'rl_fallback',
    'skipped',
    'integrity_failures',
    'reward_student',
    'reward_teachers',
    'mean_r',
    'mean_b',
    'mean_a',
    'loss',
    'tokens',
    'score_failures',
    'masked_rows',
    'overlong_rows',  # rows left out because their prompt passed the context cap (max_context - max_new_tokens)
    'max_prompt_tokens',
    'seconds',
]
