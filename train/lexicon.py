"""The generator's vocabulary: names built from syllables (people, cities, countries, companies,
rivers), the small recurring pool of names that come back across samples with different facts, and
the shared pools of attribute values (occupations, colors, products, ...). train/world.py draws
every entity's name and facts from here."""
from __future__ import annotations

import random

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
