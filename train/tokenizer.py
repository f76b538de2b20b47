#!/usr/bin/env python3
"""Byte-level BPE for the qa-demo model, trained on text from train/data.py.

    python train/tokenizer.py [--vocab 4096] [--out public/models/qa-demo]

Writes tokenizer.json and tokenizer_config.json. Special tokens: <|pad|> = 0, <|bos|> = 1,
<|eos|> = 2. The post-processor prepends <|bos|> (so `encode(text)` with special tokens
starts with BOS, which is how LegoKV's loader learns that the model uses BOS). The
pre-tokenizer isolates every newline before the GPT-2 byte-level split, so a text cut at a
newline tokenizes to the same ids as its parts tokenized separately. Digits stay together
(the byte-level split keeps a number in one piece), so BPE learns frequent numbers such as
years as one or two tokens, and an answer copies a year as a whole, not digit by digit.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.normpath(os.path.join(HERE, '..', 'public', 'models', 'qa-demo'))
SPECIALS = ['<|pad|>', '<|bos|>', '<|eos|>']
PAD, BOS, EOS = 0, 1, 2


def corpus(seed: int, n: int):
    rng = random.Random(seed)
    for _ in range(n):
        s = data.make_sample(rng, rng.choice([200, 400, 800]), n_questions=4)
        yield ''.join(s.docs)
        for qa in s.qas:
            yield data.question_text(qa, s.instruction) + data.answer_text(qa) + '\n'


def build(vocab_size: int, seed: int = 12345, n_samples: int = 3000) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex('\n'), behavior='isolated'),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus(seed, n_samples), trainer=trainer)
    assert [tok.token_to_id(t) for t in SPECIALS] == [PAD, BOS, EOS]
    tok.post_processor = processors.TemplateProcessing(
        single='<|bos|> $A', pair='<|bos|> $A <|bos|> $B', special_tokens=[('<|bos|>', BOS)])
    return tok


def tokenizer_config(max_len: int = 2048) -> dict:
    return {
        'tokenizer_class': 'PreTrainedTokenizerFast',
        'bos_token': '<|bos|>',
        'eos_token': '<|eos|>',
        'pad_token': '<|pad|>',
        'add_bos_token': True,
        'add_eos_token': False,
        'clean_up_tokenization_spaces': False,
        'model_max_length': max_len,
        'added_tokens_decoder': {
            str(i): {'content': t, 'lstrip': False, 'rstrip': False, 'normalized': False, 'single_word': False,
                     'special': True} for i, t in enumerate(SPECIALS)},
    }


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument('--vocab', type=int, default=4096)
    ap.add_argument('--out', default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    tok = build(args.vocab)
    os.makedirs(args.out, exist_ok=True)
    tok.save(os.path.join(args.out, 'tokenizer.json'))
    with open(os.path.join(args.out, 'tokenizer_config.json'), 'w') as f:
        json.dump(tokenizer_config(), f, indent=2)
        f.write('\n')
    probe = "Title: Maren Tolvaski\n Maren Tolvaski was born in 1987.\n\nQuestion: In what year was Maren Tolvaski born?\nAnswer: 1987"
    enc = tok.encode(probe)
    print(f'vocab {tok.get_vocab_size()} → {args.out}; probe: {len(enc.ids)} tokens: {enc.tokens}')


if __name__ == '__main__':
    main()
