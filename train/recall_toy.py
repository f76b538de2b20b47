#!/usr/bin/env python3
"""In-context recall toy for qa-demo's architecture: does name binding form at all?

The held-out failure of qa-demo (train/evaluate.py's name swap) is that the model answers with
a value of the asked kind without reading the question's name. This toy strips the task to its
core to find the smallest setting where the lookup is learned: rows of K short documents of one
kind that all state one attribute (data.make_drill), then K questions about them (drawn with
replacement), each followed by its answer (plain causal attention, loss on every token: answer
tokens weighted x3, the others --doc-weight).

    python train/recall_toy.py                          # K = 8 one-sentence documents, generated names
    python train/recall_toy.py --single-token-names     # each name one BPE token
    python train/recall_toy.py --single-token-names --adjacent   # documents "Title: Houl\\n Houl 689,000."
    python train/recall_toy.py --mqar --rows 64 --row-len 64     # control: random one-token keys and values
    python train/recall_toy.py --mqar --question '?\\nAnswer:' --rows 64 --row-len 64   # keys asked 3 tokens early

Reported every --every steps: the teacher-forced accuracy of the first answer token on 30 held-out
rows, counting only questions whose first answer token no other document of the row shares, so
a guess by relation alone scores about 1/K (printed as chance).

--mqar is a control on bare tokens: multi-query associative recall with no text around it. A row
is BOS, then K pairs "key value" (distinct one-token names as keys, one-token names from a disjoint
set as values), then K questions, each followed by --question's tokens and its value.

Questions follow one another in a row and are drawn with replacement: drawn without it (each key
once), a model can narrow later questions down to the keys not yet asked, a shortcut worth 0.34
over all questions at K = 8, on which a bare-token prototype stalled. Training rows are drawn
fresh every step, as in train.py (a fixed pool was memorized).
--attn-sup W (with --mqar) adds train.py's attention supervision: head 0 of the last layer, at each
asked key, is pulled towards that key's value among the pairs.
--json writes the settings and the recall curve.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--tokenizer', default=os.path.join(HERE, '..', 'public', 'models', 'qa-demo'))
    ap.add_argument('--docs', type=int, default=8, help='documents (keys) per row')
    ap.add_argument('--facts', type=int, default=1, help='fact sentences per document')
    ap.add_argument('--single-token-names', action='store_true', help='rename every entity to one BPE token')
    ap.add_argument('--adjacent', action='store_true', help='document body "<name> <value>." (needs one fact)')
    ap.add_argument('--mqar', action='store_true', help='control task on bare tokens (see above)')
    ap.add_argument('--question', default='',
                    help=r'--mqar: text between an asked key and its value (\n for a newline)')
    ap.add_argument('--keys', type=int, default=0, help='--mqar: draw keys and values from this many tokens each '
                    '(0: every one-token name, about 700 each)')
    ap.add_argument('--doc-weight', type=float, default=1.0,
                    help='loss weight of document and question tokens (answers and their <|eos|> weigh 3)')
    ap.add_argument('--attn-sup', type=float, default=0.0,
                    help='--mqar: weight of an attention supervision loss (train.py --attn-sup): head 0 of the '
                         'last layer, at each asked key, is trained to attend to that key\'s value in the pairs')
    ap.add_argument('--json', help='write the settings and the recall curve here')
    ap.add_argument('--stop-at', type=float, default=None, help='stop once held-out recall reaches this')
    ap.add_argument('--minutes', type=float, default=8.0)
    ap.add_argument('--rows', type=int, default=16, help='rows per step')
    ap.add_argument('--row-len', type=int, default=320)
    ap.add_argument('--every', type=int, default=500)
    ap.add_argument('--layers', type=int, default=3)
    ap.add_argument('--hidden', type=int, default=128)
    ap.add_argument('--heads', type=int, default=4)
    ap.add_argument('--kv-heads', type=int, default=4)
    ap.add_argument('--optimizer', choices=('muon', 'adamw'), default='muon')
    ap.add_argument('--lr', type=float, default=3e-3, help='AdamW (embedding and norms; everything with adamw)')
    ap.add_argument('--muon-lr', type=float, default=0.02)
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args(argv)
    if a.adjacent and a.facts != 1:
        ap.error('--adjacent writes one fact per document')
    if a.attn_sup and not a.mqar:
        ap.error('--attn-sup needs --mqar')
    return a


def rename(text: str, e, name: str) -> str:
    return text.replace(e.title, name).replace(e.name, name)


def make_rows(a, enc, bos: int, vocab_tokens):
    """A row maker: (document ids, [(question ids, answer ids)]) from one binding drill."""
    import data
    count = lambda t: len(enc(t))  # noqa: E731
    words = [t[1:] for t in vocab_tokens if t.startswith('Ġ') and len(t) >= 4 and t[1].isupper() and t[1:].isalpha()]
    single = [w for w in words if len(enc(' ' + w)) == 1 and len(enc(' ' + w + '?')) == 2
              and len(enc(' ' + w + '.')) == 2]
    if a.mqar:
        ids = [enc(' ' + w)[0] for w in single]
        keys, values = ids[::2][:a.keys or None], ids[1::2][:a.keys or None]
        asked = enc(a.question.replace(r'\n', '\n')) if a.question else []

        def mqar(rng: random.Random):
            ks, vs = rng.sample(keys, a.docs), [rng.choice(values) for _ in range(a.docs)]
            return [bos] + [t for kv in zip(ks, vs) for t in kv], [([k] + asked, [v]) for k, v in zip(ks, vs)]
        return mqar

    def row(rng: random.Random):
        s = data.make_drill(rng, a.docs, a.facts, count=count)
        names = rng.sample(single, len(s.entities)) if a.single_token_names else [e.name for e in s.entities]
        name = {id(e): nm for e, nm in zip(s.entities, names)}
        answer = {id(qa.support[0]): qa.answer for qa in s.qas}
        docs = ''.join(f'Title: {name[id(e)]}\n {name[id(e)]} {answer[id(e)]}.\n\n' if a.adjacent
                       else rename(d, e, name[id(e)]) for d, e in zip(s.docs, s.entities))
        qas = [(enc(rename(data.question_text(qa), qa.support[0], name[id(qa.support[0])])),
                enc(data.answer_text(qa))) for qa in s.qas]
        return [bos] + enc(docs), qas
    return row


def main(argv=None):
    a = parse_args(argv)
    import torch
    import torch.nn.functional as F
    from tokenizers import Tokenizer

    from model import ModelArgs, TinyLlama, target_nll
    from muon import Muon, for_muon
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    tok = Tokenizer.from_file(os.path.join(a.tokenizer, 'tokenizer.json'))
    enc = lambda t: tok.encode(t, add_special_tokens=False).ids  # noqa: E731
    bos, eos, pad = (tok.token_to_id(t) for t in ('<|bos|>', '<|eos|>', '<|pad|>'))
    row = make_rows(a, enc, bos, list(tok.get_vocab()))
    er = random.Random(99)
    held = [row(er) for _ in range(30)]
    print('30 held-out rows (training rows are drawn fresh every step); e.g.\n'
          + tok.decode(held[0][0] + held[0][1][0][0] + held[0][1][0][1]), flush=True)

    def batch(rng):
        ids = torch.full((a.rows, a.row_len), pad)
        lab = torch.full((a.rows, a.row_len), -100)
        w = torch.zeros(a.rows, a.row_len)
        # --attn-sup: each asked key's last question slot, and the slot of its value among the pairs
        slots = torch.zeros(a.rows, a.docs, dtype=torch.long)
        target = torch.zeros(a.rows, a.docs, a.row_len, dtype=torch.bool)
        for i in range(a.rows):
            d, qas = row(rng)
            qas = rng.choices(qas, k=len(qas))  # with replacement: no narrowing down to keys not yet asked
            seq, ws = list(d), [a.doc_weight] * (len(d) - 1)
            for n, (q, ans) in enumerate(qas):
                if len(seq) + len(q) + len(ans) + 1 > a.row_len:
                    break
                if a.mqar:
                    slots[i, n] = len(seq) + len(q) - 1
                    target[i, n, d.index(q[0]) + 1] = True
                seq += q + ans + [eos]
                ws += [a.doc_weight] * len(q) + [3.0] * (len(ans) + 1)
            n = len(seq)
            ids[i, :n] = torch.tensor(seq)
            lab[i, :n - 1] = torch.tensor(seq[1:])
            w[i, :n - 1] = torch.tensor(ws[:n - 1])
        allowed = torch.arange(a.row_len)[None, None] <= slots[..., None]
        return ids, lab, w, (slots, allowed, target)

    margs = ModelArgs(vocab_size=tok.get_vocab_size(), hidden_size=a.hidden, intermediate_size=a.hidden * 11 // 4,
                      num_hidden_layers=a.layers, num_attention_heads=a.heads, num_key_value_heads=a.kv_heads,
                      max_position_embeddings=a.row_len)
    model = TinyLlama(margs)
    on_muon = lambda n, p: a.optimizer == 'muon' and for_muon(n, p)  # noqa: E731
    opt = torch.optim.AdamW([p for n, p in model.named_parameters() if not on_muon(n, p)], lr=a.lr,
                            betas=(0.9, 0.95), weight_decay=0.0)
    mats = [p for n, p in model.named_parameters() if on_muon(n, p)]
    muon = Muon(mats, lr=a.muon_lr, weight_decay=0.0, ns_dtype=torch.bfloat16) if mats else None
    pos = torch.arange(a.row_len)[None].expand(a.rows, a.row_len)

    def loss_fn(ids, lab, w, sup):
        slots, allowed, target = sup
        with torch.autocast('cpu', dtype=torch.bfloat16):
            logits, seen = model(ids, pos, None, ([a.layers - 1] if a.attn_sup else [], slots, allowed))
        ce = F.cross_entropy(logits.float().flatten(0, 1), lab.flatten(), ignore_index=-100, reduction='none')
        loss = (ce * w.flatten()).sum() / w.sum()
        if seen:
            nll, n = target_nll(seen[0], target)
            loss = loss + a.attn_sup * nll / n.clamp(min=1)
        return loss

    step_fn = torch.compile(loss_fn)

    def recall():
        """One forward per held-out row: its scored questions side by side, each after the documents
        (right padding, so causal attention leaves every question's own positions as they were)."""
        model.eval()
        hit = n = 0
        with torch.no_grad():
            for d, qas in held:
                firsts = [ans[0] for _, ans in qas]
                scored = [(d + q, ans[0]) for q, ans in qas if firsts.count(ans[0]) == 1]
                if not scored:
                    continue
                width = max(len(seq) for seq, _ in scored)
                x = torch.full((len(scored), width), pad)
                for i, (seq, _) in enumerate(scored):
                    x[i, :len(seq)] = torch.tensor(seq)
                last = torch.tensor([len(seq) - 1 for seq, _ in scored])
                with torch.autocast('cpu', dtype=torch.bfloat16):
                    logits = model(x, torch.arange(width)[None].expand(len(scored), width), None)
                pred = logits[torch.arange(len(scored)), last].argmax(-1)
                hit += int((pred == torch.tensor([first for _, first in scored])).sum())
                n += len(scored)
        model.train()
        return hit / max(1, n)

    chance = sum(1 / len(qas) for _, qas in held) / len(held)
    print(f'model {model.num_params():,} parameters ({a.layers} layers, hidden {a.hidden}, heads {a.heads}/'
          f'{a.kv_heads}), {a.optimizer}, CPU threads {torch.get_num_threads()}; chance ~{chance:.3f}', flush=True)
    rng = random.Random(a.seed)
    step, ema, t0, curve = 0, None, time.time(), []
    while (time.time() - t0) / 60 < a.minutes and not (curve and a.stop_at and curve[-1]['recall'] >= a.stop_at):
        f = min(1.0, (step + 1) / 50)
        for o, peak in ((opt, a.lr), (muon, a.muon_lr)):
            for g in (o.param_groups if o else []):
                g['lr'] = peak * f
        loss = step_fn(*batch(rng))
        loss.backward()
        for o in (opt, muon):
            if o:
                o.step()
                o.zero_grad(set_to_none=True)
        ema = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
        step += 1
        if step % a.every == 0:
            curve.append(dict(step=step, minutes=round((time.time() - t0) / 60, 2), loss=round(ema, 4),
                              recall=round(recall(), 4)))
            print(f"{curve[-1]['minutes']:5.1f} min step {step:5d} loss {ema:.3f} recall {curve[-1]['recall']:.3f}",
                  flush=True)
    final = recall()
    print(f'final: step {step}, recall {final:.3f} (chance ~{chance:.3f})')
    if a.json:
        from machine import machine_name
        out = dict(command='python train/recall_toy.py ' + ' '.join(shlex.quote(x) for x in (argv or sys.argv[1:])),
                   machine=machine_name(), torch=torch.__version__, params=model.num_params(), steps=step,
                   minutes=round((time.time() - t0) / 60, 2), tokens_per_step=a.rows * a.row_len,
                   chance=round(chance, 4), recall=round(final, 4), curve=curve)
        with open(a.json, 'w') as f:
            json.dump(out, f, indent=1)


if __name__ == '__main__':
    main()
