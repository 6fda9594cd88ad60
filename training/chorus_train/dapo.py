"""DAPO math (docs/protocol.md §8): group-relative advantages, the clip-higher surrogate with a
token-level mean, no KL term. Pure functions on tensors; the RL loop (rl.py) and the OPD RL
fallback (opd.py) use them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

EPS_LO = 0.2
EPS_HI = 0.28


def group_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """A_i = (R_i - mean(R)) / (std(R) + eps) within one group (unbiased std, as verl's GRPO/DAPO
    estimator). A group whose rewards are all equal carries no signal: its advantages are exactly 0."""
    r = rewards.to(torch.float32)
    if r.numel() < 2:
        return torch.zeros_like(r)
    std = r.std(unbiased=True)
    if not torch.isfinite(std) or float(std) < 1e-8:
        return torch.zeros_like(r)
    return (r - r.mean()) / (std + eps)


def grouped_advantages(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Advantages for consecutive groups of `group_size` rewards."""
    r = rewards.view(-1, group_size)
    return torch.stack([group_advantages(g) for g in r]).view(-1)


@dataclass
class LossStats:
    loss: float
    clip_frac: float  # fraction of (unmasked) tokens where the clipped branch was taken
    clip_lo_frac: float  # ... on the low side (A < 0, ratio < 1 - eps_lo)
    clip_hi_frac: float  # ... on the high side (A > 0, ratio > 1 + eps_hi)
    ratio_mean: float
    tokens: int


def dapo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    eps_lo: float = EPS_LO,
    eps_hi: float = EPS_HI,
    n_tokens: float | None = None,
) -> tuple[torch.Tensor, LossStats]:
    """Clip-higher PPO surrogate, token-level mean.

    logp, old_logp: [B, T] log-probs of the sampled tokens under the current / rollout policy;
    advantages: [B] (one per sequence, broadcast over its tokens) or [B, T]; mask: [B, T] 1 for
    response tokens, 0 for prompt and padding. `n_tokens`: the normalizer — the number of response
    tokens in the WHOLE batch (all groups, all micro-batches), so micro-batches add up to the
    token-level mean; default mask.sum().

    loss = -sum_t min(rho_t A, clip(rho_t, 1 - eps_lo, 1 + eps_hi) A) / n_tokens.
    """
    m = mask.to(logp.dtype)
    a = advantages if advantages.dim() == 2 else advantages[:, None]
    a = a.to(logp.dtype).detach()
    ratio = torch.exp(logp - old_logp.detach())
    unclipped = ratio * a
    clipped = torch.clamp(ratio, 1.0 - eps_lo, 1.0 + eps_hi) * a
    per_tok = -torch.minimum(unclipped, clipped)
    denom = float(n_tokens) if n_tokens is not None else float(m.sum().clamp(min=1))
    loss = (per_tok * m).sum() / max(denom, 1.0)
    with torch.no_grad():
        mb = mask.bool()
        hi = (a > 0) & (ratio > 1.0 + eps_hi) & mb
        lo = (a < 0) & (ratio < 1.0 - eps_lo) & mb
        n = max(int(mb.sum()), 1)
        stats = LossStats(
            loss=float(loss),
            clip_frac=float((hi | lo).sum()) / n,
            clip_lo_frac=float(lo.sum()) / n,
            clip_hi_frac=float(hi.sum()) / n,
            ratio_mean=float((ratio * m).sum()) / n,
            tokens=int(mb.sum()),
        )
    return loss, stats


def token_logprobs(logits: torch.Tensor, tokens: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """log softmax(logits / T)[token] per position, in fp32. logits [B, T, V], tokens [B, T]. T is
    the rollout temperature: the ratio compares the policy the samples were drawn from."""
    lp = torch.log_softmax(logits.float() / temperature, dim=-1)
    return lp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)


def token_entropy(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Entropy of the sampling policy (logits / T) at each position [B, T] (nats)."""
    lp = torch.log_softmax(logits.float() / temperature, dim=-1)
    return -(lp.exp() * lp).sum(-1)
