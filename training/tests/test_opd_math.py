"""OPD per-token reward, top-K baseline and routing against hand-computed cases."""

import math
import random

import pytest
import torch

from chorus_train import opd
from chorus_train.envs import Score


def test_reward_baseline_advantage_hand_computed():
    # V = 4, K = 2: student top-2 = tokens 0, 1
    ls = torch.log(torch.tensor([[[0.5, 0.3, 0.1, 0.1]]]))
    lt = torch.log(torch.tensor([[[0.2, 0.6, 0.1, 0.1]]]))
    tok = torch.tensor([[1]])
    r, b, a = opd.opd_advantages(ls, lt, tok, k=2)
    assert r.item() == pytest.approx(math.log(0.6) - math.log(0.3), abs=1e-6)
    ps = [0.5 / 0.8, 0.3 / 0.8]
    pt = [0.2 / 0.8, 0.6 / 0.8]
    kl = sum(p * (math.log(p) - math.log(q)) for p, q in zip(ps, pt, strict=True))
    assert b.item() == pytest.approx(-kl, abs=1e-6)
    assert a.item() == pytest.approx(r.item() + kl, abs=1e-6)
    assert not a.requires_grad


def test_identical_teacher_gives_zero_advantage():
    x = torch.randn(2, 3, 50)
    r, b, a = opd.opd_advantages(x, x.clone(), torch.randint(0, 50, (2, 3)))
    assert torch.allclose(a, torch.zeros_like(a), atol=1e-6)


def test_loss_gradient_is_advantage_weighted_and_masked():
    lp = torch.tensor([[-1.0, -2.0], [-0.5, -3.0]], requires_grad=True)
    a = torch.tensor([[0.5, -1.0], [2.0, 7.0]])
    m = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    loss = opd.opd_loss(lp, a, m)
    loss.backward()
    assert torch.allclose(lp.grad, -a * m / 3)


def sc(*rewards):
    return [Score(r, max(r - 1, 0.0), False, 'success' if r > 0 else 'xrun_failed') for r in rewards]


def test_routing_variants():
    rng = random.Random(0)
    student = sc(1.5, 1.2, 0.0, 1.4)
    teachers = [sc(1.6, 1.0), sc(1.9, 0.0)]
    assert opd.route('best', student, teachers, rng) == opd.Route('distill', 1, '1.9000>1.5000')
    # the gate stays closed: `skip` (the paper, the default): no gradient from the round
    closed = opd.route('best', sc(1.95, 0, 0, 0), teachers, rng)
    assert closed == opd.Route('skip', None, 'gate:1.9000<=1.9500') and closed.gate_closed and not closed.integrity
    # `rl_fallback` (the reference code): the round keeps the RL loss
    closed = opd.route('best', sc(1.95, 0, 0, 0), teachers, rng, gate_closed='rl_fallback')
    assert closed == opd.Route('rl', None, 'gate:1.9000<=1.9500') and closed.gate_closed and not closed.integrity
    # integrity failures take the RL fallback whatever gate_closed says
    broken = sc(1.95, 0, 0, 0)
    broken[1] = Score(None, None, False, 'error', error='scorer down')
    assert opd.route('best', broken, teachers, rng).kind == 'rl'
    # median: teacher medians 1.3 and 0.95; a student median of 1.3 is not beaten: gate closed
    assert opd.route('median', sc(1.5, 1.3, 0.0, 1.3), teachers, rng).gate_closed
    assert opd.route('median', sc(1.0, 1.0, 0.0, 1.2), teachers, rng) == opd.Route('distill', 0, '1.3000>1.0000')
    assert opd.route('always_best', sc(2.0, 2.0, 2.0, 2.0), teachers, rng).teacher == 1
    assert opd.route('always_rl', student, teachers, rng).kind == 'rl'
    assert not opd.route('always_rl', student, teachers, rng).gate_closed
    picks = {opd.route('random_teacher', student, teachers, rng).teacher for _ in range(50)}
    assert picks == {0, 1}
    kinds = {opd.route('random_source', student, teachers, rng).kind for _ in range(50)}
    assert kinds == {'distill', 'rl'}


@pytest.mark.parametrize(
    'bad,why',
    [
        (Score(None, None, False, 'error', error='boom'), 'missing'),
        (Score(float('nan'), 0.5, False, 'success'), 'non-finite'),
        (Score(1.9, 0.5, False, 'success'), 'mismatched'),
        (Score(1.0, 0.0, False, 'xrun_failed'), 'mismatched'),
    ],
)
def test_integrity_failures_fall_back_to_rl(bad, why):
    student = sc(1.5, 1.2, 0.0) + [bad]
    d = opd.route('best_skip', student, [sc(2.0, 2.0), sc(2.0, 1.0)], random.Random(0))
    assert d.kind == 'rl' and d.reason == f'integrity:{why}'


def test_truncated_scores_fall_back_to_rl():
    d = opd.route('best_skip', sc(1.0, 1.0), [sc(2.0, 2.0)], random.Random(0), n_student=4, n_teacher=[2])
    assert d == opd.Route('rl', None, 'integrity:truncated')


def test_advantages_are_read_at_the_rollout_temperature():
    torch.manual_seed(0)
    ls, lt = torch.randn(1, 3, 40), torch.randn(1, 3, 40)
    tok = torch.randint(0, 40, (1, 3))
    r, b, a = opd.opd_advantages(ls, lt, tok, k=8, temperature=0.5)
    r2, b2, a2 = opd.opd_advantages(ls / 0.5, lt / 0.5, tok, k=8)
    assert torch.allclose(r, r2) and torch.allclose(b, b2) and torch.allclose(a, a2)
    assert not torch.allclose(r, opd.opd_advantages(ls, lt, tok, k=8)[0])


def test_deprecated_routing_names_map_with_a_message():
    msgs = []
    with pytest.warns(DeprecationWarning):
        assert opd.canonical_routing('best_skip', msgs.append) == 'best'
    with pytest.warns(DeprecationWarning):
        assert opd.canonical_routing('rl_fallback', msgs.append) == 'always_rl'
    assert len(msgs) == 2 and 'gate_closed: rl_fallback' in msgs[0] and 'always_rl' in msgs[1]
    with pytest.warns(DeprecationWarning):
        c = opd.OPDConfig(routing='best_skip')
    assert (c.routing, c.gate_closed) == ('best', 'skip')
    with pytest.raises(SystemExit):
        opd.OPDConfig(gate_closed='maybe')
    assert opd.canonical_routing('median') == 'median'


def test_chunked_opd_advantages_equal_the_whole_sequence(tiny_ckpts):
    """opd_advantages_chunked (the teacher's LM head and the log-softmax chunk by chunk) gives the
    whole-sequence values."""
    from chorus_train.policy import load_policy

    student, _ = load_policy(str(tiny_ckpts[0]))
    teacher, _ = load_policy(str(tiny_ckpts[1]))
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 200, (1, 23), generator=g)
    att = torch.ones_like(ids)
    T = 13
    tokens = ids[:, -T:]
    with torch.no_grad():
        ls = student(input_ids=ids, attention_mask=att, logits_to_keep=T + 1).logits[:, :-1]
        lt = teacher(input_ids=ids, attention_mask=att, logits_to_keep=T + 1).logits[:, :-1]
    whole = opd.opd_advantages(ls, lt, tokens, 16, 1.0)
    for chunk in (1, 4, 13, 64):
        got = opd.opd_advantages_chunked(ls, teacher, ids, att, tokens, 16, 1.0, chunk=chunk)
        for w, x in zip(whole, got, strict=True):
            assert x.shape == (1, T) and torch.allclose(w, x, atol=1e-5), chunk
