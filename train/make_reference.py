#!/usr/bin/env python3
"""Records transformers' outputs for the exported qa-demo model, as the outside reference
that tests/engine/qa-demo.test.ts compares LegoKV's engine and tokenizer with.

    python train/make_reference.py [--model public/models/qa-demo] [--out tests/fixtures/qa-demo]

For the first held-out case that fits in --max-tokens, it writes reference.json: the prompt
text (the case's chunks joined, then its question: evaluate.py's `concat` layout), its token ids
from the `tokenizers` package (BOS first), the last position's logits (f32, little-endian,
base64) from transformers' LlamaForCausalLM in float32, and transformers' greedy continuation.
Developers run this after training; CI only reads the file.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..'))
sys.path.insert(0, HERE)

from evaluate import DEFAULT_DATA, DEFAULT_MODEL, concat_text  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--model', default=DEFAULT_MODEL)
    ap.add_argument('--data', default=DEFAULT_DATA)
    ap.add_argument('--out', default=os.path.join(ROOT, 'tests', 'fixtures', 'qa-demo'))
    ap.add_argument('--max-tokens', type=int, default=1200)
    ap.add_argument('--new-tokens', type=int, default=8)
    a = ap.parse_args(argv)

    import numpy as np
    import torch
    import transformers
    from tokenizers import Tokenizer
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    tok = Tokenizer.from_file(os.path.join(a.model, 'tokenizer.json'))
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32).eval()
    cfg = model.config
    cases = [json.loads(line) for line in open(a.data)]
    for c in cases:
        text = concat_text(c)  # the whole context as one sequence, as evaluate.py's `concat` layout
        ids = [cfg.bos_token_id] + tok.encode(text, add_special_tokens=False).ids
        if len(ids) <= a.max_tokens:
            break
    else:
        raise SystemExit(f'no case fits in {a.max_tokens} tokens')
    with torch.no_grad():
        x = torch.tensor([ids])
        logits = model(x).logits[0, -1].float().numpy().astype('<f4')
        out = model.generate(x, max_new_tokens=a.new_tokens, do_sample=False, eos_token_id=None,
                             pad_token_id=cfg.pad_token_id)[0, len(ids):].tolist()
    os.makedirs(a.out, exist_ok=True)
    ref = {
        'generator': f'train/make_reference.py, transformers {transformers.__version__}, torch {torch.__version__}, float32',
        'case': c['id'], 'text': text, 'tokens': ids, 'vocab': int(logits.shape[0]),
        'last_logits_f32_base64': base64.b64encode(logits.tobytes()).decode(),
        'greedy': out, 'greedy_text': tok.decode(out),
    }
    path = os.path.join(a.out, 'reference.json')
    with open(path, 'w') as f:
        json.dump(ref, f, indent=1)
        f.write('\n')
    print(f'{path}: case {c["id"]}, {len(ids)} prompt tokens, greedy {tok.decode(out)!r}, '
          f'logit range {float(np.ptp(logits)):.2f}')


if __name__ == '__main__':
    main()
