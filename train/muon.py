"""Muon: momentum SGD whose update for a weight matrix is replaced by the nearest semi-orthogonal
matrix (all singular values ~1), computed with a few Newton-Schulz iterations. Used for the
hidden matrices of the transformer blocks (attention and MLP projections); the embedding (tied
to the LM head) and the norm weights stay on AdamW, as Muon's authors recommend.

Why here: an orthogonalized update moves every direction of a matrix at the same rate, so rare
directions (the ones a content lookup needs) are not drowned out by the common ones. Measured in
20-minute runs of the same recipe: first-answer-token accuracy on long rows 0.20 against AdamW's
0.14, dev F1 0.18 against 0.11.
"""
from __future__ import annotations

import torch

# Coefficients of the quintic iteration x -> a x + b x^3 + c x^5 (on singular values), chosen to
# push every singular value in (0, 1] quickly towards ~1 rather than converge exactly.
NS_COEFFS = (3.4445, -4.7750, 2.0315)


def orthogonalize(g: torch.Tensor, steps: int = 5, dtype=torch.float32) -> torch.Tensor:
    """Approximately U V^T for each matrix g = U S V^T of g (..., m, n), iterated in `dtype`
    (bfloat16 is enough: the iteration only has to land singular values near 1)."""
    a, b, c = NS_COEFFS
    x = g.to(dtype)
    tall = x.shape[-2] > x.shape[-1]
    if tall:
        x = x.mT
    x = x / (x.norm(dim=(-2, -1), keepdim=True) + 1e-7)  # singular values now at most 1
    for _ in range(steps):
        gram = x @ x.mT
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.mT if tall else x


class Muon(torch.optim.Optimizer):
    """param groups: lr, momentum (Nesterov), weight_decay (decoupled, scaled by lr); `ns_dtype`: the
    Newton-Schulz iteration's precision. Matrices of one shape are orthogonalized together."""

    def __init__(self, params, lr: float = 0.02, momentum: float = 0.95, weight_decay: float = 0.0,
                 ns_dtype=torch.float32):
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay))
        self.ns_dtype = ns_dtype

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr, mu, wd = group['lr'], group['momentum'], group['weight_decay']
            by_shape: dict[tuple, list] = {}
            for p in group['params']:
                if p.grad is None:
                    continue
                buf = self.state[p].setdefault('momentum', torch.zeros_like(p))
                buf.mul_(mu).add_(p.grad)
                by_shape.setdefault(tuple(p.shape), []).append((p, p.grad + mu * buf))
            for (rows, cols), items in by_shape.items():
                updates = orthogonalize(torch.stack([g for _, g in items]), dtype=self.ns_dtype)
                # keep the update's RMS similar for wide and tall matrices
                scale = max(1.0, rows / cols) ** 0.5
                for (p, _), u in zip(items, updates):
                    if wd:
                        p.mul_(1 - lr * wd)
                    p.add_(u.to(p.dtype), alpha=-lr * scale)


def for_muon(name: str, p: torch.Tensor) -> bool:
    """The parameters Muon takes: the transformer blocks' weight matrices (not the embedding,
    which the LM head shares, nor the norm weights)."""
    return p.dim() == 2 and '.layers.' in name
