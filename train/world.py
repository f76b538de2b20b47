"""The generator's world: fictional people, companies, cities and objects, their documents and the
questions those documents answer (train/data.py turns worlds into samples and the eval set).

Every entity's facts are drawn fresh per world: names from syllables (a fraction from a small
recurring pool, so one name is seen with contradicting facts across samples), attribute values
from shared pools, both in train/lexicon.py. `World` builds the entities and relations;
`DOC_WRITERS` write one document per entity (a title line, then one sentence per fact, each kind
of fact with one phrasing); `one_hop` and `two_hop` write the questions whose answers those
sentences state.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from lexicon import (ANIMALS, COLORS, COMPANY_KINDS, FEATURES, HOBBIES, MATERIALS, OBJECT_KINDS, OCCUPATIONS,
                     PRODUCTS, RECURRING_CITIES, RECURRING_COMPANY_ROOTS, RECURRING_COUNTRIES,
                     RECURRING_FIRST, RECURRING_SURNAMES, city_name, company_root, country_name, first_name,
                     recurring, river_name, surname, word)


# ----------------------------------------------------------------------------- the world

# words that many names share: a company's kind, an object's kind
GENERIC_WORDS = {'the'} | {w.lower() for w in COMPANY_KINDS} | {w.lower() for w in OBJECT_KINDS}


KINDS = ('person', 'company', 'city', 'object')


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

    def __init__(self, rng: random.Random, n_docs: int, crowd: str | None = None):
        """crowd: None, or a kind ('person', ...) that gets most of the documents, so that many
        entities of one kind state the same relations and a question is answered only by
        matching its name (training's crowded rows; the eval set never uses them)."""
        self.rng = rng
        self.used: set[str] = set()
        self.persons: list[Entity] = []
        self.companies: list[Entity] = []
        self.cities: list[Entity] = []
        self.objects: list[Entity] = []
        n_docs = max(n_docs, 3)
        w = [0.40, 0.20, 0.20, 0.20]
        if crowd is not None:
            w = [0.7 if k == crowd else 0.1 for k in KINDS]
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
    e.sentences = {attr: text for (attr, _), text in zip(keep, out)}
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


def notes(e: Entity) -> dict[str, tuple[str, str]]:
    """Each stated fact of `e`, by attribute, cut before its value: ("Maren Tolvaski lives in", " Drunavik.").
    The prefix names the subject and the relation, so the value after it is found only by
    matching both in the documents: the lookup a question needs, in the fact's own words.
    (The river's sentence names the river before its city, so it has no such cut.)"""
    out = {}
    for attr, text in getattr(e, 'sentences', {}).items():
        if attr == 'river':
            continue
        start = text.lower().find(e.name.lower()) + len(e.name)  # an object's name starts 'the'
        i = text.find(' ' + answer_of(e, attr), start)
        if i > 0:
            out[attr] = (text[:i], text[i:])
    return out


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
