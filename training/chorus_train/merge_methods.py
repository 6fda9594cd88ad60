"""The merge methods of docs/protocol.md §8 as small pure functions on fp32 tensors (one tensor, or one
row block of a tensor, at a time).

- linear / uniform soup: sum_i w_i * theta_i / sum_i w_i.
- TIES: delta_i = theta_i - theta_base, magnitude top-k per tensor (density, no rescale: mergekit's
  `ties`), then elementwise sign consensus (sign of the summed deltas) and the mean of the aligned
  non-zero deltas, added to the base.
- DARE-TIES: m ~ Bernoulli(rho), delta * m / rho, then the same consensus.
- DELLA: p = min(1, rho * |delta| / mean(|delta|)), m ~ Bernoulli(p), delta * m / p, then the same
  consensus. (This is §8's definition, not mergekit's rank-based `della`.)

All arithmetic in float32; the caller casts back to the base dtype. Random masks draw from a
`torch.Generator` seeded by `tensor_seed(...)`, a hash of (label, method, base, source, tensor key,
block), so a merge is reproducible bit for bit and independent of the order tensors are visited.
"""

from __future__ import annotations

import hashlib

import torch

METHODS = ('soup', 'linear', 'ties', 'dare_ties', 'della')
SPARSIFY = {'ties': 'magnitude', 'dare_ties': 'dare', 'della': 'della'}


def tensor_seed(label: str, method: str, base: str, source: str, key: str, block: int = 0) -> int:
    """A 63-bit seed from the merge label, method, base and source checkpoint names, tensor key and block."""
    h = hashlib.sha256('\x1f'.join([label, method, base, source, key, str(block)]).encode()).digest()
    return int.from_bytes(h[:8], 'little') & ((1 << 63) - 1)


def generator(seed: int) -> torch.Generator:
    g = torch.Generator(device='cpu')
    g.manual_seed(seed)
    return g


def linear(tensors: list[torch.Tensor], weights: list[float], normalize: bool = True) -> torch.Tensor:
    """Weighted average (uniform soup when all weights are equal)."""
    out = torch.zeros_like(tensors[0], dtype=torch.float32)
    for t, w in zip(tensors, weights, strict=True):
        out.add_(t.to(torch.float32), alpha=float(w))
    if normalize:
        s = float(sum(weights))
        if s != 0:
            out.div_(s)
    return out


def magnitude_mask(delta: torch.Tensor, density: float) -> torch.Tensor:
    """Keep the max(1, int(density * numel)) largest-magnitude entries, chosen exactly as mergekit's
    `magnitude` does (descending argsort of |delta|), so equal magnitudes break the same way."""
    if density >= 1:
        return delta
    if density <= 0 or delta.numel() == 0:
        return torch.zeros_like(delta)
    k = max(1, int(density * delta.numel()))
    mask = torch.zeros(delta.numel(), dtype=delta.dtype)
    idx = torch.argsort(delta.abs().reshape(-1).float(), descending=True)[:k]
    mask[idx] = 1
    return delta * mask.reshape_as(delta)


def magnitude_threshold(abs_delta: torch.Tensor, density: float) -> float:
    """The k-th largest |delta| (for tensors merged block by block: keep |delta| >= threshold)."""
    k = max(1, int(density * abs_delta.numel()))
    return float(torch.kthvalue(abs_delta.view(-1), abs_delta.numel() - k + 1).values)


def dare(delta: torch.Tensor, rho: float, gen: torch.Generator) -> torch.Tensor:
    """m ~ Bernoulli(rho); delta * m / rho."""
    if rho >= 1:
        return delta
    keep = torch.rand(delta.shape, generator=gen, dtype=torch.float32) < rho
    return torch.where(keep, delta / rho, torch.zeros((), dtype=delta.dtype))


def della(delta: torch.Tensor, rho: float, mean_abs: float, gen: torch.Generator) -> torch.Tensor:
    """p = min(1, rho * |delta| / mean(|delta|)); m ~ Bernoulli(p); delta * m / p.

    `mean_abs` is the mean |delta| over the WHOLE tensor (the caller computes it first when the tensor
    is merged block by block)."""
    if mean_abs <= 0 or not torch.isfinite(torch.tensor(mean_abs)):
        return torch.zeros_like(delta)
    p = torch.clamp(delta.abs() * (rho / mean_abs), max=1.0)
    u = torch.rand(delta.shape, generator=gen, dtype=torch.float32)
    keep = (u < p) & (p > 0)
    return torch.where(keep, delta / torch.where(p > 0, p, torch.ones((), dtype=p.dtype)), torch.zeros((), dtype=delta.dtype))


def sign_consensus_mean(deltas: list[torch.Tensor], weights: list[float] | None = None) -> torch.Tensor:
    """TIES merge of (already sparsified) deltas: majority sign = sign(sum_i w_i delta_i) (+ on an
    exact zero sum, as mergekit); result =
    sum of the aligned deltas / sum of their weights (the mean of aligned non-zero deltas with unit
    weights; a zero delta has sign 0 and never counts)."""
    if weights is None:
        weights = [1.0] * len(deltas)
    total = torch.zeros_like(deltas[0])
    for d, w in zip(deltas, weights, strict=True):
        total.add_(d, alpha=float(w))
    sign = torch.where(total >= 0, 1.0, -1.0).to(total.dtype)  # mergekit's rule: ties go to +
    mixed = torch.zeros_like(deltas[0])
    divisor = torch.zeros_like(deltas[0])
    for d, w in zip(deltas, weights, strict=True):
        aligned = (torch.sign(d) == sign).to(d.dtype)
        mixed.add_(d * aligned, alpha=float(w))
        divisor.add_(aligned, alpha=float(w))
    divisor[divisor.abs() < 1e-8] = 1
    return mixed / divisor
