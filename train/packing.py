"""Training rows for qa-demo: one sample of train/data.py per row, its documents first, then its
question/answer blocks.

A row of class (Ld, Lq) has Ld document slots and Lq question/answer slots:

    [BOS, documents..., pad...][Q1 A1 EOS, Q2 A2 EOS, ..., pad...]
     positions 0..d-1           each block at positions d, d+1, ... (right after the documents)

Every question/answer block attends to the documents and to itself only, so each block is
exactly one "BOS, documents, Question, Answer, EOS" sequence while the documents are computed
once. The documents attend causally among themselves (their padding comes after them, so a plain
causal attention is exact for every real document token). That split is what makes a step fast:
`RowLayout` (model.py) runs the documents through causal attention and only the question/answer
slots through a masked one. `check_layout` compares it with the same attention as one dense mask.

Each block also carries its attention targets (`support_slots`): the document slots of the answer's
value in its supporting fact and, for a two-hop question, of the bridge entity's name in the first
fact, for train.py's --attn-sup.

Document lengths are drawn in [Ld/2, Ld), so the four classes cover 128 to 2,047 document tokens
continuously, the held-out range (1,025-2,017) included.
"""
from __future__ import annotations

import random

# (document slots, question/answer slots) per row class
ROW_CLASSES = ((256, 128), (512, 192), (1024, 320), (2048, 512))


# The default warm-up share of training (with crowded rows on): short crowded one-hop rows only.
# The first answer token's training accuracy rises there within a few hundred steps, but the
# name-swap probe (train/evaluate.py) shows it is not name matching: even a run that is all
# warm-up for 15 minutes answers the same whichever name the question asks about.
WARMUP = 0.12


def class_weights(progress: float, crowd: float = 0.0, warmup: float = WARMUP):
    """Curriculum: short rows first, then mostly long ones (the eval contexts are 1K-2K)."""
    if crowd > 0 and progress < warmup:
        return (1.0, 0.0, 0.0, 0.0)
    if progress < 0.2:
        return (0.5, 0.5, 0.0, 0.0)
    if progress < 0.45:
        return (0.2, 0.35, 0.3, 0.15)
    return (0.1, 0.2, 0.3, 0.4)


def crowd_share(progress: float, peak: float, warmup: float = WARMUP) -> float:
    """Share of crowded rows (one kind fills the documents, so only matching the question's name
    finds the answer): all of them in the warm-up, then `peak`, never none."""
    return 1.0 if progress < warmup else peak


def two_hop_share(progress: float, crowd: float, warmup: float = WARMUP, share: float = 0.5) -> float:
    """Two-hop questions need the one-hop lookup first: none in the warm-up, then `share`."""
    return 0.0 if crowd > 0 and progress < warmup else share


def questions_per_row(Lq: int) -> int:
    """Questions drawn per row of Lq question/answer slots (as many as fit are used)."""
    return 2 + Lq // 16


def value_slots(e, attr: str, value: str, where: dict) -> list[int]:
    """The document slots of `value` in the sentence of `e`'s document that states `attr`."""
    sentence = getattr(e, 'sentences', {}).get(attr)
    if sentence is None or id(e) not in where:
        return []
    doc, start, offsets = where[id(e)]
    at = doc.find(sentence)
    after = 0 if attr == 'river' else sentence.lower().find(e.name.lower()) + len(e.name)
    i = sentence.find(value, max(0, after))
    if at < 0 or i < 0:
        return []
    lo, hi = at + i, at + i + len(value)
    return [start + j for j, (a, b) in enumerate(offsets) if a < hi and b > lo]


def support_slots(qa, where: dict):
    """(answer slots, bridge slots): where the answer's value stands in its supporting fact, and for
    a two-hop question where the bridge entity's name stands in the first fact ([] for one hop)."""
    from world import answer_of
    attrs = ['pet' if a == 'pet_name' else a for a in qa.qtype.split('.')[1:]]
    final = value_slots(qa.support[-1], attrs[-1], qa.answer, where)
    bridge = value_slots(qa.support[0], attrs[0], answer_of(qa.support[0], attrs[0]), where) if qa.hops == 2 else []
    return final, bridge


class Packer:
    """Builds rows of token ids, positions, labels, loss weights and token kinds."""

    def __init__(self, tok, bos: int, eos: int, pad: int, answer_weight: float, first_answer_weight: float,
                 qa_slots: float = 1.0, crowd: float = 0.0, notes: float = 0.0, warmup: float = WARMUP,
                 doc_weight: float = 1.0, two_hop: float = 0.5):
        self.tok, self.bos, self.eos, self.pad = tok, bos, eos, pad
        self.two_hop = two_hop  # share of two-hop questions where the documents allow one
        self.doc_weight = doc_weight  # loss weight of document and question tokens
        self.crowd, self.notes, self.warmup = crowd, notes, warmup
        self.answer_weight, self.first_answer_weight = answer_weight, first_answer_weight
        # question/answer slots per row class, scaled by qa_slots (more questions over the same documents)
        self.classes = [(Ld, max(64, round(Lq * qa_slots / 32) * 32)) for Ld, Lq in ROW_CLASSES]

    def enc(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False).ids

    def count(self, text: str) -> int:
        return len(self.enc(text))

    def sample_parts(self, rng: random.Random, doc_budget: int, n_q: int, crowd: str | None = None,
                     two_hop: float = 0.5):
        """One sample: document ids (BOS first), QA blocks (question ids, answer ids + EOS) and each
        block's support_slots."""
        import data
        from world import notes
        s = data.make_sample(rng, doc_budget, n_questions=n_q, count=self.count, crowd=crowd,
                             two_hop_share=two_hop)
        docs, where = [self.bos], {}
        for d, e in zip(s.docs, s.entities):
            enc = self.tok.encode(d, add_special_tokens=False)
            where[id(e)] = (d, len(docs), enc.offsets)
            docs += enc.ids
        blocks = [(self.enc(data.question_text(qa, s.instruction)), self.enc(data.answer_text(qa)) + [self.eos])
                  for qa in s.qas]
        support = [support_slots(qa, where) for qa in s.qas]
        cuts = [c for e in s.entities for c in notes(e).values()] if self.notes > 0 else []
        if cuts:
            # note blocks ("Note: Maren Tolvaski lives in" -> " Drunavik."): the same lookup as a
            # question, where the prefix to match is copied from the fact sentence itself
            cuts = rng.sample(cuts, min(len(cuts), len(blocks)))
            for i, (pre, val) in enumerate(cuts):
                if rng.random() < self.notes:
                    blocks[i] = (self.enc('Note: ' + pre), self.enc(val) + [self.eos])
                    support[i] = ([], [])
        return docs, blocks, support

    def row(self, rng: random.Random, Ld: int, Lq: int, progress: float = 1.0):
        """One row: ids, positions, labels, weights, kinds (0 doc, 1 question, 2 answer, -1 pad),
        QA block number per slot (0 for documents and padding), and the document length."""
        crowd = None
        if self.crowd > 0 and rng.random() < crowd_share(progress, self.crowd, self.warmup):
            from world import KINDS
            crowd = rng.choices(KINDS, weights=(0.4, 0.2, 0.2, 0.2))[0]
        for _ in range(8):
            docs, blocks, sup = self.sample_parts(rng, rng.randint(Ld // 2, Ld - 2), n_q=questions_per_row(Lq),
                                                  crowd=crowd, two_hop=two_hop_share(progress, self.crowd, self.warmup,
                                                                                       self.two_hop))
            if len(docs) <= Ld and blocks and len(blocks[0][0]) + len(blocks[0][1]) <= Lq:
                break
        else:
            raise RuntimeError(f'no sample fits a row of {Ld} + {Lq} tokens')
        d = len(docs)
        ids = docs + [self.pad] * (Ld - d)
        pos = list(range(d)) + [0] * (Ld - d)
        kind = [0] * d + [-1] * (Ld - d)
        block = [0] * Ld
        # next-token labels: documents predict the next document token; the last document token
        # predicts every block's first question token (it is each block's previous token), so its
        # label is taken from block 1 and the other blocks' first tokens get no loss there.
        labels = docs[1:] + [-100] * (Ld - d + 1)
        weights = [self.doc_weight] * (d - 1) + [0.0] * (Ld - d + 1)
        support = []  # per block: (slot of its last question token, answer slots, bridge slots)
        for j, (q, a) in enumerate(blocks):
            if len(ids) - Ld + len(q) + len(a) > Lq:
                break
            if sup[j][0]:
                support.append((len(ids) + len(q) - 1,) + sup[j])
            if j == 0:
                labels[d - 1], weights[d - 1] = q[0], self.doc_weight
            toks = q + a
            ids += toks
            pos += range(d, d + len(toks))
            kind += [1] * len(q) + [2] * len(a)
            block += [j + 1] * len(toks)
            for i in range(len(toks) - 1):
                labels.append(toks[i + 1])
                if i + 1 < len(q):
                    weights.append(self.doc_weight)
                elif i + 1 == len(q):  # the first answer token: the lookup
                    weights.append(self.first_answer_weight)
                else:
                    weights.append(self.answer_weight)
            labels.append(-100)
            weights.append(0.0)
        n = Ld + Lq - len(ids)
        ids += [self.pad] * n
        pos += [0] * n
        kind += [-1] * n
        block += [0] * n
        labels += [-100] * n
        weights += [0.0] * n
        return ids, pos, labels, weights, kind, block, d, support

    def batch(self, step_seed: str, progress: float, tokens_per_step: int, row_class: int | None = None):
        import torch
        from model import RowLayout
        rng = random.Random(step_seed)
        if row_class is None:
            row_class = rng.choices(range(len(ROW_CLASSES)), weights=class_weights(progress, self.crowd, self.warmup))[0]
        Ld, Lq = self.classes[row_class]
        B = max(1, round(tokens_per_step / (Ld + Lq)))
        rows = [self.row(rng, Ld, Lq, progress) for _ in range(B)]
        t = lambda i, dt=torch.long: torch.tensor([r[i] for r in rows], dtype=dt)  # noqa: E731
        ids, pos, labels, weights, kind, block = t(0), t(1), t(2), t(3, torch.float32), t(4), t(5)
        doc_len = torch.tensor([r[6] for r in rows])
        mask = RowLayout.build(Ld, doc_len, block[:, Ld:])
        # attention targets, padded to a fixed count per row class (one compiled graph per class)
        N = questions_per_row(Lq)
        slots = torch.full((B, N), Ld, dtype=torch.long)
        final = torch.zeros(B, N, Ld + Lq, dtype=torch.bool)
        bridge = torch.zeros(B, N, Ld + Lq, dtype=torch.bool)
        for i, r in enumerate(rows):
            for n, (slot, fin, bri) in enumerate(r[7][:N]):
                slots[i, n] = slot
                final[i, n, fin] = True
                bridge[i, n, bri] = True
        allowed = torch.gather(mask.qa_mask[:, 0], 1, (slots - Ld)[..., None].expand(-1, -1, Ld + Lq))
        return dict(ids=ids, pos=pos, labels=labels, weights=weights, kind=kind, block=block, L=Ld + Lq, Ld=Ld,
                    mask=mask, sup_slots=slots, sup_allowed=allowed, sup_final=final, sup_bridge=bridge)

    @staticmethod
    def dense_mask(b):
        """The same attention as b['mask'], as one dense (B, 1, L, L) boolean mask."""
        import torch
        L, Ld, block, kind = b['L'], b['Ld'], b['block'], b['kind']
        causal = torch.ones(L, L, dtype=torch.bool).tril()
        is_doc = torch.zeros_like(block, dtype=torch.bool)
        is_doc[:, :Ld] = True
        key_ok = (is_doc & (kind >= 0))[:, None, :] | (block[:, :, None] == block[:, None, :]) & (block[:, None, :] > 0)
        mask = causal & (key_ok | is_doc[:, :, None])  # documents: plain causal
        mask[:, :, 0] |= True  # padding rows attend somewhere (their outputs carry no loss)
        return mask[:, None]


def check_layout(model, b) -> float:
    """Largest |logit difference| between the row layout's attention and the dense mask on the
    real tokens of batch `b`: the packing's attention is what it claims to be."""
    import torch
    with torch.no_grad():
        packed = model(b['ids'], b['pos'], b['mask'])
        dense = model(b['ids'], b['pos'], Packer.dense_mask(b))
    real = b['kind'] >= 0
    return (packed[real] - dense[real]).abs().max().item()
