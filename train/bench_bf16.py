#!/usr/bin/env python3
"""What bfloat16 autocast buys on this CPU, float32 and bf16 side by side in one run: a matmul of the
model's FFN shape, and one uncompiled forward and backward pass of the qa-demo model on 2 x 2,048 tokens.
The figures behind `--bf16 auto` (train/args.py).

    python train/bench_bf16.py [--threads 2] [--reps 4]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def best_seconds(fn, reps: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--reps', type=int, default=4)
    a = ap.parse_args(argv)
    import torch

    from machine import cpu_has, machine_name
    from model import ModelArgs, TinyLlama
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    flags = [f for f in ('amx_bf16', 'avx512_bf16') if cpu_has(f)]
    print(f"{machine_name()}, {a.threads} thread(s), torch {torch.__version__}, bf16 flags: {', '.join(flags) or 'none'}")

    x, w = torch.randn(4096, 256), torch.randn(704, 256)
    flop = 2 * 4096 * 256 * 704
    pairs = {dt: (x.to(dt), w.to(dt).T.contiguous()) for dt in (torch.float32, torch.bfloat16)}
    mm = {dt: best_seconds(lambda p=p: p[0] @ p[1], a.reps * 5) for dt, p in pairs.items()}
    print(f'matmul 4096x256x704: f32 {flop / mm[torch.float32] / 1e9:.1f} GFLOP/s, '
          f'bf16 {flop / mm[torch.bfloat16] / 1e9:.1f} GFLOP/s, bf16 {mm[torch.float32] / mm[torch.bfloat16]:.2f}x')

    model = TinyLlama(ModelArgs(vocab_size=4096, hidden_size=256, intermediate_size=704, num_hidden_layers=6,
                                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048))
    ids = torch.randint(3, 4096, (2, 2048))
    pos = torch.arange(2048)[None].expand(2, -1)

    def step(bf16: bool):
        with torch.autocast('cpu', dtype=torch.bfloat16, enabled=bf16):
            out = model(ids, pos, None)
        out.float().logsumexp(-1).mean().backward()
        model.zero_grad(set_to_none=True)

    fb = {bf: best_seconds(lambda bf=bf: step(bf), a.reps) for bf in (False, True)}
    print(f'forward+backward, 2x2048 tokens: f32 {fb[False]:.2f} s, bf16 {fb[True]:.2f} s, '
          f'bf16 {fb[False] / fb[True]:.2f}x')


if __name__ == '__main__':
    main()
