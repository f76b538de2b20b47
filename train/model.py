"""A minimal Llama (the same math and tensor names as transformers' LlamaForCausalLM)
for fast CPU training with packed, segment-masked sequences.

Why not train LlamaForCausalLM directly: training lets several question/answer blocks share
one document prefix, which needs its own attention layout (RowLayout) and per-token position
ids. `export.py` writes the weights under the Hugging Face
names and checks the logits against transformers' own LlamaForCausalLM.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    vocab_size: int = 4096
    hidden_size: int = 256
    intermediate_size: int = 768
    num_hidden_layers: int = 6
    num_attention_heads: int = 8
    num_key_value_heads: int = 2
    max_position_embeddings: int = 2048
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = True
    initializer_range: float = 0.02

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def to_dict(self) -> dict:
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rope_cos_sin(positions: torch.Tensor, head_dim: int, theta: float):
    """positions: (B, T) int → cos, sin of shape (B, 1, T, head_dim), transformers' 'default' RoPE."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    freqs = positions.float()[..., None] * inv_freq  # (B, T, d/2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos()[:, None], emb.sin()[:, None]


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self, a: ModelArgs):
        super().__init__()
        self.nh, self.nkv, self.hd = a.num_attention_heads, a.num_key_value_heads, a.head_dim
        self.q_proj = nn.Linear(a.hidden_size, self.nh * self.hd, bias=False)
        self.k_proj = nn.Linear(a.hidden_size, self.nkv * self.hd, bias=False)
        self.v_proj = nn.Linear(a.hidden_size, self.nkv * self.hd, bias=False)
        self.o_proj = nn.Linear(self.nh * self.hd, a.hidden_size, bias=False)

    def forward(self, x, cos, sin, mask, probe=None, seen=None):
        """probe: optional (slots (B, N), allowed (B, N, T)); then head 0's attention log-probabilities
        of those query slots over all T keys (B, N, T; -inf where not allowed) are appended to `seen`,
        from the same rotated queries and keys the attention uses."""
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        q = q * cos.to(q.dtype) + rotate_half(q) * sin.to(q.dtype)
        k = k * cos.to(k.dtype) + rotate_half(k) * sin.to(k.dtype)
        if probe is not None:
            slots, allowed = probe
            q0 = torch.gather(q[:, 0], 1, slots[..., None].expand(-1, -1, self.hd))  # head 0 at the slots
            scores = torch.einsum('bnd,btd->bnt', q0.float(), k[:, 0].float()) / math.sqrt(self.hd)
            seen.append(scores.masked_fill(~allowed, float('-inf')).log_softmax(-1))
        if isinstance(mask, RowLayout):
            y = mask.attend(q, k, v)
        elif mask is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, self.nh * self.hd))


class RowLayout:
    """Rows of `Ld` document slots (causal among themselves, padding after the documents)
    followed by question/answer slots: each QA block attends to its row's real documents and
    causally to itself (`qa_mask`, (B, 1, Lq, Ld + Lq), True where allowed). The documents take
    the fast causal path and only the QA slots a masked one; packing.check_layout compares this
    with the same attention as one dense mask."""

    def __init__(self, Ld: int, qa_mask: torch.Tensor):
        self.Ld, self.qa_mask = Ld, qa_mask
        self._additive: dict = {}

    @staticmethod
    def build(Ld: int, doc_len: torch.Tensor, qa_block: torch.Tensor) -> 'RowLayout':
        """doc_len: (B,) real document tokens per row; qa_block: (B, Lq) block number per QA slot
        (0 for padding, whose queries then see the documents only)."""
        B, Lq = qa_block.shape
        docs = torch.arange(Ld)[None, None, :] < doc_len[:, None, None]  # (B, 1, Ld)
        same = (qa_block[:, :, None] == qa_block[:, None, :]) & torch.ones(Lq, Lq, dtype=torch.bool).tril()
        mask = torch.cat([docs.expand(B, Lq, Ld), same & (qa_block[:, None, :] > 0)], dim=2)
        return RowLayout(Ld, mask[:, None])

    def additive(self, dtype):
        """The QA mask as 0 / -inf in `dtype` (the faster form for scaled_dot_product_attention)."""
        if dtype not in self._additive:
            self._additive[dtype] = torch.zeros(self.qa_mask.shape, dtype=dtype).masked_fill(~self.qa_mask,
                                                                                             float('-inf'))
        return self._additive[dtype]

    def attend(self, q, k, v):
        Ld = self.Ld
        qd, qq = q.split([Ld, q.shape[2] - Ld], dim=2)
        yd = F.scaled_dot_product_attention(qd, k[:, :, :Ld], v[:, :, :Ld], is_causal=True, enable_gqa=True)
        yq = F.scaled_dot_product_attention(qq, k, v, attn_mask=self.additive(q.dtype), enable_gqa=True)
        return torch.cat([yd, yq], dim=2)


class MLP(nn.Module):
    def __init__(self, a: ModelArgs):
        super().__init__()
        self.gate_proj = nn.Linear(a.hidden_size, a.intermediate_size, bias=False)
        self.up_proj = nn.Linear(a.hidden_size, a.intermediate_size, bias=False)
        self.down_proj = nn.Linear(a.intermediate_size, a.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, a: ModelArgs):
        super().__init__()
        self.input_layernorm = RMSNorm(a.hidden_size, a.rms_norm_eps)
        self.self_attn = Attention(a)
        self.post_attention_layernorm = RMSNorm(a.hidden_size, a.rms_norm_eps)
        self.mlp = MLP(a)

    def forward(self, x, cos, sin, mask, probe=None, seen=None):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, probe, seen)
        return x + self.mlp(self.post_attention_layernorm(x))


class Inner(nn.Module):
    def __init__(self, a: ModelArgs):
        super().__init__()
        self.embed_tokens = nn.Embedding(a.vocab_size, a.hidden_size)
        self.layers = nn.ModuleList(Block(a) for _ in range(a.num_hidden_layers))
        self.norm = RMSNorm(a.hidden_size, a.rms_norm_eps)


class TinyLlama(nn.Module):
    def __init__(self, a: ModelArgs):
        super().__init__()
        self.args = a
        self.model = Inner(a)
        self.lm_head = nn.Linear(a.hidden_size, a.vocab_size, bias=False)
        if a.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        self.apply(self._init)
        # GPT-2 style scaled init of the residual output projections.
        for n, p in self.named_parameters():
            if n.endswith('o_proj.weight') or n.endswith('down_proj.weight'):
                nn.init.normal_(p, 0.0, a.initializer_range / math.sqrt(2 * a.num_hidden_layers))

    def _init(self, m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, self.args.initializer_range)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())  # tied weights counted once

    def forward(self, ids: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor | None, probe=None):
        """ids, positions: (B, T); mask: bool (B, 1, T, T), True where attention is allowed, a
        RowLayout, or None for plain causal attention (then positions should be 0..T-1).
        probe: optional (layers, slots (B, N), allowed (B, N, T)); then also returns head 0's attention
        log-probabilities of those query slots (B, N, T), one tensor per entry of `layers`, in its order."""
        cos, sin = rope_cos_sin(positions, self.args.head_dim, self.args.rope_theta)
        x = self.model.embed_tokens(ids)
        layers, slots, allowed = probe if probe is not None else ((), None, None)
        seen = {}
        for i, layer in enumerate(self.model.layers):
            out = [] if i in layers else None
            x = layer(x, cos, sin, mask, (slots, allowed) if out is not None else None, out)
            if out:
                seen[i] = out[0]
        logits = self.lm_head(self.model.norm(x))
        return (logits, [seen[i] for i in layers]) if probe is not None else logits


def target_nll(logprobs: torch.Tensor, target: torch.Tensor):
    """Attention supervision: the summed -log attention mass that `logprobs` (B, N, T) puts on the
    `target` keys (bool, B, N, T), over the queries that have a target, and how many those are."""
    has = target.any(-1)
    mass = torch.logsumexp(logprobs.masked_fill(~target, float('-inf')), -1)
    return -torch.where(has, mass, torch.zeros_like(mass)).sum(), has.sum()
