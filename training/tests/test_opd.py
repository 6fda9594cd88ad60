"""OPD for real on tiny random Qwen3s: the student moves toward the routed teacher on the prompt
rounds where the teacher wins; where the gate stays closed the round keeps the RL (DAPO) loss;
every agentic round is gated; integrity failures (scores, non-finite teacher log-probs) take the
RL fallback, with missing student rewards scored again; a run resumes from its checkpoint."""

from __future__ import annotations

import copy
import csv
import random

import pytest
import torch

from chorus_train import dapo, opd
from chorus_train.envs import Score
from chorus_train.policy import HFSampler, load_policy, make_batch, render, response_logits


class Tagged:
    """A sampler that marks who sampled (the scripted scores depend on it)."""

    def __init__(self, inner, who):
        self.inner, self.who = inner, who
        self.drawn = []

    def sample(self, prompts, n):
        groups = self.inner.sample(prompts, n)
        self.drawn += groups
        for g in groups:
            for s in g:
                s.meta['who'] = self.who
        return groups


# scripted best-of scores: on 'win' the teacher beats the student, on 'skip' it does not,
# on 'broken' a teacher score is NaN (integrity failure)
SCORES = {
    'win': {'student': 1.2, 'teacher': 1.9},
    'skip': {'student': 1.8, 'teacher': 1.3},
    'broken': {'student': 1.2, 'teacher': float('nan')},
}


class ScriptedEnv:
    def first_turn(self, task):
        return [{'role': 'user', 'content': f'Write a testbench for {task["id"]}.'}]

    def score(self, task, samples):
        out = []
        for i, s in enumerate(samples):
            r = SCORES[task['id']][s.meta['who']] - 0.1 * i  # the first sample is the best
            out.append(Score(r, r - 1 if r == r else float('nan'), False, 'success'))
        return out

    def feedback(self, task, sample, score):
        return 'again'


def logprob_gap(student, teacher, samples, pad) -> float:
    """Mean |log pi_T(y_t) - log pi_S(y_t)| over the probe tokens: 0 when the student's log-probs
    equal the teacher's."""
    b = make_batch(samples, pad)
    with torch.no_grad():
        ls = dapo.token_logprobs(response_logits(student, b), b.tokens)
        lt = dapo.token_logprobs(response_logits(teacher, b), b.tokens)
    return float(((lt - ls).abs() * b.mask).sum() / b.mask.sum())


def test_opd_moves_toward_routed_teacher_only_where_it_wins(tiny_ckpts, tmp_path):
    student, tok = load_policy(str(tiny_ckpts[0]))
    teacher, _ = load_policy(str(tiny_ckpts[0]))
    with torch.no_grad():  # a sharper version of the student: it prefers the student's own top tokens more strongly
        teacher.model.norm.weight.mul_(4)
    teacher.eval().requires_grad_(False)
    pad = tok.pad_token_id
    tasks = [{'id': 'win'}, {'id': 'skip'}, {'id': 'broken'}]
    env = ScriptedEnv()
    start = copy.deepcopy(student)
    cfg = opd.OPDConfig(
        out=str(tmp_path / 'opd'),
        prompts_per_step=3,
        student_samples=4,
        teacher_samples=2,
        lr=2e-3,
        max_new_tokens=6,
        temperature=1.0,
        top_p=1.0,
        micro_batch=4,
        save_every=0,
        seed=0,
        agentic_rounds=1,
    )
    ss = Tagged(HFSampler(student, tok, 6, 1.0, 1.0, top_k=32, seed=1), 'student')
    res = opd.train(
        cfg,
        tasks,
        env,
        student=student,
        tok=tok,
        teachers=[teacher],
        student_sampler=ss,
        teacher_samplers=[Tagged(HFSampler(teacher, tok, 6, 1.0, 1.0, top_k=32, seed=2), 'teacher')],
        steps=4,
        log=lambda *_: None,
    )
    kinds = [[(d['kind'], d['reason'].split(':')[0]) for d in h['decisions']] for h in res['history']]
    assert kinds == [[('distill', '1.9000>1.2000'), ('rl', 'gate'), ('rl', 'integrity')]] * 4
    assert res['totals'] == {'distilled': 4, 'gate_closed': 4, 'rl_fallback': 4, 'integrity_failures': 4}
    # the tokens the student drew on the 'win' prompt during training: their log-probs moved toward the teacher's
    win = [x for g in ss.drawn[0::3] for x in g]
    before, after = logprob_gap(start, teacher, win, pad), logprob_gap(res['model'], teacher, win, pad)
    print(f'|log pi_T - log pi_S| on the distilled tokens: {before:.4f} -> {after:.4f}')
    assert after < before * 0.9


def _groups(tiny_ckpts):
    student, tok = load_policy(str(tiny_ckpts[0]))
    teacher, _ = load_policy(str(tiny_ckpts[2]))
    teacher.eval().requires_grad_(False)
    s = HFSampler(student, tok, 5, 1.0, 1.0, seed=3)
    g_win = s.sample([render(tok, [{'role': 'user', 'content': 'a'}])], 4)[0]
    g_lose = s.sample([render(tok, [{'role': 'user', 'content': 'b'}])], 4)[0]
    return student, teacher, tok, g_win, g_lose


def _step(student, teacher, cfg, pad, groups, decisions, scores):
    m = copy.deepcopy(student)
    o = cfg.optimizer(m.parameters())
    decisions = list(decisions)
    opd.opd_step(m, [teacher], o, [], groups, decisions, scores, cfg, pad)
    return m, decisions


def _same(a, b) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters(), strict=True))


def test_gate_closed_rounds_keep_the_rl_loss(tiny_ckpts):
    """Where the teacher does not win, the round is not dropped: its student group trains under DAPO
    (the reference), exactly as the RL fallback would; distillation happens only where the gate opens."""
    student, teacher, tok, g_win, g_lose = _groups(tiny_ckpts)
    pad = tok.pad_token_id
    cfg = opd.OPDConfig(lr=1e-2, micro_batch=4)
    lose_scores = [Score(r, r - 1, False, 'success') for r in (1.5, 1.2, 1.0, 1.8)]
    win_scores = [Score(1.1, 0.1, False, 'success')] * 4
    D, G, R = opd.Route('distill', 0), opd.Route('rl', None, 'gate:1.0<=1.8'), opd.Route('rl', None, 'variant')
    closed, _ = _step(student, teacher, cfg, pad, [g_lose], [G], [lose_scores])
    assert not _same(closed, student), 'a gate-closed round must still move the student (RL loss)'
    # ... by exactly the DAPO step on its group: on policy, the gradient of -sum A log pi / N
    ref = copy.deepcopy(student)
    o = cfg.optimizer(ref.parameters())
    b = make_batch(g_lose, pad)
    lp = dapo.token_logprobs(response_logits(ref, b), b.tokens, cfg.temperature)
    adv = dapo.group_advantages(torch.tensor([x.reward for x in lose_scores]))
    (-(adv[:, None] * lp * b.mask).sum() / b.mask.sum()).backward()
    torch.nn.utils.clip_grad_norm_(ref.parameters(), cfg.grad_clip)
    o.step()
    for (n, x), y in zip(closed.named_parameters(), ref.parameters(), strict=True):
        assert torch.allclose(x, y, atol=1e-6), n
    # in a mixed step the closed round counts as the RL fallback would, and the open one distills
    mixed, _ = _step(student, teacher, cfg, pad, [g_win, g_lose], [D, G], [win_scores, lose_scores])
    as_rl, _ = _step(student, teacher, cfg, pad, [g_win, g_lose], [D, R], [win_scores, lose_scores])
    assert _same(mixed, as_rl)
    only_win, _ = _step(student, teacher, cfg, pad, [g_win], [D], [win_scores])
    assert not _same(mixed, only_win)


def test_non_finite_teacher_log_probs_are_an_integrity_failure(tiny_ckpts):
    student, teacher, tok, g_win, _ = _groups(tiny_ckpts)
    bad = copy.deepcopy(teacher)
    with torch.no_grad():
        bad.model.norm.weight[0] = float('nan')  # every teacher logit becomes NaN
    cfg = opd.OPDConfig(lr=1e-2, micro_batch=2)
    scores = [Score(r, r - 1, False, 'success') for r in (1.5, 1.2, 1.0, 1.8)]
    m, decisions = _step(student, bad, cfg, tok.pad_token_id, [g_win], [opd.Route('distill', 0, 'always')], [scores])
    assert decisions == [opd.Route('rl', None, 'integrity:non-finite-teacher-logprobs')] and decisions[0].integrity
    assert all(torch.isfinite(p).all() for p in m.parameters())
    as_rl, _ = _step(student, bad, cfg, tok.pad_token_id, [g_win], [opd.Route('rl', None, 'variant')], [scores])
    assert _same(m, as_rl) and not _same(m, student)


class FlakyEnv(ScriptedEnv):
    """ScriptedEnv whose service loses the score of the student's 3rd sample on the first `lose`
    requests that contain it."""

    def __init__(self, lose: int):
        self.lose = lose
        self.calls = 0

    def score(self, task, samples):
        self.calls += 1
        out = []
        for i, s in enumerate(samples):
            r = SCORES[task['id']][s.meta['who']] - 0.1 * s.meta['k']  # by sample, whatever the request holds
            out.append(Score(r, r - 1, False, 'success'))
            if s.meta.get('who') == 'student' and s.meta.get('k') == 2 and self.lose > 0:
                self.lose -= 1
                out[i] = Score(None, None, False, 'service_error', error='HTTP 500')
        return out


class Numbered:
    def __init__(self, inner, who):
        self.inner, self.who = inner, who

    def sample(self, prompts, n):
        groups = self.inner.sample(prompts, n)
        for g in groups:
            for k, s in enumerate(g):
                s.meta.update(who=self.who, k=k)
        return groups


def test_rl_fallback_scores_missing_student_rewards_again(tiny_ckpts):
    student, tok = load_policy(str(tiny_ckpts[0]))
    teacher, _ = load_policy(str(tiny_ckpts[1]))
    cfg = opd.OPDConfig(student_samples=4, teacher_samples=2, agentic_rounds=1, micro_batch=4, lr=1e-2)
    ss = Numbered(HFSampler(student, tok, 5, 1.0, 1.0, seed=1), 'student')
    ts = [Numbered(HFSampler(teacher, tok, 5, 1.0, 1.0, seed=2), 'teacher')]
    env = FlakyEnv(lose=1)
    units = opd.opd_rollout({'id': 'win'}, env, tok, ss, ts, cfg, random.Random(0))
    u = units[0]
    assert u.route == opd.Route('rl', None, 'integrity:missing')
    assert env.calls == 3  # student, teacher, then the student's missing member again
    assert [x.reward for x in u.scores] == pytest.approx([1.2, 1.1, 1.0, 0.9])  # its real reward, not 0
    # a member still unscored after the retry is left out of the group, never read as reward 0
    env = FlakyEnv(lose=2)
    u = opd.opd_rollout({'id': 'win'}, env, tok, ss, ts, cfg, random.Random(0))[0]
    assert u.scores[2].failed
    pad = tok.pad_token_id
    got, _ = _step(student, teacher, cfg, pad, [u.samples], [u.route], [u.scores])
    keep = [0, 1, 3]
    want, _ = _step(student, teacher, cfg, pad, [[u.samples[i] for i in keep]], [u.route], [[u.scores[i] for i in keep]])
    assert _same(got, want) and not _same(got, student)


class RoundEnv(ScriptedEnv):
    """The teacher loses the first round and wins the refinement round (the round is read from the
    prompt: the refinement prompt carries the feedback turn)."""

    def __init__(self, tok):
        self.tok = tok
        self.fed = 0

    def score(self, task, samples):
        out = []
        for i, s in enumerate(samples):
            refine = 'FEEDBACK-TURN' in self.tok.decode(s.prompt_ids)
            r = {('student', False): 1.8, ('teacher', False): 1.3, ('student', True): 1.2, ('teacher', True): 1.9}[
                (s.meta['who'], refine)
            ] - 0.1 * i
            out.append(Score(r, r - 1, False, 'success'))
        return out

    def feedback(self, task, sample, score):
        self.fed += 1
        return 'FEEDBACK-TURN: improve coverage.'


def test_every_agentic_round_is_gated(tiny_ckpts, tmp_path):
    student, tok = load_policy(str(tiny_ckpts[0]))
    teacher, _ = load_policy(str(tiny_ckpts[1]))
    teacher.eval().requires_grad_(False)
    cfg = opd.OPDConfig(
        out=str(tmp_path / 'opd'),
        prompts_per_step=1,
        student_samples=4,
        teacher_samples=2,
        agentic_rounds=2,
        max_new_tokens=5,
        micro_batch=4,
        save_every=0,
        lr=1e-3,
    )
    env = RoundEnv(tok)
    res = opd.train(
        cfg,
        [{'id': 't'}],
        env,
        student=student,
        tok=tok,
        teachers=[teacher],
        student_sampler=Tagged(HFSampler(student, tok, 5, 1.0, 1.0, seed=1), 'student'),
        teacher_samplers=[Tagged(HFSampler(teacher, tok, 5, 1.0, 1.0, seed=2), 'teacher')],
        steps=1,
        log=lambda *_: None,
    )
    d = res['history'][0]['decisions']
    assert [(x['round'], x['kind']) for x in d] == [(0, 'rl'), (1, 'distill')]
    assert d[0]['reason'].startswith('gate:') and env.fed == 1
    assert res['totals'] == {'distilled': 1, 'gate_closed': 1, 'rl_fallback': 0, 'integrity_failures': 0}


def test_opd_checkpoints_resume(tiny_ckpts, tmp_path):
    student, tok = load_policy(str(tiny_ckpts[0]))
    teacher, _ = load_policy(str(tiny_ckpts[1]))
    teacher.eval().requires_grad_(False)
    cfg = opd.OPDConfig(
        out=str(tmp_path / 'opd'),
        prompts_per_step=1,
        student_samples=2,
        teacher_samples=2,
        agentic_rounds=1,
        max_new_tokens=4,
        micro_batch=2,
        save_every=2,
        lr=1e-3,
        routing='always_best',
        updates=10,
    )
    env = ScriptedEnv()
    mk = lambda m, who, seed: Tagged(HFSampler(m, tok, 4, 1.0, 1.0, seed=seed), who)  # noqa: E731
    opd.train(
        cfg,
        [{'id': 'win'}],
        env,
        student=student,
        tok=tok,
        teachers=[teacher],
        student_sampler=mk(student, 'student', 1),
        teacher_samplers=[mk(teacher, 'teacher', 2)],
        steps=2,
        log=lambda *_: None,
    )
    st = torch.load(tmp_path / 'opd' / 'checkpoint-2' / 'trainer_state.pt', weights_only=False)
    assert st['step'] == 2 and st['cursor'] == 2 and tuple(st['optimizer']['param_groups'][0]['betas']) == (0.9, 0.95)
    res = opd.train(
        cfg,
        [{'id': 'win'}],
        env,
        tok=tok,
        teachers=[teacher],
        student_sampler=mk(student, 'student', 1),
        teacher_samplers=[mk(teacher, 'teacher', 2)],
        steps=1,
        log=lambda *_: None,
    )
    assert res['state']['step'] == 3
    assert [int(r['step']) for r in csv.DictReader(open(tmp_path / 'opd' / 'metrics.csv'))] == [1, 2, 3]
