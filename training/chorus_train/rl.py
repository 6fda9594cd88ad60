"""DAPO reinforcement learning with agentic refinement (docs/protocol.md §8): the recipe's settings
and CHORUS's own rules; the training itself runs on TRL (trl_engine.py).

Each step takes `prompts_per_step` tasks (4) and, per task:
  1. direct group: `group_size` (4) samples from the first turn;
  2. refinement group(s): the WORST-coverage member of the previous group (`carry: best` is the
     paper's ablation) is carried into the conversation, its <think> block stripped, with the
     service's feedback turn, and `group_size` new samples are drawn; `agentic_rounds` (2) counts
     the direct round too.
Every group gets group-relative advantages (equal rewards -> zero advantage); the clip-higher
surrogate (eps 0.2 / 0.28) is averaged over all response tokens of the step; no KL, no dynamic
sampling; AdamW (0.9, 0.95) at a constant 1e-6. `mini_batches` optimizer updates per rollout batch
(1: on policy).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .envs import Env, Score, strip_think
from .policy import Sample
from .settings import TrainerSettings

METRICS = [
    'step',
    'updates',
    'reward',
    'coverage',
    'pass_rate',
    'reward_direct',
    'reward_refine',
    'coverage_direct',
    'coverage_refine',
    'clip_frac',
    'clip_lo_frac',
    'clip_hi_frac',
    'entropy',
    'response_len',
    'truncated_frac',
    'loss',
    'zero_adv_groups',
    'score_failures',
    'masked_rows',  # rows left out because the reward service gave no answer (scores, first or feedback turns)
    'overlong_rows',  # rows left out because their prompt passed the context cap (max_context - max_new_tokens)
    'max_prompt_tokens',
    'seconds',
]


@dataclass
class RLConfig(TrainerSettings):
    model: str = ''
    out: str = 'runs/rl'
    updates: int = 1000
    group_size: int = 4
    # prompts per step: 4 prompts x group 4 = the global batch of 16 sequences per round (the
    # reference: rollout batch 16 / group 4); with 2 rounds a step trains on 32 sequences
    prompts_per_step: int = 4
    agentic_rounds: int = 2
    carry: str = 'worst'  # worst | best
    top_k: int | None = None
    mini_batches: int = 1
    weight_decay: float = 0.0
    save_every: int = 100
    keep_checkpoints: int = 3
    rescore_tries: int = 1  # a member the reward service failed to score is asked for again this often

    SECTION = 'rl'


def pick_carry(scores: list[Score], carry: str) -> int | None:
    """Index of the member carried into refinement: worst coverage (ties: lowest reward, first), or
    best. Members the reward service failed to score are never carried (None when all failed)."""
    ok = [i for i, s in enumerate(scores) if s is not None and not s.failed]
    if not ok:
        return None
    key = {i: ((scores[i].coverage if scores[i].coverage is not None else -1.0), scores[i].reward) for i in ok}
    if carry == 'worst':
        return min(ok, key=lambda i: (key[i], i))
    if carry == 'best':
        return max(ok, key=lambda i: (key[i], -i))
    raise ValueError(f'carry must be worst or best, got {carry}')


def carry_messages(msgs: list[dict], env: Env, task: dict, sample: Sample, score: Score) -> list[dict]:
    """The next round's conversation: the carried reply (its <think> block stripped, PROTOCOL §2)
    and the service's feedback turn for it."""
    fb = env.feedback(task, sample, score)
    return msgs + [{'role': 'assistant', 'content': strip_think(sample.text)}, {'role': 'user', 'content': fb}]


def fit_prompt(tok, msgs: list[dict], cap: int) -> tuple[list[dict], list[int] | None]:
    """The conversation and its prompt ids within `cap` tokens. Too long: the OLDEST assistant / feedback
    pairs are dropped whole (never half a turn), keeping the first turn (system and first user message)
    and the latest pair: the reference's bounded form of a conversation (its markov snapshot,
    [system, user, assistant, feedback]). Still too long (the first turn and the latest pair alone
    pass the cap): (msgs, None), and the caller leaves the rows out."""
    from .policy import render

    head = next((i + 1 for i, m in enumerate(msgs) if m.get('role') == 'user'), len(msgs))  # through the first user turn
    ids = render(tok, msgs)
    while len(ids) > cap and len(msgs) - head > 2:
        msgs = msgs[:head] + msgs[head + 2 :]
        ids = render(tok, msgs)
    return msgs, (ids if len(ids) <= cap else None)


def _mean(xs) -> float:
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else float('nan')


def load_tasks(path: str) -> list[dict]:
    p = Path(path)
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
