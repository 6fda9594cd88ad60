"""DAPO loss and advantages against hand-computed cases."""

import math

import pytest
import torch

from chorus_train import dapo


def test_group_advantages_hand_computed():
    r = torch.tensor([1.0, 2.0, 1.5, 1.5])
    a = dapo.group_advantages(r)
    std = math.sqrt(((1 - 1.5) ** 2 + (2 - 1.5) ** 2) / 3)  # unbiased std
    want = torch.tensor([-0.5, 0.5, 0.0, 0.0]) / (std + 1e-6)
    assert torch.allclose(a, want, atol=1e-6)
    assert abs(float(a.sum())) < 1e-6


def test_zero_variance_groups_have_zero_advantage():
    for r in ([0.0, 0.0, 0.0, 0.0], [1.7, 1.7, 1.7, 1.7], [2.0]):
        a = dapo.group_advantages(torch.tensor(r))
        assert torch.equal(a, torch.zeros(len(r)))
    a = dapo.grouped_advantages(torch.tensor([1.0, 1.0, 1.0, 1.0, 0.0, 2.0, 0.0, 2.0]), 4)
    assert torch.equal(a[:4], torch.zeros(4))
    assert (a[4:] != 0).all()


def _loss(ratio, adv, mask=None):
    ratio = torch.tensor(ratio, dtype=torch.float64)
    logp = torch.log(ratio).clone().requires_grad_(True)
    old = torch.zeros_like(logp)
    m = torch.ones_like(logp) if mask is None else torch.tensor(mask, dtype=torch.float64)
    loss, st = dapo.dapo_loss(logp, old, torch.tensor(adv, dtype=torch.float64), m)
    loss.backward()
    return loss, st, logp.grad


def test_clip_higher_is_asymmetric():
    # A > 0: clipped at 1 + 0.28 (not 1.2): ratio 1.25 still gets gradient, 1.3 does not
    loss, st, g = _loss([[1.25, 1.3]], [1.0])
    assert loss.item() == pytest.approx(-(1.25 + 1.28) / 2)
    assert g[0, 0].item() == pytest.approx(-1.25 / 2)  # d(-ratio*A)/dlogp = -ratio*A, / n_tokens
    assert g[0, 1].item() == 0.0
    assert st.clip_hi_frac == 0.5 and st.clip_lo_frac == 0.0
    # A < 0: clipped at 1 - 0.2: ratio 0.85 still gets gradient, 0.75 does not
    loss, st, g = _loss([[0.85, 0.75]], [-1.0])
    assert loss.item() == pytest.approx((0.85 + 0.8) / 2)
    assert g[0, 0].item() == pytest.approx(0.85 / 2)
    assert g[0, 1].item() == 0.0
    assert st.clip_lo_frac == 0.5 and st.clip_hi_frac == 0.0
    # the mirror case: ratio 0.75 with A > 0 is NOT clipped (min keeps the unclipped, smaller term)
    loss, st, g = _loss([[0.75]], [1.0])
    assert loss.item() == pytest.approx(-0.75) and g[0, 0].item() == pytest.approx(-0.75) and st.clip_frac == 0


def test_token_level_mean_and_padding_mask():
    # two sequences, 3 and 1 valid tokens: token-level mean over 4 tokens (not mean of means)
    ratio = [[1.0, 1.0, 1.0], [1.0, 5.0, 5.0]]
    mask = [[1, 1, 1], [1, 0, 0]]
    loss, st, g = _loss(ratio, [1.0, -2.0], mask)
    assert loss.item() == pytest.approx(-(1 + 1 + 1 - 2) / 4)
    assert st.tokens == 4
    assert g[1, 1].item() == 0.0 and g[1, 2].item() == 0.0  # padding gets no gradient
    assert st.clip_frac == 0.0  # padded ratios of 5 are not counted as clipped


def test_micro_batches_normalized_by_the_step_token_count_add_up_to_the_batch():
    # sequences of 3 and 1 valid tokens, off policy (ratios differ) with different advantages
    torch.manual_seed(0)
    logp = (torch.randn(2, 3, dtype=torch.float64) * 0.2).requires_grad_(True)
    old = torch.randn(2, 3, dtype=torch.float64) * 0.2
    adv = torch.tensor([1.5, -0.7], dtype=torch.float64)
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]], dtype=torch.float64)
    whole, _ = dapo.dapo_loss(logp, old, adv, mask)
    g_whole = torch.autograd.grad(whole, logp)[0]
    # the same batch as two micro-batches of one sequence each, both divided by the step's 4 tokens
    parts = [dapo.dapo_loss(logp[i : i + 1], old[i : i + 1], adv[i : i + 1], mask[i : i + 1], n_tokens=4)[0] for i in range(2)]
    g_parts = torch.autograd.grad(parts[0] + parts[1], logp)[0]
    assert (parts[0] + parts[1]).item() == pytest.approx(whole.item(), rel=1e-12)
    assert torch.allclose(g_parts, g_whole, rtol=1e-12, atol=0)
    # the per-micro-batch mean (no n_tokens) is a different update: the check above can fail
    naive = [dapo.dapo_loss(logp[i : i + 1], old[i : i + 1], adv[i : i + 1], mask[i : i + 1])[0] for i in range(2)]
    assert (naive[0] + naive[1]).item() != pytest.approx(whole.item(), rel=1e-3)


def test_log_probs_and_entropy_at_the_rollout_temperature():
    torch.manual_seed(1)
    z = torch.randn(2, 3, 11)
    tok = torch.randint(0, 11, (2, 3))
    lp = dapo.token_logprobs(z, tok, temperature=0.6)
    want = torch.log_softmax(z / 0.6, -1).gather(-1, tok.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(lp, want)
    assert not torch.allclose(lp, dapo.token_logprobs(z, tok))
    p = torch.softmax(z / 0.6, -1)
    assert torch.allclose(dapo.token_entropy(z, 0.6), -(p * p.log()).sum(-1), atol=1e-6)


def test_no_kl_term_on_policy_gradient():
    # on policy (ratio 1) the gradient is exactly -A/N per token: no KL or entropy term
    logits = torch.randn(2, 3, 7, dtype=torch.float64, requires_grad=True)
    tokens = torch.randint(0, 7, (2, 3))
    lp = dapo.token_logprobs(logits, tokens)
    loss, _ = dapo.dapo_loss(lp, lp.detach(), torch.tensor([1.0, -1.0], dtype=torch.float64), torch.ones(2, 3))
    loss.backward()
    lp2 = dapo.token_logprobs(logits.detach().clone().requires_grad_(True), tokens)
    ref = -(torch.tensor([[1.0], [-1.0]], dtype=torch.float64) * lp2).sum() / 6
    g_ref = torch.autograd.grad(ref, lp2)[0]
    assert torch.allclose(
        torch.autograd.grad(dapo.dapo_loss(lp2, lp2.detach(), torch.tensor([1.0, -1.0], dtype=torch.float64), torch.ones(2, 3))[0], lp2)[0],
        g_ref,
    )
