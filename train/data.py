#!/usr/bin/env python3
"""Seeded procedural generator of English-like multi-document QA text (LegoKV issue 6).

Every sample is a small fictional world (train/world.py): people, companies, cities and objects with
attributes (occupation, year of birth, product, population, colour, ...) and relations
(lives in, works for, founded by, mayor of, owned by, made by, kept in, closest friend).
Names are made fresh for every sample from syllables, a fraction of them are drawn from a
small recurring pool whose facts change from sample to sample, and attribute values come
from shared pools, so the same value belongs to different entities in different samples:
the model has to read the documents, it cannot memorize facts.

Each entity gets one document: a short title line ("Title: <name>"), then one sentence per
fact, in a random order, a few facts left out. Every sentence names its subject in full (no
pronouns), and each kind of fact has one phrasing, which its question mirrors. Questions are
one hop (the answer is in the entity's own document) or two hops (the first document names a
second entity whose own document holds the answer). Documents not needed by the question are
distractors. Within a sample no two entities share a distinctive name word (first name,
surname, company root, object stem), so every mention of a name points at one entity.

Text layout of one training sequence (BOS and EOS are special tokens, not text):

    <BOS>Title: Maren Tolvaski
     Maren Tolvaski works as a baker. Maren Tolvaski lives in Drunavik. ...

    Title: Drunavik
     Drunavik is a city in Osmeria. The mayor of Drunavik is Pell Odrasa. ...

    Question: Who is the mayor of the city where Maren Tolvaski lives?
    Answer: Pell Odrasa<EOS>

Command line:
    python train/data.py --eval-out train/eval/qa-demo-eval.jsonl   # the 200-case held-out set
    python train/data.py --show 2                                  # print samples
    python train/data.py --samples-out public/samples/qa           # the studio's sample documents
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
from dataclasses import dataclass

from world import DOC_WRITERS, QA, World, one_hop, two_hop

# ----------------------------------------------------------------------------- samples

INSTRUCTIONS = [
    'Answer the question based on the documents. Answer within 5 words.',
    'Read the documents and answer the question in a few words.',
    'Use the documents above to answer.',
]


@dataclass
class Sample:
    docs: list  # document texts, in order
    qas: list  # QA items
    instruction: str = ''
    kinds: tuple = ()  # the entity kind of each document
    entities: tuple = ()  # the entity of each document (world.Entity)


def est_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def make_sample(rng: random.Random, doc_budget: int, n_questions: int = 1, count=est_tokens,
                two_hop_share: float = 0.5, min_docs: int = 2, crowd: str | None = None) -> Sample:
    """A world whose documents fill about `doc_budget` tokens (measured by `count`), and
    `n_questions` distinct questions about it, answerable from the included documents.
    crowd: a kind whose documents fill the budget first (see World), questions about it only."""
    n_docs = max(min_docs, round(doc_budget / 75))
    world = World(rng, n_docs + 2, crowd)
    docs = []
    for e in world.entities():
        text, stated = DOC_WRITERS[e.kind](e, rng)
        docs.append((e, text, stated))
    rng.shuffle(docs)
    if crowd is not None:  # the crowded kind first, so the budget takes it before the rest
        docs.sort(key=lambda d: d[0].kind != crowd)
    chosen, used = [], 0
    for e, text, stated in docs:
        t = count(text)
        if used + t > doc_budget and len(chosen) >= min_docs:
            continue
        chosen.append((e, text, stated))
        used += t
    if crowd is not None:
        rng.shuffle(chosen)
    stated = {id(e): s for e, _, s in chosen}
    ones, twos = [], []
    for e, _, s in chosen:
        if crowd is not None and e.kind != crowd:
            continue
        ones += one_hop(e, s, rng)
        twos += two_hop(e, stated, rng)
    rng.shuffle(ones)
    rng.shuffle(twos)
    qas, seen_q = [], set()
    while len(qas) < n_questions and (ones or twos):
        pool = twos if (twos and (rng.random() < two_hop_share or not ones)) else ones
        qa = pool.pop()
        if qa.question in seen_q:
            continue
        seen_q.add(qa.question)
        qas.append(qa)
    instr = rng.choice(INSTRUCTIONS) if rng.random() < 0.15 else ''
    return Sample([t for _, t, _ in chosen], qas, instr, tuple(e.kind for e, _, _ in chosen),
                  tuple(e for e, _, _ in chosen))


def question_text(qa: QA, instruction: str = '') -> str:
    """The uncached text after the documents, up to and including 'Answer:'."""
    pre = instruction + '\n' if instruction else ''
    return pre + 'Question: ' + qa.question + '\nAnswer:'


def answer_text(qa: QA) -> str:
    return ' ' + qa.answer


def sample_text(s: Sample, qa_index: int = 0) -> str:
    """The whole sequence as plain text (BOS and EOS excluded)."""
    qa = s.qas[qa_index]
    return ''.join(s.docs) + question_text(qa, s.instruction) + answer_text(qa)


# ----------------------------------------------------------------------------- eval set

def pack_chunks(docs: list[str], count, chunk_tokens: int = 512) -> list[str]:
    """Whole documents packed into chunks of at most ~chunk_tokens tokens."""
    chunks, cur, n = [], '', 0
    for d in docs:
        t = count(d)
        if cur and n + t > chunk_tokens:
            chunks.append(cur)
            cur, n = '', 0
        cur += d
        n += t
    if cur:
        chunks.append(cur)
    return chunks


def make_eval_cases(seed: int, n: int, count, lo: int = 1024, hi: int = 2048, chunk_tokens: int = 512):
    """n cases of lo..hi context tokens (documents only), half one-hop and half two-hop,
    chunked into ~chunk_tokens-token chunks of whole documents."""
    rng = random.Random(seed)
    cases = []
    i = 0
    while len(cases) < n:
        budget = rng.randint(lo + 40, hi - 20)
        want_two = len(cases) % 2 == 1
        s = make_sample(rng, budget, n_questions=1, count=count, two_hop_share=1.0 if want_two else 0.0)
        i += 1
        if not s.qas or (s.qas[0].hops == 2) != want_two:
            continue
        total = sum(count(d) for d in s.docs)
        if not lo <= total <= hi:
            continue
        qa = s.qas[0]
        cases.append({
            'id': f'qa-demo-{len(cases):03d}',
            'chunks': pack_chunks(s.docs, count, chunk_tokens),
            'instruction': '',
            'question': question_text(qa),
            'answers': [qa.answer],
            'metric': 'f1',
            'hops': qa.hops,
            'qtype': qa.qtype,
        })
    return cases


def write_samples(out_dir: str, seed: int, count, doc_budget: int = 400) -> dict:
    """The studio's sample documents for qa-demo: one small world, one file per document,
    and a two-hop example question about it. Returns the entry for public/models/index.json."""
    rng = random.Random(seed)
    while True:
        s = make_sample(rng, doc_budget, n_questions=40, count=count)
        two = [qa for qa in s.qas if qa.hops == 2]
        if len(s.docs) >= 4 and two:
            break
    example = next((qa for qa in two if qa.qtype == 'person.city.mayor'), two[0])
    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):
        if f.endswith('.txt'):
            os.remove(os.path.join(out_dir, f))
    files = []
    for d in s.docs:
        title = d.split('\n', 1)[0][len('Title: '):]
        name = re.sub(r'[^a-z0-9]+', '-', title.lower()).strip('-') + '.txt'
        with open(os.path.join(out_dir, name), 'w') as f:
            f.write(d)
        files.append({'file': 'qa/' + name, 'title': title})
    return {'example': example.question, 'answer': example.answer, 'files': files,
            'questions': [(qa.question, qa.answer) for qa in s.qas]}


def hf_counter(tokenizer_dir: str):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(tokenizer_dir, 'tokenizer.json'))
    return lambda text: len(tok.encode(text, add_special_tokens=False).ids)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--show', type=int, default=0, help='print N samples')
    ap.add_argument('--budget', type=int, default=400, help='document tokens per shown sample')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--eval-out', help='write the held-out eval set (JSONL) here')
    ap.add_argument('--eval-seed', type=int, default=777_000)
    ap.add_argument('--eval-n', type=int, default=200)
    ap.add_argument('--samples-out', help='write the studio\'s sample documents (one world) into this folder')
    ap.add_argument('--samples-seed', type=int, default=8)
    ap.add_argument('--tokenizer', default=os.path.join(os.path.dirname(__file__), '..', 'public', 'models',
                                                        'qa-demo'), help='folder with tokenizer.json')
    args = ap.parse_args(argv)
    count = hf_counter(args.tokenizer) if os.path.exists(os.path.join(args.tokenizer, 'tokenizer.json')) \
        else est_tokens
    if args.show:
        rng = random.Random(args.seed)
        for _ in range(args.show):
            s = make_sample(rng, args.budget, n_questions=4, count=count)
            print(''.join(s.docs), end='')
            for qa in s.qas:
                print(f'[{qa.hops}-hop {qa.qtype}] ' + question_text(qa, s.instruction) + answer_text(qa))
            print('=' * 60)
    if args.samples_out:
        print(json.dumps(write_samples(args.samples_out, args.samples_seed, count), indent=2))
    if args.eval_out:
        if count is est_tokens:
            print('warning: no tokenizer found, token counts are estimates', file=sys.stderr)
        cases = make_eval_cases(args.eval_seed, args.eval_n, count)
        os.makedirs(os.path.dirname(os.path.abspath(args.eval_out)), exist_ok=True)
        with open(args.eval_out, 'w') as f:
            for c in cases:
                f.write(json.dumps(c) + '\n')
        lens = [sum(count(ch) for ch in c['chunks']) for c in cases]
        print(f'wrote {len(cases)} cases to {args.eval_out}: context tokens {min(lens)}..{max(lens)}, '
              f'chunks per case {min(len(c["chunks"]) for c in cases)}..{max(len(c["chunks"]) for c in cases)}')


if __name__ == '__main__':
    main()
