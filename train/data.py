#!/usr/bin/env python3
"""Seeded procedural generator of English-like multi-document QA text (LegoKV issue 6).

Every sample is a small fictional world: people, companies, cities and objects with
attributes (occupation, year of birth, product, population, colour, ...) and relations
(lives in, works for, founded by, mayor of, owned by, made by, kept in, closest friend).
Names are made fresh for every sample from syllables, a fraction of them are drawn from a
small recurring pool whose facts change from sample to sample, and attribute values come
from shared pools, so the same value belongs to different entities in different samples:
the model has to read the documents, it cannot memorize facts.

Each entity gets one document: a short title line ("Title: <name>"), then sentences drawn
from several paraphrase templates, in a random order, with pronouns and filler sentences
that answer nothing. Questions are one hop (the answer is in the entity's own document) or
two hops (the first document names a second entity whose own document holds the answer).
Documents that are not needed by the question are distractors, and names are made to
collide partly (shared first names, shared name stems) so that matching must be exact.

Text layout of one training sequence (BOS and EOS are special tokens, not text):

    <BOS>Title: Maren Tolvaski
    Maren Tolvaski works as a baker. She lives in Drunavik. ...

    Title: Drunavik
    Drunavik is a city in Osmeria. ...

    Question: Who is the mayor of the city where Maren Tolvaski lives?
    Answer: Pell Odrasa<EOS>

Command line:
    python train/data.py --eval-out train/eval/qa-demo-eval.jsonl   # the 200-case held-out set
    python train/data.py --show 2                                  # print samples
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
DIRECTIONS = ['north', 'south', 'east', 'west', 'center']
WEATHER = ['long', 'short', 'cold', 'mild', 'wet', 'dry', 'windy', 'snowy']
TRAITS = ['patience', 'good humor', 'loud laugh', 'careful work', 'kindness', 'quick wit', 'neat handwriting',
          'early mornings', 'long walks', 'strong opinions']

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


_RP = random.Random(20240611)
RECURRING_FIRST = _pool(_RP, first_name, 40)
RECURRING_SURNAMES = _pool(_RP, surname, 40)
RECURRING_CITIES = _pool(_RP, city_name, 30)
RECURRING_COUNTRIES = _pool(_RP, country_name, 12)
RECURRING_COMPANY_ROOTS = _pool(_RP, company_root, 30)

# ----------------------------------------------------------------------------- the world


@dataclass
class Entity:
    kind: str  # person | company | city | object
    name: str
    attrs: dict = field(default_factory=dict)
    doc: str = ''
    gender: str = ''  # person: f | m | n

    @property
    def title(self) -> str:
        return self.name[0].upper() + self.name[1:]


PRONOUNS = {'f': ('she', 'her', 'her'), 'm': ('he', 'him', 'his'), 'n': ('they', 'them', 'their')}


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
        self.countries = [self.fresh(lambda r: self.recurring(r, RECURRING_COUNTRIES, country_name))
                          for _ in range(rng.randint(2, 5))]
        for _ in range(n_ci + rng.randint(0, 2)):
            self.cities.append(Entity('city', self.fresh(lambda r: self.recurring(r, RECURRING_CITIES, city_name))))
        for _ in range(n_c + rng.randint(0, 1)):
            self.companies.append(Entity('company', self.fresh(self.company_name)))
        for _ in range(n_p + rng.randint(1, 3)):
            g = rng.choice('fmfmn')
            self.persons.append(Entity('person', self.fresh(self.person_name), gender=g))
        for _ in range(n_o):
            name = self.fresh(self.object_name)
            stem, kind = self._last_object
            self.objects.append(Entity('object', name, attrs={'stem': stem, 'kind': kind}))
        self.assign()

    # names ------------------------------------------------------------------
    def recurring(self, rng, pool, make):
        return rng.choice(pool) if rng.random() < 0.2 else make(rng)

    def fresh(self, make) -> str:
        for _ in range(1000):
            n = make(self.rng)
            if n not in self.used and n.lower() not in {u.lower() for u in self.used}:
                self.used.add(n)
                return n
        raise RuntimeError('name space exhausted')

    def person_name(self, rng) -> str:
        # shared first names or surnames inside a sample make exact matching necessary
        if self.persons and rng.random() < 0.25:
            other = rng.choice(self.persons).name.split(' ')
            if rng.random() < 0.5:
                return other[0] + ' ' + surname(rng)
            return first_name(rng) + ' ' + other[-1]
        f = rng.choice(RECURRING_FIRST) if rng.random() < 0.2 else first_name(rng)
        s = rng.choice(RECURRING_SURNAMES) if rng.random() < 0.2 else surname(rng)
        return f + ' ' + s

    def company_name(self, rng) -> str:
        if self.companies and rng.random() < 0.2:  # same root, another kind
            root = self.companies[-1].name.split(' ')[0]
        else:
            root = rng.choice(RECURRING_COMPANY_ROOTS) if rng.random() < 0.2 else company_root(rng)
        return root + ' ' + rng.choice(COMPANY_KINDS)

    def object_name(self, rng) -> str:
        kind = rng.choice(OBJECT_KINDS)
        if self.objects and rng.random() < 0.25:  # same stem, another kind
            stem = self.objects[-1].attrs['stem']
        else:
            stem = word(rng, rng.choice([1, 2, 2]))
        self._last_object = (stem, kind)
        return f'the {stem} {kind}'

    # facts ------------------------------------------------------------------
    def assign(self):
        r = self.rng
        for c in self.cities:
            c.attrs.update(country=r.choice(self.countries), population=r.randint(2, 900) * 1000,
                           mayor=r.choice(self.persons), river=self.fresh(river_name) + ' River',
                           feature=r.choice(FEATURES), direction=r.choice(DIRECTIONS),
                           weather=r.choice(WEATHER))
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
                           pet=r.choice(ANIMALS), pet_name=first_name(r), hobby=r.choice(HOBBIES),
                           color=r.choice(COLORS), friend=r.choice(others) if others else None,
                           trait=r.choice(TRAITS))
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
    he, him, his = PRONOUNS[e.gender]
    first = e.name.split(' ')[0]
    facts: list[tuple[str, str]] = []  # (attribute, sentence with {S} for the subject)
    facts.append(('occupation', r.choice([
        '{S} is ' + article(a['occupation']) + ' ' + a['occupation'] + '.',
        '{S} ' + 'works' + ' as ' + article(a['occupation']) + ' ' + a['occupation'] + '.',
        'By trade, {s} ' + 'is' + ' ' + article(a['occupation']) + ' ' + a['occupation'] + '.',
        '{S} ' + 'has' + ' been ' + article(a['occupation']) + ' ' + a['occupation']
        + ' for ' + str(r.randint(2, 30)) + ' years.'])))
    facts.append(('city', r.choice([
        '{S} ' + 'lives' + ' in ' + a['city'].name + '.',
        '{S} ' + 'makes' + ' ' + his + ' home in ' + a['city'].name + '.',
        'These days {s} ' + 'lives' + ' in the city of ' + a['city'].name + '.',
        '{S} ' + 'has' + ' lived in ' + a['city'].name + ' for many years.'])))
    facts.append(('employer', r.choice([
        '{S} ' + 'works' + ' for ' + a['employer'].name + '.',
        '{S} ' + 'is' + ' employed by ' + a['employer'].name + '.',
        '{S} ' + 'has' + ' a job at ' + a['employer'].name + '.',
        'The company {s} ' + 'works' + ' for is ' + a['employer'].name + '.'])))
    facts.append(('year', r.choice([
        '{S} ' + 'was' + ' born in ' + str(a['year']) + '.',
        '{S} ' + 'was' + ' born in the year ' + str(a['year']) + '.'])))
    facts.append(('pet', r.choice([
        '{S} ' + 'has' + ' ' + article(a['pet']) + ' ' + a['pet'] + ' named ' + a['pet_name'] + '.',
        '{S} ' + 'keeps' + ' ' + article(a['pet']) + ' ' + a['pet'] + ' called ' + a['pet_name'] + '.'])))
    facts.append(('hobby', r.choice([
        'In ' + his + ' free time {s} ' + 'enjoys' + ' ' + a['hobby'] + '.',
        cap(his) + ' favorite hobby is ' + a['hobby'] + '.'])))
    facts.append(('color', r.choice([
        cap(his) + ' favorite color is ' + a['color'] + '.',
        '{S} ' + 'likes' + ' the color ' + a['color'] + ' best.'])))
    if a['friend'] is not None:
        facts.append(('friend', r.choice([
            cap(his) + ' closest friend is ' + a['friend'].name + '.',
            '{S} and ' + a['friend'].name + ' are close friends.'])))
    fillers = [
        '{S} ' + 'is' + ' known among friends for ' + his + ' ' + a['trait'] + '.',
        '{S} rarely ' + 'talks' + ' about the past.',
        '{S} ' + 'likes' + ' to walk by the water in the morning.',
        'Neighbors say {s} ' + 'is' + ' always busy.',
        '{S} ' + 'hopes' + ' to travel more next year.',
    ]
    return compose(e, facts, fillers, r, subject_names=[e.name, first], pronoun=he)


def company_doc(e: Entity, r: random.Random) -> tuple[str, set]:
    a = e.attrs
    facts = [
        ('city', r.choice([
            '{S} is a company based in ' + a['city'].name + '.',
            '{S} has its headquarters in ' + a['city'].name + '.',
            'The headquarters of {s} are in ' + a['city'].name + '.',
            '{S} is based in ' + a['city'].name + '.'])),
        ('year', r.choice([
            '{S} was founded in ' + str(a['year']) + '.',
            '{S} was started in ' + str(a['year']) + '.'])),
        ('founder', r.choice([
            '{S} was founded by ' + a['founder'].name + '.',
            'The founder of {s} is ' + a['founder'].name + '.',
            a['founder'].name + ' started the company.'])),
        ('product', r.choice([
            '{S} makes ' + a['product'] + '.',
            '{S} is best known for its ' + a['product'] + '.',
            '{S} produces ' + a['product'] + '.'])),
        ('employees', r.choice([
            '{S} employs about ' + fmt_int(a['employees']) + ' people.',
            '{S} has about ' + fmt_int(a['employees']) + ' workers.'])),
    ]
    if a['ceo'] is not None:
        facts.append(('ceo', r.choice([
            'The chief executive of {s} is ' + a['ceo'].name + '.',
            '{S} is run by ' + a['ceo'].name + '.'])))
    fillers = ['{S} has grown steadily over the years.', 'Many of its workers live nearby.',
               'The company sells most of its goods abroad.', '{S} opened a new office last spring.',
               'Its first workshop was very small.']
    return compose(e, facts, fillers, r, subject_names=[e.name], pronoun='it')


def city_doc(e: Entity, r: random.Random) -> tuple[str, set]:
    a = e.attrs
    where = 'in the center of' if a['direction'] == 'center' else 'in the ' + a['direction'] + ' of'
    facts = [
        ('country', r.choice([
            '{S} is a city in ' + a['country'] + '.',
            '{S} lies ' + where + ' ' + a['country'] + '.',
            '{S} is a city ' + where + ' ' + a['country'] + '.'])),
        ('population', r.choice([
            'About ' + fmt_int(a['population']) + ' people live in {s}.',
            '{S} has a population of about ' + fmt_int(a['population']) + '.'])),
        ('mayor', r.choice([
            'The mayor of {s} is ' + a['mayor'].name + '.',
            '{S} is governed by mayor ' + a['mayor'].name + '.',
            a['mayor'].name + ' is the mayor of {s}.'])),
        ('river', r.choice([
            'The ' + a['river'] + ' runs through {s}.',
            '{S} stands on the ' + a['river'] + '.'])),
        ('feature', r.choice([
            '{S} is known for its ' + a['feature'] + '.',
            'Visitors come to {s} for its ' + a['feature'] + '.'])),
    ]
    fillers = ['The winters in {s} are ' + a['weather'] + '.', 'Visitors often come in the summer.',
               'The streets of {s} are busy on market days.', 'Trains leave {s} every hour.',
               'Many old buildings in {s} have been restored.']
    return compose(e, facts, fillers, r, subject_names=[e.name], pronoun='it')


def object_doc(e: Entity, r: random.Random) -> tuple[str, set]:
    a = e.attrs
    facts = [
        ('color', r.choice([
            '{S} is ' + a['color'] + '.',
            '{S} is painted ' + a['color'] + '.'])),
        ('material', r.choice([
            '{S} is made of ' + a['material'] + '.',
            '{S} is built of ' + a['material'] + '.'])),
        ('owner', r.choice([
            '{S} belongs to ' + a['owner'].name + '.',
            '{S} is owned by ' + a['owner'].name + '.',
            'The owner of {s} is ' + a['owner'].name + '.'])),
        ('maker', r.choice([
            '{S} was made by ' + a['maker'].name + '.',
            '{S} was built by ' + a['maker'].name + '.'])),
        ('year', r.choice([
            '{S} was made in ' + str(a['year']) + '.',
            '{S} dates from ' + str(a['year']) + '.'])),
        ('city', r.choice([
            'Today {s} is kept in ' + a['city'].name + '.',
            '{S} is kept in a museum in ' + a['city'].name + '.',
            '{S} is kept in ' + a['city'].name + '.'])),
    ]
    fillers = ['It is said to bring good luck.', 'Few people have seen it up close.',
               '{S} was repaired once, long ago.', 'Collectors have often asked about {s}.']
    return compose(e, facts, fillers, r, subject_names=[e.name], pronoun='it')


PLURAL = {'is': 'are', 'was': 'were', 'has': 'have', 'works': 'work', 'lives': 'live', 'makes': 'make',
          'keeps': 'keep', 'enjoys': 'enjoy', 'likes': 'like', 'hopes': 'hope', 'talks': 'talk'}


def compose(e: Entity, facts, fillers, r: random.Random, subject_names: list[str], pronoun: str):
    """Orders fact sentences (the first names the entity in full), drops a few, adds fillers.
    Returns the document text and the set of attributes it states."""
    r.shuffle(facts)
    keep = []
    for i, (attr, s) in enumerate(facts):
        if i >= 2 and r.random() < 0.12:  # some facts go unstated
            continue
        keep.append((attr, s))
    sents = [s for _, s in keep]
    # the document opens with a sentence that names its subject
    first = next((i for i, x in enumerate(sents) if x.startswith('{S}')), None)
    if first is not None:
        sents.insert(0, sents.pop(first))
    for f in r.sample(fillers, r.randint(0, 2)):
        sents.insert(r.randint(1, len(sents)), f)
    out = []
    for i, s in enumerate(sents):
        subj = subject_names[0]
        # Most sentences name their subject in full; a few use a pronoun or the first name.
        if i > 0 and e.kind == 'person' and r.random() < 0.25:
            subj = r.choice(subject_names[1:] + [pronoun])
        elif i > 0 and e.kind in ('company', 'city') and s.startswith('{S}') and r.random() < 0.15:
            subj = pronoun
        if subj == 'they':
            s = re.sub(r'\{([Ss])\} (rarely )?(\w+)',
                       lambda m: '{' + m.group(1) + '} ' + (m.group(2) or '') + PLURAL.get(m.group(3), m.group(3)), s)
        lower = subj if e.kind == 'person' else subject_names[0]  # {s}: pronouns only for people
        s = s.replace('{S}', cap(subj)).replace('{s}', lower)
        out.append(cap(s))
    return 'Title: ' + e.title + '\n' + ' '.join(out) + '\n\n', {a for a, _ in keep}


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

    def add(attr, qs, ans, qtype):
        if attr in stated:
            out.append(QA(r.choice(qs), ans, 1, [e], qtype))

    if e.kind == 'person':
        add('occupation', ['What is the occupation of ' + n + '?', 'What does ' + n + ' do for a living?',
                           'What is ' + n + "'s job?"], a['occupation'], 'person.occupation')
        add('city', ['Where does ' + n + ' live?', 'In which city does ' + n + ' live?'], a['city'].name,
            'person.city')
        add('employer', ['Which company does ' + n + ' work for?', 'Who employs ' + n + '?'], a['employer'].name,
            'person.employer')
        add('year', ['In what year was ' + n + ' born?', 'When was ' + n + ' born?'], str(a['year']),
            'person.year')
        add('pet', ['What kind of pet does ' + n + ' have?', 'What animal does ' + n + ' keep as a pet?'],
            a['pet'], 'person.pet')
        add('pet', ['What is the name of ' + n + "'s pet?", 'What is ' + n + "'s pet called?"],
            a['pet_name'], 'person.pet_name')
        add('hobby', ['What is the hobby of ' + n + '?', 'What does ' + n + ' enjoy in free time?'],
            a['hobby'], 'person.hobby')
        add('color', ['What is the favorite color of ' + n + '?', "What is " + n + "'s favorite color?"],
            a['color'], 'person.color')
        if a['friend'] is not None:
            add('friend', ['Who is the closest friend of ' + n + '?', "Who is " + n + "'s closest friend?"],
                a['friend'].name, 'person.friend')
    elif e.kind == 'company':
        add('city', ['Where is ' + n + ' based?', 'In which city is ' + n + ' based?',
                     'Where are the headquarters of ' + n + '?'], a['city'].name, 'company.city')
        add('year', ['When was ' + n + ' founded?', 'In what year was ' + n + ' founded?'], str(a['year']),
            'company.year')
        add('founder', ['Who founded ' + n + '?', 'Who is the founder of ' + n + '?'], a['founder'].name,
            'company.founder')
        add('product', ['What does ' + n + ' make?', 'What does ' + n + ' produce?'], a['product'],
            'company.product')
        add('employees', ['How many people does ' + n + ' employ?', 'How many workers does ' + n + ' have?'],
            fmt_int(a['employees']), 'company.employees')
        if a['ceo'] is not None:
            add('ceo', ['Who runs ' + n + '?', 'Who is the chief executive of ' + n + '?'], a['ceo'].name,
                'company.ceo')
    elif e.kind == 'city':
        add('country', ['In which country is ' + n + '?', 'Which country is ' + n + ' in?'], a['country'],
            'city.country')
        add('population', ['How many people live in ' + n + '?', 'What is the population of ' + n + '?'],
            fmt_int(a['population']), 'city.population')
        add('mayor', ['Who is the mayor of ' + n + '?'], a['mayor'].name, 'city.mayor')
        add('river', ['Which river runs through ' + n + '?'], a['river'], 'city.river')
        add('feature', ['What is ' + n + ' known for?'], a['feature'], 'city.feature')
    else:
        add('color', ['What color is ' + n + '?'], a['color'], 'object.color')
        add('material', ['What is ' + n + ' made of?'], a['material'], 'object.material')
        add('owner', ['Who owns ' + n + '?', 'Who is the owner of ' + n + '?'], a['owner'].name, 'object.owner')
        add('maker', ['Which company made ' + n + '?', 'Who made ' + n + '?'], a['maker'].name, 'object.maker')
        add('year', ['When was ' + n + ' made?', 'In what year was ' + n + ' made?'], str(a['year']),
            'object.year')
        add('city', ['Where is ' + n + ' kept?', 'In which city is ' + n + ' kept?'], a['city'].name,
            'object.city')
    return out


# (first entity kind, first attribute, second attribute, question templates, type)
TWO_HOP = [
    ('person', 'employer', 'city', ['In which city is the company that {n} works for based?',
                                    "Where is {n}'s employer based?"]),
    ('person', 'employer', 'founder', ['Who founded the company that {n} works for?']),
    ('person', 'employer', 'product', ['What does the company that {n} works for make?']),
    ('person', 'employer', 'year', ['When was the company that {n} works for founded?']),
    ('person', 'city', 'mayor', ['Who is the mayor of the city where {n} lives?']),
    ('person', 'city', 'country', ['In which country does {n} live?',
                                   'In which country is the city where {n} lives?']),
    ('person', 'city', 'river', ['Which river runs through the city where {n} lives?']),
    ('person', 'friend', 'city', ["Where does {n}'s closest friend live?",
                                  'Where does the closest friend of {n} live?']),
    ('person', 'friend', 'occupation', ["What does {n}'s closest friend do for a living?"]),
    ('company', 'founder', 'city', ['Where does the founder of {n} live?']),
    ('company', 'founder', 'year', ['In what year was the founder of {n} born?']),
    ('company', 'founder', 'occupation', ['What is the occupation of the founder of {n}?']),
    ('company', 'city', 'mayor', ['Who is the mayor of the city where {n} is based?']),
    ('company', 'city', 'country', ['In which country is {n} based?']),
    ('company', 'ceo', 'city', ['Where does the chief executive of {n} live?']),
    ('city', 'mayor', 'occupation', ['What is the occupation of the mayor of {n}?']),
    ('city', 'mayor', 'year', ['In what year was the mayor of {n} born?']),
    ('object', 'owner', 'city', ['Where does the owner of {n} live?']),
    ('object', 'owner', 'occupation', ['What is the occupation of the owner of {n}?',
                                       'What does the owner of {n} do for a living?']),
    ('object', 'maker', 'city', ['Where is the company that made {n} based?']),
    ('object', 'maker', 'year', ['When was the company that made {n} founded?']),
    ('object', 'city', 'mayor', ['Who is the mayor of the city where {n} is kept?']),
    ('object', 'city', 'country', ['In which country is {n} kept?']),
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
    for kind, a1, a2, qs in TWO_HOP:
        if e.kind != kind or a1 not in stated[id(e)]:
            continue
        mid = e.attrs[a1]
        if mid is None or id(mid) not in stated or a2 not in stated[id(mid)]:
            continue
        q = r.choice(qs).replace('{n}', e.name)
        out.append(QA(cap(q), answer_of(mid, a2), 2, [e, mid], f'{kind}.{a1}.{a2}'))
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
