#!/usr/bin/env python3
"""Seeded procedural generator of English-like multi-document QA text (LegoKV issue 6).

Every sample is a small fictional world: people, companies, cities and objects with
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
from dataclasses import dataclass, field

# ----------------------------------------------------------------------------- names

ONSETS = ['b', 'br', 'c', 'ch', 'd', 'dr', 'f', 'fl', 'g', 'gr', 'h', 'j', 'k', 'kr', 'l', 'm', 'n', 'p',
          'pr', 'r', 's', 'sh', 'sk', 'st', 't', 'th', 'tr', 'v', 'w', 'z', 'bl', 'cl', 'gl', 'sl', 'qu']
VOWELS = ['a', 'e', 'i', 'o', 'u', 'a', 'e', 'o', 'ai', 'ea', 'ei', 'io', 'ou', 'y', 'au', 'ia']
CODAS = ['', '', '', '', 'n', 'r', 'l', 's', 'th', 'm', 'nd', 'rk', 'x', 'sk', 'v', 'lt', 'rn', 'sh', 'ck']
SURNAME_ENDS = ['', '', '', 'son', 'ski', 'ova', 'ez', 'ard', 'wyn', 'ley', 'ani', 'ek', 'ius', 'dottir', 'berg',
                'ton', 'ell', 'ira', 'ath', 'os']
CITY_ENDS = ['', '', 'ford', 'holm', 'vik', 'burg', 'stead', 'mouth', 'ton', 'ia', 'field', 'haven', 'gard',
             'port', 'wick', 'dale', 'mar', 'ora']
COUNTRY_ENDS = ['ia', 'land', 'stan', 'ora', 'mark', 'aria', 'ovia', 'ene', '']
COMPANY_KINDS = ['Industries', 'Foods', 'Labs', 'Motors', 'Textiles', 'Press', 'Shipping', 'Bank', 'Robotics',
                 'Works', 'Studios', 'Mills', 'Systems', 'Trading', 'Brewing', 'Tools', 'Group', 'Partners',
                 'Electric', 'Airways']
OBJECT_KINDS = ['compass', 'lantern', 'clock', 'violin', 'telescope', 'map', 'statue', 'tapestry', 'sword',
                'bell', 'harp', 'chessboard', 'globe', 'mirror', 'crown', 'drum', 'kettle', 'vase', 'quilt',
                'music box', 'bicycle', 'rowing boat', 'camera', 'typewriter', 'lamp']

# ----------------------------------------------------------------------------- value pools

OCCUPATIONS = ['painter', 'baker', 'engineer', 'teacher', 'nurse', 'carpenter', 'pilot', 'lawyer', 'farmer',
               'chemist', 'librarian', 'musician', 'architect', 'journalist', 'doctor', 'gardener', 'tailor',
               'fisher', 'photographer', 'translator', 'potter', 'sailor', 'accountant', 'dentist', 'chef',
               'mechanic', 'poet', 'astronomer', 'jeweler', 'beekeeper', 'blacksmith', 'historian',
               'geologist', 'dancer', 'firefighter', 'surveyor', 'weaver', 'clockmaker', 'bookbinder', 'banker']
COLORS = ['red', 'blue', 'green', 'yellow', 'black', 'white', 'purple', 'orange', 'gray', 'brown', 'pink',
          'silver', 'golden', 'teal', 'crimson', 'violet']
MATERIALS = ['oak', 'brass', 'glass', 'iron', 'silver', 'copper', 'marble', 'pine', 'bronze', 'clay', 'steel',
             'walnut', 'wool', 'porcelain', 'gold', 'bone']
PRODUCTS = ['bicycles', 'glass bottles', 'paper lamps', 'tractors', 'wool coats', 'cheese', 'radios',
            'sailing boats', 'board games', 'pianos', 'umbrellas', 'garden tools', 'soap', 'maps', 'shoes',
            'tea', 'clocks', 'bread', 'paint', 'telescopes', 'candles', 'chairs', 'kites', 'rope', 'ink',
            'violins', 'cameras', 'toys', 'jam', 'bricks']
ANIMALS = ['cat', 'dog', 'parrot', 'rabbit', 'horse', 'goat', 'turtle', 'hamster', 'owl', 'goldfish',
           'ferret', 'donkey', 'canary', 'lizard', 'pony']
HOBBIES = ['chess', 'sailing', 'painting', 'gardening', 'fishing', 'hiking', 'knitting', 'cooking', 'singing',
           'rowing', 'climbing', 'dancing', 'reading', 'cycling', 'pottery', 'archery', 'birdwatching',
           'swimming', 'woodcarving', 'photography']
FEATURES = ['glass bridges', 'old harbor', 'night market', 'stone towers', 'long beaches', 'music festival',
            'flower gardens', 'salt mines', 'painted houses', 'clock tower', 'hot springs', 'cheese fair',
            'narrow canals', 'great library', 'windmills', 'silver mines', 'lighthouse', 'horse races',
            'tea houses', 'marble quarry']

# ----------------------------------------------------------------------------- recurring pool
# A few names come back in many samples with different facts each time, so that the same
# name is seen with contradicting attributes across samples.


def _pool(rng: random.Random, make, n: int) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        s = make(rng)
        if s not in out:
            out.append(s)
    return out


def syllable(rng: random.Random, coda_p: float = 0.2) -> str:
    s = rng.choice(ONSETS) + rng.choice(VOWELS)
    if rng.random() < coda_p:
        s += rng.choice(CODAS)
    return s


def word(rng: random.Random, n: int, end: str = '') -> str:
    w = ''.join(syllable(rng) for _ in range(n)) + end
    return w[0].upper() + w[1:]


def first_name(rng: random.Random) -> str:
    return word(rng, rng.choice([1, 2, 2]))


def surname(rng: random.Random) -> str:
    n = rng.choice([1, 2, 2])
    return word(rng, n, rng.choice(SURNAME_ENDS) if rng.random() < 0.4 else '')


def city_name(rng: random.Random) -> str:
    n = rng.choice([1, 2, 2, 3])
    return word(rng, n, rng.choice(CITY_ENDS) if n < 3 else '')


def country_name(rng: random.Random) -> str:
    return word(rng, rng.choice([1, 2, 2]), rng.choice(COUNTRY_ENDS))


def company_root(rng: random.Random) -> str:
    return word(rng, rng.choice([1, 2, 2, 3]))


def river_name(rng: random.Random) -> str:
    return word(rng, rng.choice([1, 2]))


def recurring(rng: random.Random, pool: list[str], make) -> str:
    """A fifth of the time a name from a small pool that recurs across samples (with other facts each time)."""
    return rng.choice(pool) if rng.random() < 0.2 else make(rng)


_RP = random.Random(20240611)
RECURRING_FIRST = _pool(_RP, first_name, 40)
RECURRING_SURNAMES = _pool(_RP, surname, 40)
RECURRING_CITIES = _pool(_RP, city_name, 30)
RECURRING_COUNTRIES = _pool(_RP, country_name, 12)
RECURRING_COMPANY_ROOTS = _pool(_RP, company_root, 30)

# ----------------------------------------------------------------------------- the world

# words that many names share: a company's kind, an object's kind
GENERIC_WORDS = {'the'} | {w.lower() for w in COMPANY_KINDS} | {w.lower() for w in OBJECT_KINDS}


@dataclass
class Entity:
    kind: str  # person | company | city | object
    name: str
    attrs: dict = field(default_factory=dict)

    @property
    def title(self) -> str:
        return self.name[0].upper() + self.name[1:]


def cap(s: str) -> str:
    return s[0].upper() + s[1:]


def article(w: str) -> str:
    return 'an' if w[0] in 'aeiou' else 'a'


def fmt_int(n: int) -> str:
    return f'{n:,}'


class World:
    """All entities of one sample, with unique names, and their documents."""

    def __init__(self, rng: random.Random, n_docs: int):
        self.rng = rng
        self.used: set[str] = set()
        self.persons: list[Entity] = []
        self.companies: list[Entity] = []
        self.cities: list[Entity] = []
        self.objects: list[Entity] = []
        n_docs = max(n_docs, 3)
        w = [0.40, 0.20, 0.20, 0.20]
        counts = [max(1, round(n_docs * x)) for x in w]
        n_p, n_c, n_ci, n_o = counts
        # a few entities are only mentioned (no document): extra cities and countries
        self.countries = [self.fresh(lambda r: recurring(r, RECURRING_COUNTRIES, country_name))
                          for _ in range(rng.randint(2, 5))]
        for _ in range(n_ci + rng.randint(0, 2)):
            self.cities.append(Entity('city', self.fresh(lambda r: recurring(r, RECURRING_CITIES, city_name))))
        for _ in range(n_c + rng.randint(0, 1)):
            self.companies.append(Entity('company', self.fresh(self.company_name)))
        for _ in range(n_p + rng.randint(1, 3)):
            self.persons.append(Entity('person', self.fresh(self.person_name)))
        for _ in range(n_o):
            self.objects.append(Entity('object', self.fresh(self.object_name)))
        self.assign()

    # names ------------------------------------------------------------------
    def fresh(self, make) -> str:
        """A name none of whose distinctive words (first name, surname, root, stem) another
        entity of this sample uses: every name can be matched by any of its words."""
        for _ in range(1000):
            n = make(self.rng)
            words = {w.lower() for w in n.split(' ') if w.lower() not in GENERIC_WORDS}
            if not words & self.used:
                self.used |= words
                return n
        raise RuntimeError('name space exhausted')

    @staticmethod
    def person_name(rng) -> str:
        return recurring(rng, RECURRING_FIRST, first_name) + ' ' + recurring(rng, RECURRING_SURNAMES, surname)

    @staticmethod
    def company_name(rng) -> str:
        return recurring(rng, RECURRING_COMPANY_ROOTS, company_root) + ' ' + rng.choice(COMPANY_KINDS)

    @staticmethod
    def object_name(rng) -> str:
        kind = rng.choice(OBJECT_KINDS)
        return f'the {word(rng, rng.choice([1, 2, 2]))} {kind}'

    # facts ------------------------------------------------------------------
    def assign(self):
        r = self.rng
        for c in self.cities:
            c.attrs.update(country=r.choice(self.countries), population=r.randint(2, 900) * 1000,
                           mayor=r.choice(self.persons), river=self.fresh(river_name) + ' River',
                           feature=r.choice(FEATURES))
        for c in self.companies:
            c.attrs.update(city=r.choice(self.cities), founder=r.choice(self.persons),
                           ceo=r.choice(self.persons), year=r.randint(1850, 2020), product=r.choice(PRODUCTS),
                           employees=r.choice([r.randint(12, 99), r.randint(100, 999), r.randint(1000, 9000)]))
            if c.attrs['ceo'] is c.attrs['founder']:
                c.attrs['ceo'] = None
        for p in self.persons:
            others = [q for q in self.persons if q is not p]
            p.attrs.update(occupation=r.choice(OCCUPATIONS), city=r.choice(self.cities),
                           employer=r.choice(self.companies), year=r.randint(1930, 2004),
                           pet=r.choice(ANIMALS), pet_name=self.fresh(first_name), hobby=r.choice(HOBBIES),
                           color=r.choice(COLORS), friend=r.choice(others) if others else None)
        for o in self.objects:
            o.attrs.update(color=r.choice(COLORS),
                           material=r.choice(MATERIALS), owner=r.choice(self.persons),
                           maker=r.choice(self.companies), city=r.choice(self.cities),
                           year=r.randint(1700, 2020))

    def entities(self) -> list[Entity]:
        return self.persons + self.companies + self.cities + self.objects


# ----------------------------------------------------------------------------- documents


def person_doc(e: Entity, r: random.Random) -> tuple[str, set]:
    a = e.attrs
    facts = [  # (attribute, sentence with {S} for the subject)
        ('occupation', '{S} works as ' + article(a['occupation']) + ' ' + a['occupation'] + '.'),
        ('city', '{S} lives in ' + a['city'].name + '.'),
        ('employer', '{S} works for ' + a['employer'].name + '.'),
        ('year', '{S} was born in ' + str(a['year']) + '.'),
        ('pet', '{S} has ' + article(a['pet']) + ' ' + a['pet'] + ' named ' + a['pet_name'] + '.'),
        ('hobby', 'The hobby of {S} is ' + a['hobby'] + '.'),
        ('color', 'The favorite color of {S} is ' + a['color'] + '.'),
    ]
    if a['friend'] is not None:
        facts.append(('friend', 'The closest friend of {S} is ' + a['friend'].name + '.'))
    return compose(e, facts, r)


def company_doc(e: Entity, r: random.Random) -> tuple[str, set]:
    a = e.attrs
    facts = [
        ('city', '{S} is based in ' + a['city'].name + '.'),
        ('year', '{S} was founded in ' + str(a['year']) + '.'),
        ('founder', '{S} was founded by ' + a['founder'].name + '.'),
        ('product', '{S} makes ' + a['product'] + '.'),
        ('employees', '{S} employs about ' + fmt_int(a['employees']) + ' people.'),
    ]
    if a['ceo'] is not None:
        facts.append(('ceo', 'The chief executive of {S} is ' + a['ceo'].name + '.'))
    return compose(e, facts, r)


def city_doc(e: Entity, r: random.Random) -> tuple[str, set]:
    a = e.attrs
    facts = [
        ('country', '{S} is a city in ' + a['country'] + '.'),
        ('population', '{S} has a population of about ' + fmt_int(a['population']) + '.'),
        ('mayor', 'The mayor of {S} is ' + a['mayor'].name + '.'),
        ('river', 'The ' + a['river'] + ' runs through {S}.'),
        ('feature', '{S} is known for its ' + a['feature'] + '.'),
    ]
    return compose(e, facts, r)


def object_doc(e: Entity, r: random.Random) -> tuple[str, set]:
    a = e.attrs
    facts = [
        ('color', 'The color of {S} is ' + a['color'] + '.'),
        ('material', '{S} is made of ' + a['material'] + '.'),
        ('owner', 'The owner of {S} is ' + a['owner'].name + '.'),
        ('maker', '{S} was made by ' + a['maker'].name + '.'),
        ('year', '{S} was made in ' + str(a['year']) + '.'),
        ('city', '{S} is kept in ' + a['city'].name + '.'),
    ]
    return compose(e, facts, r)


def compose(e: Entity, facts, r: random.Random):
    """Fact sentences in a random order, a few left out. Every sentence names its subject in
    full, so each fact can be found by the name alone. Returns the document text and the set
    of attributes it states."""
    r.shuffle(facts)
    keep = [(attr, s) for i, (attr, s) in enumerate(facts) if i < 2 or r.random() >= 0.12]
    out = [cap(s.replace('{S}', e.name)) for _, s in keep]
    # The body is indented by one space: a name then tokenizes the same at the start of the body
    # as everywhere else (after a space), in the title, the other sentences and the questions.
    return 'Title: ' + e.title + '\n ' + ' '.join(out) + '\n\n', {a for a, _ in keep}


DOC_WRITERS = {'person': person_doc, 'company': company_doc, 'city': city_doc, 'object': object_doc}

# ----------------------------------------------------------------------------- questions


@dataclass
class QA:
    question: str
    answer: str
    hops: int
    support: list  # entities whose documents are needed
    qtype: str


def one_hop(e: Entity, stated: set, r: random.Random) -> list[QA]:
    a, n, out = e.attrs, e.name, []

    def add(attr, q, ans, qtype):
        if attr in stated:
            out.append(QA(cap(q), ans, 1, [e], qtype))

    if e.kind == 'person':
        add('occupation', 'What is the occupation of ' + n + '?', a['occupation'], 'person.occupation')
        add('city', 'Where does ' + n + ' live?', a['city'].name, 'person.city')
        add('employer', 'Which company does ' + n + ' work for?', a['employer'].name, 'person.employer')
        add('year', 'In what year was ' + n + ' born?', str(a['year']), 'person.year')
        add('pet', 'What kind of pet does ' + n + ' have?', a['pet'], 'person.pet')
        add('pet', 'What is the name of the pet of ' + n + '?', a['pet_name'], 'person.pet_name')
        add('hobby', 'What is the hobby of ' + n + '?', a['hobby'], 'person.hobby')
        add('color', 'What is the favorite color of ' + n + '?', a['color'], 'person.color')
        if a['friend'] is not None:
            add('friend', 'Who is the closest friend of ' + n + '?', a['friend'].name, 'person.friend')
    elif e.kind == 'company':
        add('city', 'Where is ' + n + ' based?', a['city'].name, 'company.city')
        add('year', 'In what year was ' + n + ' founded?', str(a['year']), 'company.year')
        add('founder', 'Who founded ' + n + '?', a['founder'].name, 'company.founder')
        add('product', 'What does ' + n + ' make?', a['product'], 'company.product')
        add('employees', 'How many people does ' + n + ' employ?', fmt_int(a['employees']), 'company.employees')
        if a['ceo'] is not None:
            add('ceo', 'Who is the chief executive of ' + n + '?', a['ceo'].name, 'company.ceo')
    elif e.kind == 'city':
        add('country', 'In which country is ' + n + '?', a['country'], 'city.country')
        add('population', 'What is the population of ' + n + '?', fmt_int(a['population']), 'city.population')
        add('mayor', 'Who is the mayor of ' + n + '?', a['mayor'].name, 'city.mayor')
        add('river', 'Which river runs through ' + n + '?', a['river'], 'city.river')
        add('feature', 'What is ' + n + ' known for?', a['feature'], 'city.feature')
    else:
        add('color', 'What is the color of ' + n + '?', a['color'], 'object.color')
        add('material', 'What is ' + n + ' made of?', a['material'], 'object.material')
        add('owner', 'Who is the owner of ' + n + '?', a['owner'].name, 'object.owner')
        add('maker', 'Which company made ' + n + '?', a['maker'].name, 'object.maker')
        add('year', 'In what year was ' + n + ' made?', str(a['year']), 'object.year')
        add('city', 'Where is ' + n + ' kept?', a['city'].name, 'object.city')
    return out


# (first entity kind, first attribute, second attribute, question template)
TWO_HOP = [
    ('person', 'employer', 'city', 'Where is the company that {n} works for based?'),
    ('person', 'employer', 'founder', 'Who founded the company that {n} works for?'),
    ('person', 'employer', 'product', 'What does the company that {n} works for make?'),
    ('person', 'employer', 'year', 'In what year was the company that {n} works for founded?'),
    ('person', 'city', 'mayor', 'Who is the mayor of the city where {n} lives?'),
    ('person', 'city', 'country', 'In which country is the city where {n} lives?'),
    ('person', 'city', 'river', 'Which river runs through the city where {n} lives?'),
    ('person', 'friend', 'city', 'Where does the closest friend of {n} live?'),
    ('person', 'friend', 'occupation', 'What is the occupation of the closest friend of {n}?'),
    ('company', 'founder', 'city', 'Where does the founder of {n} live?'),
    ('company', 'founder', 'year', 'In what year was the founder of {n} born?'),
    ('company', 'founder', 'occupation', 'What is the occupation of the founder of {n}?'),
    ('company', 'city', 'mayor', 'Who is the mayor of the city where {n} is based?'),
    ('company', 'city', 'country', 'In which country is the city where {n} is based?'),
    ('company', 'ceo', 'city', 'Where does the chief executive of {n} live?'),
    ('city', 'mayor', 'occupation', 'What is the occupation of the mayor of {n}?'),
    ('city', 'mayor', 'year', 'In what year was the mayor of {n} born?'),
    ('object', 'owner', 'city', 'Where does the owner of {n} live?'),
    ('object', 'owner', 'occupation', 'What is the occupation of the owner of {n}?'),
    ('object', 'maker', 'city', 'Where is the company that made {n} based?'),
    ('object', 'maker', 'year', 'In what year was the company that made {n} founded?'),
    ('object', 'city', 'mayor', 'Who is the mayor of the city where {n} is kept?'),
    ('object', 'city', 'country', 'In which country is the city where {n} is kept?'),
]


def answer_of(e: Entity, attr: str) -> str:
    v = e.attrs[attr]
    if isinstance(v, Entity):
        return v.name
    if attr in ('population', 'employees'):
        return fmt_int(v)
    return str(v)


def two_hop(e: Entity, stated: dict, r: random.Random) -> list[QA]:
    out = []
    for kind, a1, a2, q in TWO_HOP:
        if e.kind != kind or a1 not in stated[id(e)]:
            continue
        mid = e.attrs[a1]
        if mid is None or id(mid) not in stated or a2 not in stated[id(mid)]:
            continue
        out.append(QA(cap(q.replace('{n}', e.name)), answer_of(mid, a2), 2, [e, mid], f'{kind}.{a1}.{a2}'))
    return out


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


def est_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def make_sample(rng: random.Random, doc_budget: int, n_questions: int = 1, count=est_tokens,
                two_hop_share: float = 0.5, min_docs: int = 2) -> Sample:
    """A world whose documents fill about `doc_budget` tokens (measured by `count`), and
    `n_questions` distinct questions about it, answerable from the included documents."""
    n_docs = max(min_docs, round(doc_budget / 75))
    world = World(rng, n_docs + 2)
    docs = []
    for e in world.entities():
        text, stated = DOC_WRITERS[e.kind](e, rng)
        docs.append((e, text, stated))
    rng.shuffle(docs)
    chosen, used = [], 0
    for e, text, stated in docs:
        t = count(text)
        if used + t > doc_budget and len(chosen) >= min_docs:
            continue
        chosen.append((e, text, stated))
        used += t
    stated = {id(e): s for e, _, s in chosen}
    ones, twos = [], []
    for e, _, s in chosen:
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
    return Sample([t for _, t, _ in chosen], qas, instr)


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
