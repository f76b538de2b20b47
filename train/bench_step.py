#!/usr/bin/env python3
"""Where a training step's time goes, per row class: train.py's own model, optimizers and compiled loss
(train_step.py) on real packed batches, timed in parts (building the batch, forward, backward, optimizer
step), then the attention kernels' share of one uncompiled forward and backward pass (torch.profiler),
and the share of the row slots that hold real tokens (the rest is padding the fixed shapes need).

    python train/bench_step.py [--steps 6] [--classes 0,1,2,3] [--out FILE.json] [train.py's options]
    python train/bench_step.py --out train/logs/bench_step.json   # the figures in the qa-demo card

Steps run back to back, so run it on a quiet machine, not beside a training run.
"""
from __future__ import annotations

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def attention_share(forward_loss, model, b, sup) -> float:
    """The scaled-dot-product-attention kernels' share of one eager forward and backward pass."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        loss = forward_loss(b['ids'], b['pos'], b['Ld'], b['mask'].qa_mask, b['labels'], b['weights'], sup)[0]
        loss.backward()
    model.zero_grad(set_to_none=True)
    ev = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in ev)
    return sum(e.self_cpu_time_total for e in ev if 'scaled_dot_product' in e.key) / total


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--steps', type=int, default=6, help='timed steps per row class (after 2 warm-up steps)')
    ap.add_argument('--classes', default='0,1,2,3', help='row classes (packing.ROW_CLASSES), comma-separated')
    ap.add_argument('--out', default='', help='also write the figures to this JSON file')
    own, rest = ap.parse_known_args(argv)
    from args import parse_args
    a = parse_args(rest)  # the rest are train.py's options
    n, classes, out = own.steps, [int(c) for c in own.classes.split(',')], own.out
    import torch
    from tokenizers import Tokenizer

    import train_step
    from machine import machine_name
    train_step.resolve_bf16(a)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    tok = Tokenizer.from_file(os.path.join(a.out, 'tokenizer.json'))
    packer = train_step.packer(tok, a)
    model = train_step.model(a)
    _, _, peaks = train_step.optimizers(model, a)
    forward_loss = train_step.loss_fn(model, a)
    step_fn = torch.compile(forward_loss) if a.compile else forward_loss
    bench = {'machine': machine_name(), 'threads': a.threads, 'torch': torch.__version__, 'bf16': bool(a.bf16),
             'compile': bool(a.compile), 'tokens_per_step': a.tokens_per_step, 'steps': n, 'rows': []}
    print(header(bench), flush=True)
    for c in classes:
        parts, real = [0.0] * 4, 0
        for i in range(n + 2):
            t = [time.perf_counter()]
            b = packer.batch(f'bench-{c}-{i}', 1.0, a.tokens_per_step, row_class=c)
            t.append(time.perf_counter())
            sup = train_step.sup_of(b, a)
            loss = step_fn(b['ids'], b['pos'], b['Ld'], b['mask'].qa_mask, b['labels'], b['weights'], sup)[0]
            t.append(time.perf_counter())
            model.zero_grad(set_to_none=True)
            loss.backward()
            t.append(time.perf_counter())
            train_step.update(model, peaks)
            t.append(time.perf_counter())
            if i >= 2:
                parts = [p + (t[k + 1] - t[k]) / n for k, p in enumerate(parts)]
                real += int((b['kind'] >= 0).sum()) / n
        B, L = b['ids'].shape
        row = dict(zip(PARTS, (round(p, 4) for p in parts)), Ld=b['Ld'], Lq=L - b['Ld'], rows=B,
                   real_share=round(real / (B * L), 4),
                   attention_share=round(attention_share(forward_loss, model, b, sup), 4))
        bench['rows'].append(row)
        print(table_row(row), flush=True)
    if out:
        with open(out, 'w') as f:
            json.dump(bench, f, indent=1)
            f.write('\n')
        print(f'wrote {out}')


PARTS = ('batch', 'forward', 'backward', 'optimizer')


def header(bench: dict) -> str:
    """The table's caption line and header (markdown), for the console and the card."""
    return (f"{bench['machine']}, {bench['threads']} thread(s), torch {bench['torch']}, bf16 {bench['bf16']}, "
            f"compile {bench['compile']}, {bench['tokens_per_step']} slots per step; seconds per step, the mean "
            f"of {bench['steps']} after 2 warm-up steps\n\n"
            '| row: document + QA slots, x rows | batch | forward | backward | optimizer | **step** '
            '| slots holding real tokens | attention kernels\' share (uncompiled) |\n'
            '| --- | --- | --- | --- | --- | --- | --- | --- |')


def step_seconds(r: dict) -> float:
    """A table row's whole step: the sum of its parts."""
    return sum(r[p] for p in PARTS)


def table_row(r: dict) -> str:
    return (f"| {r['Ld']} + {r['Lq']}, x {r['rows']} | " + ' | '.join(f'{r[p]:.3f}' for p in PARTS)
            + f" | **{step_seconds(r):.3f}** | {r['real_share']:.0%} | {r['attention_share']:.0%} |")


def table(bench: dict) -> str:
    return header(bench) + '\n' + '\n'.join(table_row(r) for r in bench['rows'])


if __name__ == '__main__':
    main()
