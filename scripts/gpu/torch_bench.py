#!/usr/bin/env python3
"""PyTorch reference for the GPU kit: the same model shapes as LegoKV's engine
benchmark (src/bench/shapes.json), random weights, float32 with TF32 off,
scaled-dot-product attention, on the same GPU and in the same call.

Measures, each the median of several runs timed with CUDA events after a
warm-up: prefill of N tokens (logits of the last row only, as LegoKV's
prefill), decode steps with a KV cache after a 512-token prefill, and the
device-to-device copy bandwidth (bytes read + written). Writes one JSON file.

    python3 torch_bench.py --out torch.json [--models a,b] [--lengths 512,2048,8192]
        [--budget-s 120] [--device cuda|cpu]
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))


def load_shapes():
    for p in (os.path.join(HERE, 'shapes.json'), os.path.join(HERE, '..', '..', 'src', 'bench', 'shapes.json')):
        if os.path.exists(p):
            with open(p) as f:
                return json.load(f)
    sys.exit('shapes.json not found beside torch_bench.py or in src/bench/')


def timer(device):
    """Returns a function that times fn() in ms: CUDA events on a GPU, perf_counter on the CPU."""
    if device == 'cuda':
        def run(fn):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            torch.cuda.synchronize()
            return s.elapsed_time(e)
        return run

    def run_cpu(fn):
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1000
    return run_cpu


def build(shape, device):
    cfg = dict(shape)
    model_type = cfg.pop('model_type')
    conf = transformers.AutoConfig.for_model(model_type, **cfg)
    conf._attn_implementation = 'sdpa'
    torch.manual_seed(0)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(conf, dtype=torch.float32, attn_implementation='sdpa')
    return model.eval(), conf


def flops(conf, n):
    h, i, L = conf.hidden_size, conf.intermediate_size, conf.num_hidden_layers
    hd = getattr(conf, 'head_dim', None) or h // conf.num_attention_heads
    q, kv = conf.num_attention_heads * hd, conf.num_key_value_heads * hd
    per_layer = h * (q + 2 * kv) + q * h + 3 * h * i
    matmul = 2 * n * per_layer * L + 2 * h * conf.vocab_size
    attention = 4 * (n * (n + 1) / 2) * conf.num_attention_heads * hd * L
    return matmul + attention


def bench_model(name, shape, lengths, device, decode_steps, deadline):
    t_build = time.perf_counter()
    model, conf = build(shape, device)
    rows = []
    time_ms = timer(device)
    params = sum(p.numel() for p in model.parameters())
    print(f'[torch {device}] {name}: {params / 1e6:.0f}M params, built in {time.perf_counter() - t_build:.1f} s', flush=True)
    gen = torch.Generator(device='cpu').manual_seed(1)
    with torch.inference_mode():
        for n in lengths:
            if time.perf_counter() > deadline:
                rows.append({'model': name, 'tokens': n, 'skipped': 'out of time'})
                continue
            ids = torch.randint(0, conf.vocab_size, (1, n), generator=gen).to(device)
            fwd = lambda: model(input_ids=ids, use_cache=False, logits_to_keep=1)
            fwd()
            reps = 3 if n <= 2048 else 2
            ms = statistics.median(time_ms(fwd) for _ in range(reps))
            row = {'model': name, 'tokens': n, 'prefill_ms': ms, 'tokens_per_s': n / ms * 1000,
                   'gflops': flops(conf, n) / ms / 1e6, 'params': params, 'dtype': 'float32', 'tf32': False, 'attention': 'sdpa'}
            if n == lengths[0] and decode_steps:
                cache = transformers.DynamicCache()
                out = model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
                tok = out.logits[:, -1:].argmax(-1)
                out = model(input_ids=tok, past_key_values=cache, use_cache=True)  # warm
                tok = out.logits[:, -1:].argmax(-1)

                def steps():
                    nonlocal tok
                    for _ in range(decode_steps):
                        o = model(input_ids=tok, past_key_values=cache, use_cache=True)
                        tok = o.logits[:, -1:].argmax(-1)
                ms_dec = time_ms(steps)
                row.update({'decode_tokens_per_s': decode_steps / ms_dec * 1000, 'decode_context': n, 'decode': 'transformers DynamicCache, eager Python loop'})
            rows.append(row)
            print(f"[torch {device}] {name} prefill {n}: {ms:.1f} ms, {row['tokens_per_s']:.0f} tok/s, {row['gflops']:.0f} GFLOP/s"
                  + (f"; decode {row['decode_tokens_per_s']:.1f} tok/s" if 'decode_tokens_per_s' in row else ''), flush=True)
    del model
    if device == 'cuda':
        torch.cuda.empty_cache()
    return rows


def copy_bandwidth(device):
    n = (1 << 30) // 4 if device == 'cuda' else (1 << 26) // 4
    a = torch.empty(n, dtype=torch.float32, device=device).uniform_()
    b = torch.empty_like(a)
    time_ms = timer(device)
    b.copy_(a)
    ms = statistics.median(time_ms(lambda: b.copy_(a)) for _ in range(10))
    return 2 * a.numel() * 4 / (ms / 1000) / 1e9


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--out', required=True)
    p.add_argument('--models', default='smollm2-135m,qwen2.5-0.5b,llama-3.2-1b,llama-3.2-3b,gemma-3-270m')
    p.add_argument('--lengths', default='512,2048,8192')
    p.add_argument('--decode-steps', type=int, default=32)
    p.add_argument('--budget-s', type=float, default=150)
    p.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision('highest')
    deadline = time.perf_counter() + a.budget_s
    shapes = load_shapes()
    lengths = [int(x) for x in a.lengths.split(',')]
    gpu = torch.cuda.get_device_name(0) if a.device == 'cuda' else 'cpu'
    report = {'device': gpu, 'torch': torch.__version__, 'transformers': transformers.__version__, 'dtype': 'float32', 'tf32': False, 'rows': []}
    report['copy_gbytes_per_s'] = copy_bandwidth(a.device)
    print(f'[torch {gpu}] copy bandwidth {report["copy_gbytes_per_s"]:.0f} GB/s (read + written)', flush=True)

    def save():
        with open(a.out, 'w') as f:
            json.dump(report, f, indent=1)
    save()
    for name in a.models.split(','):
        if time.perf_counter() > deadline:
            report['rows'].append({'model': name, 'skipped': 'out of time'})
            continue
        try:
            report['rows'] += bench_model(name, shapes[name], lengths, a.device, a.decode_steps, deadline)
        except Exception as e:  # one shape failing (e.g. out of memory) must not lose the others
            report['rows'].append({'model': name, 'error': f'{type(e).__name__}: {e}'})
            print(f'[torch {gpu}] {name}: {type(e).__name__}: {e}', flush=True)
        save()
    save()


if __name__ == '__main__':
    main()
