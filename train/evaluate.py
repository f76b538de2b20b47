#!/usr/bin/env python3
"""Held-out F1 of the qa-demo model with transformers' greedy generation.

    python train/evaluate.py [--model public/models/qa-demo] [--data train/eval/qa-demo-eval.jsonl]
                             [--layout concat,linked] [--n 200] [--out train/eval/results.json]

Layouts (both are Full Recompute: every token attends to every earlier token):
  concat  BOS + the chunks joined into one text + the question: the whole context as one
          sequence, exactly the training layout.
  linked  each chunk tokenized on its own with its own BOS, as LegoKV's KVCompile stores it,
          then the question; this is what the engine's `full` algorithm computes over the
          linked chunks (a BOS at every chunk start).

Scores: LongBench-style F1 (lower-case, punctuation and articles removed, token overlap,
best over the gold answers) and exact match after the same normalization.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import string
import sys
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..'))
DEFAULT_MODEL = os.path.join(ROOT, 'public', 'models', 'qa-demo')
DEFAULT_DATA = os.path.join(HERE, 'eval', 'qa-demo-eval.jsonl')


def normalize(s: str) -> str:
    s = s.lower()
    s = ''.join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r'\b(a|an|the)\b', ' ', s)
    return ' '.join(s.split())


def f1_score(pred: str, gold: str) -> float:
    p, g = normalize(pred).split(), normalize(gold).split()
    common = Counter(p) & Counter(g)
    same = sum(common.values())
    if same == 0:
        return 0.0
    prec, rec = same / len(p), same / len(g)
    return 2 * prec * rec / (prec + rec)


def best_f1(pred: str, golds: list[str]) -> float:
    return max(f1_score(pred, g) for g in golds)


def exact(pred: str, golds: list[str]) -> float:
    return float(any(normalize(pred) == normalize(g) for g in golds))


def load_cases(path: str, n: int | None = None) -> list[dict]:
    with open(path) as f:
        cases = [json.loads(line) for line in f if line.strip()]
    return cases[:n] if n else cases


def question_tail(case: dict) -> str:
    """The text after the documents: an instruction line (when the case has one), then the question."""
    instr = case.get('instruction') or ''
    return (instr + '\n' if instr else '') + case['question']


def concat_text(case: dict) -> str:
    """The whole prompt as one text (the `concat` layout, without BOS)."""
    return ''.join(case['chunks']) + question_tail(case)


def prompt_ids(case: dict, encode, bos: int, layout: str) -> list[int]:
    """Token ids of the prompt; `encode` tokenizes text without special tokens."""
    tail = question_tail(case)
    if layout == 'concat':
        return [bos] + encode(concat_text(case))
    if layout == 'linked':
        # The evaluation runner's prompt (src/eval/prompt.ts): an empty instruction puts the question verbatim.
        ids: list[int] = []
        for ch in case['chunks']:
            ids += [bos] + encode(ch)
        return ids + encode(tail)
    raise ValueError(f'unknown layout {layout}')


def generate_answers(model, cases, encode, decode, bos: int, eos: int, layout: str, max_new_tokens: int = 32):
    """Greedy answers (transformers' generate, KV cache, do_sample=False)."""
    import torch
    out = []
    with torch.no_grad():
        for c in cases:
            ids = prompt_ids(c, encode, bos, layout)
            x = torch.tensor([ids])
            y = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=max_new_tokens,
                               do_sample=False, eos_token_id=eos, pad_token_id=eos)
            out.append((decode(y[0, len(ids):].tolist()).strip(), len(ids)))
    return out


def score(cases, preds) -> dict:
    rows = []
    for c, (p, n) in zip(cases, preds):
        rows.append({'id': c['id'], 'hops': c.get('hops'), 'qtype': c.get('qtype'), 'tokens': n,
                     'pred': p, 'answers': c['answers'], 'f1': best_f1(p, c['answers']),
                     'em': exact(p, c['answers'])})
    mean = lambda xs: sum(xs) / len(xs) if xs else float('nan')  # noqa: E731
    summary = {'n': len(rows), 'f1': mean([r['f1'] for r in rows]), 'em': mean([r['em'] for r in rows])}
    for h in (1, 2):
        sel = [r for r in rows if r['hops'] == h]
        if sel:
            summary[f'f1_{h}hop'] = mean([r['f1'] for r in sel])
            summary[f'n_{h}hop'] = len(sel)
    return {'summary': summary, 'cases': rows}


LENGTH_BANDS = ((150, 300), (300, 600), (600, 1000), (1024, 2048))


def length_sweep(model, encode, decode, bos: int, eos: int, n: int) -> list[dict]:
    """F1 against context length: n fresh cases (seed 999000 + the band's low end, never used in
    training) per band of document tokens, whole context as one sequence. It tells whether a
    shortfall is in reading at all or in reading far."""
    import data
    count = lambda t: len(encode(t))  # noqa: E731
    rows = []
    for lo, hi in LENGTH_BANDS:
        cases = data.make_eval_cases(999_000 + lo, n, count, lo=lo, hi=hi)
        s = score(cases, generate_answers(model, cases, encode, decode, bos, eos, 'concat'))['summary']
        rows.append({'lo': lo, 'hi': hi, **s})
        print(f"{lo}-{hi} tokens: n={s['n']} F1={s['f1']:.3f} 1-hop {s.get('f1_1hop', float('nan')):.3f} "
              f"2-hop {s.get('f1_2hop', float('nan')):.3f}", flush=True)
    return rows


MATCH_BANDS = (150, 300, 600, 1200)


def matching_sweep(model, encode, bos: int, n: int) -> list[dict]:
    """Does the model find an answer by its name? n crowded one-hop cases per document budget
    (seed 998000 + budget, never trained on): one kind of entity fills the documents, so every
    document states the asked relation and only the name in the question tells them apart.
    Scored by the first answer token, greedy; chance is one over the documents of that kind."""
    import random

    import torch

    import data
    from world import KINDS
    count = lambda t: len(encode(t))  # noqa: E731
    rows = []
    for budget in MATCH_BANDS:
        rng = random.Random(998_000 + budget)
        hit, chance, toks, m = 0, 0.0, 0, 0
        while m < n:
            kind = rng.choice(KINDS)
            s = data.make_sample(rng, budget, n_questions=1, count=count, crowd=kind, two_hop_share=0.0)
            if not s.qas:
                continue
            qa = s.qas[0]
            ids = [bos] + encode(''.join(s.docs) + data.question_text(qa))
            with torch.no_grad():
                nxt = int(model(torch.tensor([ids])).logits[0, -1].argmax())
            hit += nxt == encode(data.answer_text(qa))[0]
            chance += 1 / s.kinds.count(kind)
            toks += len(ids)
            m += 1
        rows.append({'budget': budget, 'n': n, 'tokens': round(toks / n), 'acc': hit / n, 'chance': chance / n})
        print(f"crowded, ~{rows[-1]['tokens']} tokens: first answer token {hit / n:.3f} (chance {chance / n:.3f})",
              flush=True)
    return rows


def name_swap(model, encode, bos: int, n: int) -> dict:
    """Does the question's name steer the answer at all? n crowded one-hop cases with exactly two
    documents of the asked kind (~170 tokens, seed 997000, never trained on) whose two entities
    have different values for the asked relation (different first answer tokens). The question
    is asked once with each entity's name. A model that reads the name answers both right; one
    that ignores it gives the same first token twice, so at most one of the two is right."""
    import dataclasses
    import random

    import torch

    import data
    from world import KINDS, notes
    count = lambda t: len(encode(t))  # noqa: E731

    def first(ids):
        with torch.no_grad():
            return int(model(torch.tensor([ids])).logits[0, -1].argmax())

    rng = random.Random(997_000)
    m = changed = both = 0
    while m < n:
        kind = rng.choice(KINDS)
        s = data.make_sample(rng, 170, n_questions=1, count=count, crowd=kind, two_hop_share=0.0)
        if not s.qas or s.kinds.count(kind) != 2:
            continue
        qa, e = s.qas[0], s.qas[0].support[0]
        other = next(x for x in s.entities if x.kind == kind and x is not e)
        # the asked fact as the generator cut it (world.notes), then the same fact of the other entity
        attr = next((k for k, (_, v) in notes(e).items() if v.startswith(' ' + qa.answer)), None)
        v2 = notes(other).get(attr)
        if attr is None or v2 is None:
            continue
        gold = (encode(' ' + qa.answer)[0], encode(v2[1])[0])
        if gold[0] == gold[1]:
            continue
        docs = [bos] + encode(''.join(s.docs))
        q2 = dataclasses.replace(qa, question=qa.question.replace(e.name, other.name))
        pred = (first(docs + encode(data.question_text(qa))), first(docs + encode(data.question_text(q2))))
        changed += pred[0] != pred[1]
        both += pred == gold
        m += 1
    res = {'n': n, 'changed': changed / n, 'both_right': both / n}
    print(f"name swap: prediction changes with the name {res['changed']:.3f}, both right {res['both_right']:.3f}",
          flush=True)
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--model', default=DEFAULT_MODEL)
    ap.add_argument('--data', default=DEFAULT_DATA)
    ap.add_argument('--layout', default='concat,linked')
    ap.add_argument('--n', type=int, default=0, help='first N cases only (0: all)')
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--length-sweep', type=int, default=60,
                    help='also score N generated cases per context-length band (concat layout; 0: skip)')
    ap.add_argument('--matching-sweep', type=int, default=60,
                    help='also score N crowded one-hop cases per document budget, where only the name finds the '
                         'answer (first answer token against chance; 0: skip)')
    ap.add_argument('--name-swap', type=int, default=60,
                    help='also ask N two-document questions once with each document\'s name (0: skip)')
    ap.add_argument('--out', default=os.path.join(HERE, 'eval', 'results.json'))
    args = ap.parse_args(argv)

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.set_num_threads(args.threads)
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    encode = lambda t: tok(t, add_special_tokens=False)['input_ids']  # noqa: E731
    decode = lambda ids: tok.decode(ids, skip_special_tokens=True)  # noqa: E731
    cases = load_cases(args.data, args.n or None)
    report = {'model': os.path.relpath(args.model, ROOT), 'data': os.path.relpath(args.data, ROOT),
              'decoding': 'greedy, max_new_tokens=32, transformers ' + __import__('transformers').__version__,
              'layouts': {}}
    for layout in args.layout.split(','):
        t0 = time.time()
        preds = generate_answers(model, cases, encode, decode, tok.bos_token_id, tok.eos_token_id, layout)
        res = score(cases, preds)
        res['summary']['seconds'] = round(time.time() - t0, 1)
        report['layouts'][layout] = res
        s = res['summary']
        print(f"{layout:7s} n={s['n']} F1={s['f1']:.3f} EM={s['em']:.3f} "
              f"1-hop F1={s.get('f1_1hop', float('nan')):.3f} 2-hop F1={s.get('f1_2hop', float('nan')):.3f} "
              f"({s['seconds']:.0f} s)", flush=True)
    if args.length_sweep:
        report['by_length'] = length_sweep(model, encode, decode, tok.bos_token_id, tok.eos_token_id,
                                           args.length_sweep)
    if args.matching_sweep:
        report['matching'] = matching_sweep(model, encode, tok.bos_token_id, args.matching_sweep)
    if args.name_swap:
        report['name_swap'] = name_swap(model, encode, tok.bos_token_id, args.name_swap)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, 'w') as f:
            json.dump(report, f, indent=1)
            f.write('\n')
    return report


if __name__ == '__main__':
    sys.exit(main() and 0)
