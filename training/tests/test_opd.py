"""OPD for real on tiny random Qwen3s: the student moves toward the routed teacher on tasks where
the teacher wins; skipped tasks contribute nothing; integrity failures take the RL fallback."""
from __future__ import annotations

import copy

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
SCORES = {'win': {'student': 1.2, 'teacher': 1.9}, 'skip': {'student': 1.8, 'teacher': 1.3}, 'broken': {'student': 1.2, 'teacher': float('nan')}}


class ScriptedEnv:
    def first_turn(self, task):
        return [{'role': 'user', 'content': f"Write a testbench for {task['id']}."}]

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
    cfg = opd.OPDConfig(out=str(tmp_path / 'opd'), prompts_per_step=3, student_samples=4, teacher_samples=2, lr=2e-3,
                        max_new_tokens=6, temperature=1.0, top_p=1.0, micro_batch=4, save_every=0, seed=0)
    ss = Tagged(HFSampler(student, tok, 6, 1.0, 1.0, top_k=32, seed=1), 'student')
    res = opd.train(cfg, tasks, env, student=student, tok=tok, teachers=[teacher], student_sampler=ss,
                    teacher_samplers=[Tagged(HFSampler(teacher, tok, 6, 1.0, 1.0, top_k=32, seed=2), 'teacher')], steps=4, log=lambda *_: None)
    kinds = [[d['kind'] for d in h['decisions']] for h in res['history']]
    assert kinds == [['distill', 'skip', 'rl']] * 4
    assert res['totals'] == {'distilled': 4, 'skipped': 4, 'rl_fallback': 4, 'integrity_failures': 4}
    # the tokens the student drew on the 'win' prompt during training: their log-probs moved toward the teacher's
    win = [x for g in ss.drawn[0::3] for x in g]
    before, after = logprob_gap(start, teacher, win, pad), logprob_gap(res['model'], teacher, win, pad)
    print(f'|log pi_T - log pi_S| on the distilled tokens: {before:.4f} -> {after:.4f}')
    assert after < before * 0.9


def test_skipped_prompts_contribute_nothing(tiny_ckpts):
    student, tok = load_policy(str(tiny_ckpts[0]))
    teacher, _ = load_policy(str(tiny_ckpts[2]))
    teacher.eval().requires_grad_(False)
    pad = tok.pad_token_id
    s = HFSampler(student, tok, 5, 1.0, 1.0, seed=3)
    g_win = s.sample([render(tok, [{'role': 'user', 'content': 'a'}])], 4)[0]
    g_skip = s.sample([render(tok, [{'role': 'user', 'content': 'b'}])], 4)[0]
    cfg = opd.OPDConfig(lr=1e-2, micro_batch=4)
    sc = [Score(1.5, 0.5, False, 'success')] * 4

    def step(groups, decisions):
        m = copy.deepcopy(student)
        o = torch.optim.AdamW(m.parameters(), lr=cfg.lr, weight_decay=0.0)
        opd.opd_step(m, [teacher], o, [], groups, decisions, [sc] * len(groups), cfg, pad)
        return m

    D, S = opd.Route('distill', 0), opd.Route('skip')
    mixed = step([g_win, g_skip], [D, S])
    solo = step([g_win], [D])
    for (n, a), (_, b) in zip(mixed.named_parameters(), solo.named_parameters()):
        assert torch.equal(a, b), n
    untouched = step([g_skip], [S])
    for (n, a), (_, b) in zip(untouched.named_parameters(), student.named_parameters()):
        assert torch.equal(a, b), n
    moved = any(not torch.equal(a, b) for a, b in zip(solo.parameters(), student.parameters()))
    assert moved
