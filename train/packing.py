"""Training rows for qa-demo: samples from train/data.py packed into rows of 256 to 2048 tokens.

A row holds several samples back to back, each with position ids restarting at 0. A sample is
its documents (BOS first) followed by several question/answer blocks that share them: every
block attends to the documents and to itself only and sits at the positions right after the
documents, so each block is exactly one "BOS, documents, Question, Answer, EOS" sequence while
the documents are computed once. `Packer.batch` gives the model a `Segments` layout (model.py)
for that attention; `check_segments` compares it with the same attention as a dense mask.

A sample's QA blocks count inside its row length, so a 2K row's longest documents are ~1,380
tokens and no answer is trained past position ~1,405, short of the eval's 1-2K-token contexts.
Tried: rows of 2L tokens whose documents span up to L positions (answers up to 2,013): in the
same hour, held-out F1 0.191 against 0.265 (fewer steps, weaker at every length), so not kept.
"""
from __future__ import annotations

import random

ROW_LENS = (256, 512, 1024, 2048)


def row_len_weights(progress: float):
    """Curriculum: short rows first, then mostly long ones (the eval contexts are 1K-2K)."""
    if progress < 0.25:
        return (0.5, 0.5, 0.0, 0.0)
    if progress < 0.5:
        return (0.2, 0.4, 0.3, 0.1)
    return (0.1, 0.2, 0.3, 0.4)


class Packer:
    """Builds rows of token ids, sample ids, segment ids, positions, labels and loss weights."""

    def __init__(self, tok, bos: int, eos: int, pad: int, answer_weight: float, first_answer_weight: float):
        self.tok, self.bos, self.eos, self.pad = tok, bos, eos, pad
        self.answer_weight, self.first_answer_weight = answer_weight, first_answer_weight

    def enc(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False).ids

    def count(self, text: str) -> int:
        return len(self.enc(text))

    def sample_parts(self, rng: random.Random, total: int):
        """One sample of about `total` tokens: document ids and QA blocks (question ids, answer ids)."""
        import data
        n_q = 1 + total // 70
        doc_budget = max(60, total - 1 - 22 * n_q)
        s = data.make_sample(rng, doc_budget, n_questions=n_q, count=self.count)
        docs = [self.bos]
        for d in s.docs:
            docs += self.enc(d)
        blocks = [(self.enc(data.question_text(qa, s.instruction)), self.enc(data.answer_text(qa)) + [self.eos])
                  for qa in s.qas]
        return docs, blocks

    def row(self, rng: random.Random, L: int):
        ids, smp, seg, pos, kind = [], [], [], [], []  # kind: 0 doc, 1 question, 2 answer
        layout = []  # (start, n_docs, end) per sample
        k = 0
        while L - len(ids) >= 120:
            room = L - len(ids)
            total = rng.randint(max(120, room // 2), room) if k == 0 else rng.randint(120, room)
            for _ in range(4):
                docs, blocks = self.sample_parts(rng, total)
                if blocks and len(docs) + len(blocks[0][0]) + len(blocks[0][1]) <= room:
                    break
                total = int(total * 0.8)
            else:
                break
            start = len(ids)
            ids += docs
            smp += [k] * len(docs)
            seg += [0] * len(docs)
            pos += list(range(len(docs)))
            kind += [0] * len(docs)
            for j, (q, a) in enumerate(blocks):
                if len(ids) + len(q) + len(a) > L:
                    break
                ids += q + a
                smp += [k] * (len(q) + len(a))
                seg += [j + 1] * (len(q) + len(a))
                pos += list(range(len(docs), len(docs) + len(q) + len(a)))
                kind += [1] * len(q) + [2] * len(a)
            layout.append((start, len(docs), len(ids)))
            k += 1
        n = L - len(ids)
        ids += [self.pad] * n
        smp += [-1] * n
        seg += [0] * n
        pos += [0] * n
        kind += [-1] * n
        # labels: next token of the same sample that continues this token's text
        labels, weights = [-100] * L, [0.0] * L
        for i in range(L - 1):
            if smp[i] < 0 or smp[i + 1] != smp[i]:
                continue
            if seg[i + 1] == seg[i] or (seg[i] == 0 and seg[i + 1] == 1):
                labels[i] = ids[i + 1]
                if kind[i + 1] != 2:
                    weights[i] = 1.0
                else:  # the first answer token is the lookup; the rest mostly copy the name it starts
                    weights[i] = self.first_answer_weight if kind[i] == 1 else self.answer_weight
        return ids, smp, seg, pos, labels, weights, kind, layout

    def batch(self, step_seed: str, progress: float, tokens_per_step: int):
        import torch
        from model import Segments
        rng = random.Random(step_seed)
        L = rng.choices(ROW_LENS, weights=row_len_weights(progress))[0]
        B = max(1, tokens_per_step // L)
        rows = [self.row(rng, L) for _ in range(B)]
        t = lambda i, dt=torch.long: torch.tensor([r[i] for r in rows], dtype=dt)  # noqa: E731
        ids, smp, seg, pos, labels = t(0), t(1), t(2), t(3), t(4)
        weights, kind = t(5, torch.float32), t(6)
        seg_rows = []
        for r in rows:
            samples = []
            for start, d, end in r[7]:
                s = torch.tensor(r[2][start + d:end])  # QA block ids of this sample's QA tokens
                qa = torch.cat([torch.ones(len(s), d, dtype=torch.bool),
                                (s[:, None] == s[None, :]) & torch.ones(len(s), len(s), dtype=torch.bool).tril()],
                               dim=1) if len(s) else None
                samples.append((start, d, end, qa))
            seg_rows.append(samples)
        return dict(ids=ids, pos=pos, mask=Segments(seg_rows, L), labels=labels, weights=weights, kind=kind, L=L,
                    smp=smp, seg=seg)

    @staticmethod
    def dense_mask(b):
        """The same attention as b['mask'], as a dense (B, 1, L, L) boolean mask (check_segments compares the two)."""
        import torch
        smp, seg, L = b['smp'], b['seg'], b['L']
        causal = torch.ones(L, L, dtype=torch.bool).tril()
        mask = (smp[:, :, None] == smp[:, None, :]) & causal
        mask &= (seg[:, None, :] == 0) | (seg[:, :, None] == seg[:, None, :])
        return mask[:, None]


def check_segments(model, b) -> float:
    """Largest |logit difference| between the packed `Segments` attention and the dense mask on
    the tokens of batch `b` (padding excluded): the packing's attention is what it claims to be."""
    import torch
    with torch.no_grad():
        packed = model(b['ids'], b['pos'], b['mask'])
        dense = model(b['ids'], b['pos'], Packer.dense_mask(b))
    real = b['kind'] >= 0
    return (packed[real] - dense[real]).abs().max().item()
