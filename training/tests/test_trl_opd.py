"""OPD on TRL (trainers.ChorusOPDTrainer): the student moves toward the routed teacher only on the
rounds where the gate opens; a gate-closed round trains under exactly the DAPO step TRL takes in
RL; a non-finite teacher score is an integrity failure (RL fallback)."""

from __future__ import annotations

import copy

import pytest
import torch

from chorus_train import callbacks, dapo, opd, rl, trl_engine
from chorus_train.envs import Score
from chorus_train.policy import load_policy, make_batch, response_logits

pytest.importorskip('trl')

# scripted best-of scores: on 'win' the teacher beats the student, on 'skip' it does not,
# on 'broken' a teacher score is NaN (integrity failure)
SCORES = {
    'win': {'student': 1.2, 'teacher': 1.9},
    'skip': {'student': 1.8, 'teacher': 1.3},
    'broken': {'student': 1.2, 'teacher': float('nan')},
}


class ScriptedEnv:
    def __init__(self):
        self.drawn = {k: [] for k in SCORES}

    def first_turn(self, task):
        return [{'role': 'user', 'content': f'Write a testbench for {task["id"]}.'}]

    def score(self, task, samples):
        out = []
        for s in samples:
            who = s.meta['who']
            if who == 'student':
                self.drawn[task['id']].append(s)
            i = s.meta.get('key', (0, 0, 0))[2] if who == 'student' else 0
            r = SCORES[task['id']][who] - 0.1 * i  # the first member is the best
            out.append(Score(r, r - 1 if r == r else float('nan'), False, 'success'))
        return out

    def feedback(self, task, sample, score):
        return 'again'


def logprob_gap(student, teacher, samples, pad) -> float:
    b = make_batch(samples, pad)
    with torch.no_grad():
        ls = dapo.token_logprobs(response_logits(student, b), b.tokens)
        lt = dapo.token_logprobs(response_logits(teacher, b), b.tokens)
    return float(((lt - ls).abs() * b.mask).sum() / b.mask.sum())


def ocfg(out, **kw) -> opd.OPDConfig:
    base = dict(
        out=str(out),
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
        grad_clip=0.0,
    )
    base.update(kw)
    return opd.OPDConfig(**base)


def sharp_teacher(ckpt):
    teacher, _ = load_policy(str(ckpt))
    with torch.no_grad():  # a sharper version of the student: it prefers the student's own top tokens more strongly
        teacher.model.norm.weight.mul_(4)
    return teacher.eval().requires_grad_(False)


def test_opd_on_trl_moves_toward_the_teacher_only_where_it_wins(tiny_ckpts, tmp_path):
    student, tok = load_policy(str(tiny_ckpts[0]))
    teacher = sharp_teacher(tiny_ckpts[0])
    start = copy.deepcopy(student)
    env = ScriptedEnv()
    tasks = [{'id': 'win'}, {'id': 'skip'}, {'id': 'broken'}]
    res = trl_engine.train_opd(
        ocfg(tmp_path / 'opd'), tasks, env, student=student, tok=tok, teachers=[teacher], steps=3, resume=False, log=lambda *_: None
    )
    kinds = [sorted((d['kind'], d['reason'].split(':')[0]) for d in h) for h in res['history']]
    assert kinds == [sorted([('distill', '1.9000>1.2000'), ('skip', 'gate'), ('rl', 'integrity')])] * 3
    assert res['totals'] == {'distilled': 3, 'gate_closed': 3, 'rl_fallback': 3, 'skipped': 3, 'integrity_failures': 3}
    pad = tok.pad_token_id
    win = env.drawn['win']
    before, after = logprob_gap(start, teacher, win, pad), logprob_gap(res['model'], teacher, win, pad)
    print(f'|log pi_T - log pi_S| on the distilled tokens: {before:.4f} -> {after:.4f}')
    assert after < before * 0.9


def _fixed_fn(tok):
    """Deterministic student replies by (task, round, member): the same rollouts in both runs."""
    words = ['module tb;', 'initial begin end', 'assign y = a;', 'wire w;']

    def fn(prompt_ids, keys):
        return [
            tok(words[j] + f' // {rnd}', add_special_tokens=False)['input_ids'] + [tok.convert_tokens_to_ids('<|im_end|>')]
            for _, rnd, j in keys
        ]

    return fn


def test_a_gate_closed_round_is_the_dapo_step_on_trl(tiny_ckpts, tmp_path):
    """OPD on the 'skip' task (the teacher loses: gate closed) gives the same weights as TRL's DAPO step
    on the same rollouts; with the gate open ('win') the step differs (it distills)."""
    tok = load_policy(str(tiny_ckpts[0]))[1]
    teacher = sharp_teacher(tiny_ckpts[0])
    fn = _fixed_fn(tok)
    tfn = lambda t, prompt, n, key: fn([prompt] * n, [(0, key[1], j) for j in range(n)])  # noqa: E731

    def run_opd(task, out, **kw):
        student, _ = load_policy(str(tiny_ckpts[0]))
        c = ocfg(out, prompts_per_step=1, **{'gate_closed': 'rl_fallback', **kw})
        return trl_engine.train_opd(
            c,
            [{'id': task}],
            ScriptedEnv(),
            student=student,
            tok=tok,
            teachers=[teacher],
            steps=1,
            resume=False,
            sample_fn=fn,
            teacher_sample_fn=tfn,
            log=lambda *_: None,
        )

    closed = run_opd('skip', tmp_path / 'closed')  # gate_closed: rl_fallback (the reference code)
    assert [d['kind'] for d in closed['history'][0]] == ['rl']
    student, _ = load_policy(str(tiny_ckpts[0]))
    c = rl.RLConfig(
        out=str(tmp_path / 'rl'),
        lr=2e-3,
        group_size=4,
        prompts_per_step=1,
        agentic_rounds=1,
        max_new_tokens=6,
        micro_batch=4,
        mini_batches=1,
        save_every=0,
        seed=0,
        grad_clip=0.0,
    )
    dapo_run = trl_engine.train_rl(
        c, [{'id': 'skip'}], ScriptedEnv(), model=student, tok=tok, steps=1, resume=False, sample_fn=fn, log=lambda *_: None
    )
    start, _ = load_policy(str(tiny_ckpts[0]))
    moved = False
    for (n, x), y, z in zip(closed['model'].named_parameters(), dapo_run['model'].parameters(), start.parameters(), strict=True):
        assert torch.allclose(x, y, atol=1e-7), n
        moved |= not torch.equal(x, z)
    assert moved, 'a gate-closed round must still move the student (RL loss)'
    opened = run_opd('win', tmp_path / 'open')
    assert [d['kind'] for d in opened['history'][0]] == ['distill']
    assert any(
        not torch.allclose(x, y, atol=1e-7) for x, y in zip(opened['model'].parameters(), dapo_run['model'].parameters(), strict=True)
    )
    # gate_closed: skip (the paper, the default): the closed round contributes no gradient at all
    skipped = run_opd('skip', tmp_path / 'skipped', gate_closed='skip')
    assert [(d['kind'], d['reason'].split(':')[0]) for d in skipped['history'][0]] == [('skip', 'gate')]
    assert skipped['totals']['skipped'] == 1
    for (n, x), z in zip(skipped['model'].named_parameters(), start.parameters(), strict=True):
        assert torch.equal(x, z), n
    # opd_lambda scales the distilled advantage: 0 leaves the student where it was, 2 moves it further than 1
    zero = run_opd('win', tmp_path / 'lam0', opd_lambda=0.0)
    assert all(torch.equal(x, z) for x, z in zip(zero['model'].parameters(), start.parameters(), strict=True))
    two = run_opd('win', tmp_path / 'lam2', opd_lambda=2.0)
    d1 = sum(float((x - z).detach().abs().sum()) for x, z in zip(opened['model'].parameters(), start.parameters(), strict=True))
    d2 = sum(float((x - z).detach().abs().sum()) for x, z in zip(two['model'].parameters(), start.parameters(), strict=True))
    assert d2 > d1 > 0


class RoundEnv(ScriptedEnv):
    """The teacher loses round 0 and wins round 1 (every agentic round is gated on its own scores)."""

    def score(self, task, samples):
        out = []
        for s in samples:
            rnd = s.meta['key'][1]
            r = (1.3 if rnd == 0 else 1.9) if s.meta['who'] == 'teacher' else 1.5 - 0.1 * s.meta['key'][2]
            out.append(Score(r, r - 1, False, 'success'))
        return out


def test_every_agentic_round_is_gated_on_trl(tiny_ckpts, tmp_path):
    student, tok = load_policy(str(tiny_ckpts[0]))
    teacher = sharp_teacher(tiny_ckpts[0])
    res = trl_engine.train_opd(
        ocfg(tmp_path / 'opd', prompts_per_step=1, agentic_rounds=2),
        [{'id': 'win'}],
        RoundEnv(),
        student=student,
        tok=tok,
        teachers=[teacher],
        steps=1,
        resume=False,
        log=lambda *_: None,
    )
    assert [(d['round'], d['kind'], d['reason'].split(':')[0]) for d in res['history'][0]] == [
        (0, 'skip', 'gate'),
        (1, 'distill', '1.9000>1.5000'),
    ]


def test_non_finite_teacher_log_probs_take_the_rl_fallback_on_trl(tiny_ckpts, tmp_path):
    student, tok = load_policy(str(tiny_ckpts[0]))
    teacher = sharp_teacher(tiny_ckpts[0])
    with torch.no_grad():
        teacher.model.norm.weight.fill_(float('nan'))  # every teacher log-prob is NaN
    fn = _fixed_fn(tok)
    tfn = lambda t, prompt, n, key: fn([prompt] * n, [(0, key[1], j) for j in range(n)])  # noqa: E731  (a NaN model cannot sample)
    res = trl_engine.train_opd(
        ocfg(tmp_path / 'opd', prompts_per_step=1, routing='always_best'),
        [{'id': 'win'}],
        ScriptedEnv(),
        student=student,
        tok=tok,
        teachers=[teacher],
        steps=1,
        resume=False,
        teacher_sample_fn=tfn,
        log=lambda *_: None,
    )
    assert [(d['kind'], d['reason']) for d in res['history'][0]] == [('rl', 'integrity:non-finite-teacher-logprobs')]
    assert res['totals']['integrity_failures'] == 1
    assert all(torch.isfinite(p).all() for p in res['model'].parameters())


class FlakyEnv(ScriptedEnv):
    """Member 1's score is missing on the first request (scored again: its real reward), member 2's on
    every request (left out, never reward 0)."""

    def __init__(self):
        super().__init__()
        self.asked: dict[int, int] = {}

    def score(self, task, samples):
        out = super().score(task, samples)
        for k, s in enumerate(samples):
            j = s.meta.get('key', (0, 0, -1))[2] if s.meta['who'] == 'student' else -1
            self.asked[j] = self.asked.get(j, 0) + 1
            if (j == 1 and self.asked[j] == 1) or j == 2:
                out[k] = Score(None, None, False, 'service_error', error='scorer down')
        return out


def test_rl_fallback_scores_missing_student_rewards_again_on_trl(tiny_ckpts, tmp_path):
    student, tok = load_policy(str(tiny_ckpts[0]))
    teacher = sharp_teacher(tiny_ckpts[0])
    env = FlakyEnv()
    res = trl_engine.train_opd(
        ocfg(tmp_path / 'opd', prompts_per_step=1),
        [{'id': 'win'}],
        env,
        student=student,
        tok=tok,
        teachers=[teacher],
        steps=1,
        resume=False,
        log=lambda *_: None,
    )
    assert [d['reason'] for d in res['history'][0]] == ['integrity:missing']
    rows = res['trainer'].rollout_func.last['rows']
    assert rows[1]['score'].reward == pytest.approx(1.1) and env.asked[1] == 2  # scored again: its real reward
    assert rows[2]['score'].failed and env.asked[2] == 2  # still missing: left out, not 0
    assert rows[0]['score'].reward == pytest.approx(1.2) and env.asked[0] == 1


def test_opd_on_trl_checkpoints_and_resumes(tiny_ckpts, tmp_path):
    """TRL's checkpoint (model, optimizer, RNG, step) plus OPD's routing RNG; a rerun continues from it."""
    student, tok = load_policy(str(tiny_ckpts[0]))
    teacher = sharp_teacher(tiny_ckpts[0])
    c = ocfg(tmp_path / 'opd', prompts_per_step=1, routing='random_source', save_every=1)
    one = trl_engine.train_opd(
        c, [{'id': 'win'}], ScriptedEnv(), student=student, tok=tok, teachers=[teacher], steps=2, resume=False, log=lambda *_: None
    )
    ck = tmp_path / 'opd' / 'checkpoint-2'
    for f in ('model.safetensors', 'optimizer.pt', 'trainer_state.json', callbacks.ROUTE_RNG):
        assert (ck / f).exists(), f
    logs = []
    two = trl_engine.train_opd(c, [{'id': 'win'}], ScriptedEnv(), tok=tok, teachers=[teacher], steps=1, log=logs.append)
    assert any('resuming from' in x for x in logs) and two['trainer'].state.global_step == 3
    # the third route is the draw after the first two (the routing RNG was restored, not reseeded)
    import random

    rng = random.Random(c.seed)
    draws = [rng.randrange(2) for _ in range(3)]
    kinds = [d['kind'] for h in one['history'] + two['history'] for d in h]
    assert kinds == ['rl' if j == 1 else 'distill' for j in draws]


def test_opd_data_offset_starts_after_the_rl_steps():
    """OPD's sampler yields the RL run's seeded task order from `data_offset_steps` x prompts in (the
    reference's offset of 1,000 steps): with the same seed and data, OPD's first prompts are the ones
    RL would have drawn next."""
    from chorus_train import trainers

    Plain, _ = trainers._trainer_classes()
    S = Plain.Sampler
    kw = dict(data_source=list(range(50)), mini_repeat_count=1, batch_size=4, repeat_count=1, shuffle=True, seed=3)
    rl_order = list(S(**kw))  # 12 steps of 4 tasks
    got = list(S(**kw, offset=12))  # OPD after 3 RL steps of 4 prompts
    assert got[:20] == rl_order[12:32]
    assert list(S(**kw, offset=0)) == rl_order


def test_a_step_whose_rounds_are_all_skipped_takes_no_optimizer_step(tiny_ckpts, tmp_path):
    """gate_closed: skip on every row of a step leaves no gradient, and the step is not taken at all:
    AdamW would otherwise move the weights by the momentum of the step before (here: a distilled
    one). The weights after [distill, all skipped] equal those after [distill]."""
    tok = load_policy(str(tiny_ckpts[0]))[1]
    teacher = sharp_teacher(tiny_ckpts[0])
    fn = _fixed_fn(tok)
    tfn = lambda t, prompt, n, key: fn([prompt] * n, [(0, key[1], j) for j in range(n)])  # noqa: E731

    def run_opd(out, steps):
        student, _ = load_policy(str(tiny_ckpts[0]))
        return trl_engine.train_opd(
            ocfg(out, prompts_per_step=1, gate_closed='skip'),
            [{'id': 'win'}, {'id': 'skip'}],
            ScriptedEnv(),
            student=student,
            tok=tok,
            teachers=[teacher],
            steps=steps,
            resume=False,
            sample_fn=fn,
            teacher_sample_fn=tfn,
            log=lambda *_: None,
            args_over={'shuffle_dataset': False},  # win, then skip
        )

    one = run_opd(tmp_path / 'one', 1)
    two = run_opd(tmp_path / 'two', 2)
    assert [[d['kind'] for d in h] for h in two['history']] == [['distill'], ['skip']]
    start, _ = load_policy(str(tiny_ckpts[0]))
    assert any(not torch.equal(x, z) for x, z in zip(one['model'].parameters(), start.parameters(), strict=True)), 'step 1 must move'
    for (n, x), y in zip(two['model'].named_parameters(), one['model'].parameters(), strict=True):
        assert torch.equal(x, y), f'{n}: a step with every round skipped moved the weights'
    assert two['trainer'].chorus_skipped_steps == 1
    assert two['trainer'].lr_scheduler.last_epoch == 1, 'the skipped step must not advance the scheduler'


class PaddedEnv(ScriptedEnv):
    """Prompts of different lengths (task['extra'] filler words), so the teachers' batch is left-padded;
    records every teacher reply it scores."""

    def __init__(self):
        super().__init__()
        self.teacher_replies: list = []

    def first_turn(self, task):
        return [{'role': 'user', 'content': f'Write a testbench for {task["id"]}.' + ' Check every port.' * task['extra']}]

    def score(self, task, samples):
        if samples and samples[0].meta['who'] == 'teacher':
            self.teacher_replies.append(list(samples))
        return super().score(task, samples)


def _greedy_counting(model) -> list:
    """Wraps `model.generate`: every call is recorded (its batch shape) and made greedy (top_k 1 on the
    teachers' own sampling settings: only the arg-max token can be drawn, whatever the seed)."""
    calls, orig = [], model.generate

    def generate(*a, **kw):
        kw['top_k'] = 1
        calls.append(tuple(kw['input_ids'].shape))
        return orig(*a, **kw)

    model.generate = generate
    return calls


@pytest.mark.parametrize('rounds', [1, 2])
def test_teachers_answer_a_round_in_one_batched_generate_call(tiny_ckpts, tmp_path, rounds):
    """Each teacher samples all the task blocks of a round in ONE HF generate call (left padding, attention
    mask), not one call per block: per step, `agentic_rounds` calls per teacher (a round's prompts need the
    round before). Greedy, the batched replies equal the replies the per-prompt sampler gives each prompt
    alone (the code before the batching: HFSampler.sample([prompt], n) per block)."""
    from chorus_train.policy import HFSampler

    student, tok = load_policy(str(tiny_ckpts[0]))
    teachers = [sharp_teacher(tiny_ckpts[0]), sharp_teacher(tiny_ckpts[1])]
    calls = [_greedy_counting(t) for t in teachers]
    env = PaddedEnv()
    tasks = [{'id': 'win', 'extra': 0}, {'id': 'skip', 'extra': 4}, {'id': 'broken', 'extra': 9}]
    c = ocfg(tmp_path / 'opd', agentic_rounds=rounds, max_new_tokens=8)
    res = trl_engine.train_opd(c, tasks, env, student=student, tok=tok, teachers=teachers, steps=1, resume=False, log=lambda *_: None)
    assert res['trainer'].state.global_step == 1
    for cl in calls:  # one call per teacher and round; round 0 holds all 3 blocks x teacher_samples rows
        assert len(cl) == rounds, cl
        assert cl[0][0] == len(tasks)  # 3 prompts in the batch (num_return_sequences = teacher_samples)
    assert res['state'].teacher_calls == rounds * len(teachers)
    lens = {len(g[0].prompt_ids) for g in env.teacher_replies}
    assert len(lens) > 1, 'the prompts must differ in length (left padding)'
    n_blocks = sum(1 for h in res['history'] for _ in h)
    assert len(env.teacher_replies) == n_blocks * len(teachers)
    for group in env.teacher_replies:  # the old path: each prompt alone through the per-prompt sampler, greedy
        t = group[0].meta['teacher']
        before = len(calls[t])
        alone = HFSampler(teachers[t], tok, c.max_new_tokens, c.temperature, c.top_p, seed=0).sample(
            [group[0].prompt_ids], c.teacher_samples
        )[0]
        assert len(calls[t]) == before + 1
        assert [x.response_ids for x in group] == [x.response_ids for x in alone], group[0].meta['key']
        assert [x.truncated for x in group] == [x.truncated for x in alone]
