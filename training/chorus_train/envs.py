"""Task environments: where prompts, scores and feedback turns come from.

`ServiceEnv` asks the reward service for everything (first turn, parse, score, feedback turn);
tests plug in synthetic environments with the same three methods.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from . import run_settings
from .policy import Sample

# PROTOCOL §2 (docs/protocol.md): a Qwen3 reply may open with a <think>...</think> block; it is
# stripped before the reply is carried into the next round (the sampled tokens keep it: the
# reasoning is still trained). A block the length limit cut before its </think> is stripped to
# the end: carried on, it would grow the next prompt by the whole budget of the reply.
THINK_RE = re.compile(r'<think>.*?(?:</think>\s*|$)', re.DOTALL | re.IGNORECASE)


def strip_think(text: str) -> str:
    """The reply as the next round sees it: every <think>...</think> block removed (an unclosed one
    to the end), then trimmed."""
    return THINK_RE.sub('', text).strip()


@dataclass
class Score:
    reward: float | None
    coverage: float | None
    passed: bool
    status: str
    record: dict | None = None  # the service's score record (None: unparsable / not simulated)
    parsed: dict | None = None
    error: str | None = None  # why the score is missing (integrity)

    @property
    def failed(self) -> bool:
        """The reward service gave no score (transport or internal error): not a reward of 0. Such a
        member is re-scored, then left out of its group's statistics and never carried."""
        return self.error is not None or self.reward is None or not math.isfinite(self.reward)

    @property
    def rank(self) -> tuple:
        """PROTOCOL §5 ranking: (simulated ok, has coverage, passed, coverage)."""
        ok = self.status == 'success'
        return (ok, self.coverage is not None and ok, self.passed, self.coverage or 0.0)


class Env(Protocol):
    """first_turn and feedback may raise ServiceUnavailable (the rollout masks the rows that needed the
    turn); score returns a failed Score for a member it could not score. Nothing else is raised."""

    def first_turn(self, task: dict) -> list[dict]: ...
    def score(self, task: dict, samples: list[Sample]) -> list[Score]: ...
    def feedback(self, task: dict, sample: Sample, score: Score) -> str: ...


def integrity_problem(scores: list[Score | None], n_expected: int) -> str | None:
    """Why a score list cannot be trusted (OPD: these use the RL fallback), or None.

    missing: a None / error entry; non-finite: NaN or inf reward/coverage; truncated: fewer scores
    than rollouts; mismatched: more scores than rollouts, or a reward that disagrees with its
    status and coverage (R = 1 + c on success, else 0)."""
    if len(scores) < n_expected:
        return 'truncated'
    if len(scores) > n_expected:
        return 'mismatched'
    for s in scores:
        if s is None or s.error is not None or s.reward is None:
            return 'missing'
        if not math.isfinite(s.reward) or (s.coverage is not None and not math.isfinite(s.coverage)):
            return 'non-finite'
        want = 1.0 + (s.coverage or 0.0) if s.status == 'success' else 0.0
        if abs(s.reward - want) > 1e-6:
            return 'mismatched'
    return None


def rescore_failed(env: Env, task: dict, samples: list[Sample], scores: list[Score | None], tries: int = 1) -> list[Score | None]:
    """Scores again the members whose score is missing or failed (up to `tries` more requests each);
    a member that still has none stays failed. Returns a new list, one entry per sample."""
    out = list(scores) + [None] * (len(samples) - len(scores))
    out = out[: len(samples)]
    for _ in range(tries):
        todo = [i for i, s in enumerate(out) if s is None or s.failed]
        if not todo:
            break
        again = env.score(task, [samples[i] for i in todo])
        for i, s in zip(todo, again, strict=False):
            out[i] = s
    return out


class ServiceUnavailable(RuntimeError):
    """The reward service gave no answer to a call the environment needs (after the client's retries and
    failover, or it refused the request): the rollout masks the rows that needed it (no prompt, no
    reward, no loss tokens) and counts them; a rank never dies of it."""


def _task_name(task: dict) -> str:
    return str(task.get('id', task.get('top', '?')))


class ServiceEnv:
    """Tasks are records {design_files, top, coverage_target? (percent), instance?, specs?, id?}.

    Every call goes through the client's retries and failover (reward_client.RewardClient.request);
    what still fails comes back as a failed Score (`score`) or as ServiceUnavailable (`first_turn`,
    `feedback`: the rows that needed the turn are masked by the rollout), never as the client's own
    exception."""

    def __init__(self, client, timeout_s: float = run_settings.default('timeout')):
        self.client = client
        self.timeout_s = timeout_s
        self._first: dict[Any, list[dict]] = {}

    def first_turn(self, task: dict) -> list[dict]:
        key = task.get('id') or id(task)
        if key not in self._first:  # a failure is not cached: the next step asks again
            try:
                self._first[key] = self.client.first_turn(
                    task['design_files'], task.get('top'), task.get('instance'), task.get('instruction'), task.get('specs')
                )
            except Exception as e:  # noqa: BLE001 - any client failure: the task's rows are masked, the rank lives
                raise ServiceUnavailable(f'first turn of task {_task_name(task)}: {e}') from e
        return self._first[key]

    def _parse(self, text: str) -> dict | str:
        """The service's parse of a reply, or the reason there is none (a str)."""
        try:
            return self.client.parse_reply(text)
        except Exception as e:  # noqa: BLE001 - no parse: the member is unscored (failed), not unparsable
            return f'parse-reply: {e}'

    def score(self, task: dict, samples: list[Sample]) -> list[Score]:
        """The prompt's samples as ONE group request (the service shares the work between them and
        gives each exactly its own result); unparsable replies are not sent."""
        out: list[Score | None] = [None] * len(samples)
        testbenches, where = [], []
        for i, s in enumerate(samples):
            parsed = self._parse(s.text)
            if isinstance(parsed, str):
                out[i] = Score(None, None, False, 'service_error', None, None, error=parsed)
                continue
            if parsed.get('status') != 'success' or not parsed.get('testbench'):
                out[i] = Score(0.0, 0.0, False, 'unparsable', None, parsed)
                continue
            name = parsed.get('filename') or f'tb_{task.get("top") or "dut"}.sv'
            testbenches.append({'name': name, 'content': parsed['testbench']})
            where.append((i, parsed))
        design = {'design_files': task['design_files'], 'top': task['top'], 'timeout_s': task.get('timeout_s', self.timeout_s)}
        if task.get('coverage_target') is not None:
            design['coverage_target'] = run_settings.check('coverage_target', task['coverage_target'])
        try:
            results = self.client.score_group(design, testbenches) if testbenches else []
        except Exception as e:  # noqa: BLE001 - the service gave up after its retries: no score, not reward 0
            results = [{'error': 'service_error', 'message': str(e)} for _ in testbenches]
        for (i, parsed), r in zip(where, results, strict=False):  # a short answer leaves members unscored (failed)
            if 'error' in r and 'reward' not in r:
                out[i] = Score(None, None, False, str(r.get('error')), r, parsed, error=r.get('message') or r.get('error'))
            else:
                out[i] = Score(float(r['reward']), float(r['coverage']), bool(r.get('passed')), r['status'], r, parsed)
        return out  # type: ignore[return-value]

    def feedback(self, task: dict, sample: Sample, score: Score) -> str:
        if score.record is None or score.error is not None:
            result = None if score.status == 'unparsable' else {'status': 'exception', 'err_msg': score.error or 'no result'}
        else:
            result = score.record
        try:
            return self.client.refine_prompt(result, reply=strip_think(sample.text))['content']
        except Exception as e:  # noqa: BLE001 - no feedback turn: the refinement rows are masked, the rank lives
            raise ServiceUnavailable(f'feedback turn of task {_task_name(task)}: {e}') from e


@dataclass
class TokenRewardEnv:
    """Synthetic verifiable reward for tests: the fraction of response tokens inside `good` (a set of
    token ids), as coverage c; reward = 1 + c (always 'simulated'). Feedback is a fixed text."""

    good: set[int]
    prompt: list[dict] = field(default_factory=lambda: [{'role': 'user', 'content': 'Write a testbench.'}])

    def first_turn(self, task: dict) -> list[dict]:
        return task.get('messages') or self.prompt

    def score(self, task: dict, samples: list[Sample]) -> list[Score]:
        res = []
        for s in samples:
            ids = s.response_ids or [0]
            c = sum(1 for t in ids if t in self.good) / len(ids)
            # percent to fraction, met up to the engine's tolerance (src/core/sim/ranking.ts meetsTarget)
            target = task.get('coverage_target', run_settings.COVERAGE_TARGET) / 100
            res.append(Score(1.0 + c, c, c >= target - 1e-9, 'success'))
        return res

    def feedback(self, task: dict, sample: Sample, score: Score) -> str:
        return f'Coverage {score.coverage:.2f}. Improve coverage toward 100% by editing the testbench.'
