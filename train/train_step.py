"""One training step's parts, shared by train.py and bench_step.py: the model and the row packer that
train.py's options describe, the optimizers (Muon for the blocks' weight matrices, AdamW for the rest),
the loss graph that torch.compile compiles (weighted next-token loss plus the attention supervision)
and the update after the backward pass."""
from __future__ import annotations


def resolve_bf16(a) -> None:
    """--bf16 auto -> 1 where the CPU has AMX-BF16 or AVX512-BF16, else 0; a.bf16 becomes an int."""
    from machine import cpu_has
    if a.bf16 == 'auto':
        a.bf16 = '1' if cpu_has('amx_bf16') or cpu_has('avx512_bf16') else '0'
    a.bf16 = int(a.bf16)


def model(a):
    """A freshly initialized TinyLlama of the options' shape (seed torch first for a repeatable init)."""
    from model import ModelArgs, TinyLlama
    return TinyLlama(ModelArgs(vocab_size=a.vocab, hidden_size=a.hidden, intermediate_size=a.intermediate,
                               num_hidden_layers=a.layers, num_attention_heads=a.heads,
                               num_key_value_heads=a.kv_heads, max_position_embeddings=a.max_len,
                               rope_theta=a.rope_theta))


def special_ids(tok) -> dict:
    """The tokenizer's bos, eos and pad ids (the export's tokenizer config takes the same dict)."""
    return {k: tok.token_to_id(f'<|{k}|>') for k in ('bos', 'eos', 'pad')}


def packer(tok, a):
    """The training rows' packer for the options `a`."""
    from packing import Packer
    ids = special_ids(tok)
    return Packer(tok, ids['bos'], ids['eos'], ids['pad'], a.answer_weight, a.first_answer_weight, a.qa_slots,
                  a.crowd, a.notes, a.crowd_warmup, doc_weight=a.doc_weight, two_hop=a.two_hop)


def optimizers(model, a):
    """(AdamW, Muon or None, [(optimizer, peak LR)]) for train.py's options `a`."""
    import torch

    from muon import Muon, for_muon
    use_muon = lambda n, p: a.optimizer == 'muon' and for_muon(n, p)  # noqa: E731
    matrices = [p for n, p in model.named_parameters() if use_muon(n, p)]
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and not use_muon(n, p)]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{'params': decay, 'weight_decay': a.weight_decay},
                             {'params': no_decay, 'weight_decay': 0.0}], lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    # the same decay per step as AdamW's (lr x weight_decay), whatever Muon's learning rate
    muon = Muon(matrices, lr=a.muon_lr, weight_decay=a.weight_decay * a.lr / a.muon_lr,
                ns_dtype=torch.bfloat16 if a.bf16 else torch.float32) if matrices else None
    return opt, muon, [(opt, a.lr)] + ([(muon, a.muon_lr)] if muon else [])


def loss_fn(model, a):
    """The step's loss as one function of a packed batch (packing.Packer.batch), for torch.compile:
    forward_loss(ids, pos, Ld, qa_mask, labels, weights, sup=None) -> (loss, per-token cross-entropy,
    argmax, attention-supervision NLL). sup: (slots, allowed, answer targets, bridge targets) for
    --attn-sup; the loss then adds --attn-sup times the mean -log attention mass on the targets."""
    import torch
    import torch.nn.functional as F

    from model import RowLayout, target_nll
    sup_layers = [int(x) % a.layers for x in a.attn_sup_layers.split(',')]

    def forward_loss(ids, pos, Ld, qa_mask, labels, weights, sup=None):
        probe = (sup_layers, sup[0], sup[1]) if sup is not None else None
        with torch.autocast('cpu', dtype=torch.bfloat16, enabled=bool(a.bf16)):
            out = model(ids, pos, RowLayout(Ld, qa_mask), probe)
        logits, seen = out if sup is not None else (out, [])
        logits = logits.float().view(-1, a.vocab)
        ce = F.cross_entropy(logits, labels.view(-1), ignore_index=-100, reduction='none')
        w = weights.view(-1)
        loss = (ce * w).sum() / w.sum()
        sup_nll = torch.zeros(())
        if seen:
            parts = [target_nll(lp, target) for lp, target in zip(seen, sup[2:])]
            sup_nll = sum(nll for nll, _ in parts) / sum(n for _, n in parts).clamp(min=1)
            loss = loss + a.attn_sup * sup_nll
        return loss, ce.detach(), logits.detach().argmax(-1), sup_nll.detach()

    return forward_loss


def update(model, peaks) -> None:
    """After the backward pass: clip the gradient norm to 1 and step every optimizer."""
    import torch
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    for o, _ in peaks:
        o.step()


def sup_of(b, a):
    """A batch's attention targets as forward_loss takes them (None with --attn-sup 0)."""
    return (b['sup_slots'], b['sup_allowed'], b['sup_final'], b['sup_bridge']) if a.attn_sup > 0 else None
