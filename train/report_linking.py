"""The qa-demo card's "Linking algorithms" section: F1 and TTFT per linking algorithm from the
evaluation runner's JSON (docs/results/eval-qa-demo.json), and the attention-sink shares at chunk
starts from `npm run sinks` (docs/results/sinks-qa-demo.json). Both commands are written here, so
the card names the command that regenerates each table."""
from __future__ import annotations

import json
import os
from collections import defaultdict
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..'))

EVAL_JSON = os.path.join(ROOT, 'docs', 'results', 'eval-qa-demo.json')
SINKS_JSON = os.path.join(ROOT, 'docs', 'results', 'sinks-qa-demo.json')
EVAL_CMD = ('LEGOKV_NODE_BACKEND=opengles npm run eval -- --model qa-demo --data train/eval/qa-demo-eval.jsonl --algorithms '
            'full,naive,legolink:1,legolink:2,legolink:4,legolink:16,legolink0,attnlink:16,'
            'cacheblend:0.05,cacheblend:0.15,cacheblend:0.3 --max-new-tokens 16 '
            '--out docs/results/eval-qa-demo.json --resume')
BUSY_HOST_CORES = 0.25  # src/eval/runner.ts BUSY_HOST_CORES
SINKS_CMD = ('npm run sinks -- --model qa-demo --data train/eval/qa-demo-eval.jsonl '
             '--limit 6 --algorithms naive,legolink:16,full --out docs/results/sinks-qa-demo.json')


def run_seconds(run: dict) -> float:
    """Wall seconds of one run of the evaluation runner (0 while it has not written finished_at)."""
    if not run.get('finished_at'):
        return 0.0
    t = lambda s: datetime.fromisoformat(s.replace('Z', '+00:00'))
    return (t(run['finished_at']) - t(run['started_at'])).total_seconds()


def busy_host_text(cases: list) -> str | None:
    """The runner's `other_cpu` (cores other programs took while a case's answers were timed), one figure per
    case, as src/eval/report.ts busyHostNote words it; None when no case recorded it."""
    per_case = {c['id']: c['other_cpu'] for c in cases if isinstance(c.get('other_cpu'), (int, float))}
    if not per_case:
        return None
    v = list(per_case.values())
    busy = sum(1 for x in v if x > BUSY_HOST_CORES)
    head = (f"Other programs' CPU while the cases were timed (`other_cpu`): at most {max(v):.2f} cores, "
            f"{sum(v) / len(v):.2f} on average over {len(v)} cases")
    if not busy:
        return head + ': a quiet host.'
    return (f"{head}; **{busy} case{'s were' if busy > 1 else ' was'} timed on a busy host** (over "
            f"{BUSY_HOST_CORES} of a core), so on a CPU adapter their TTFTs are inflated, while *× full*, measured "
            "side by side within each case, holds.")


def later_start_ratio(sk: dict, algorithm: str) -> float | None:
    """Chunks 2 and later under one algorithm of the sinks JSON: a chunk start's share over one ordinary token's,
    weighted by the cases that have the chunk (as src/eval/report-findings.ts computes it for docs/RESULTS.md)."""
    a = sk['algorithms'].get(algorithm)
    later = [c for c in (a or {}).get('per_chunk', []) if c['chunk'] > 1 and c['cases'] and c['token_share'] > 0]
    if not later:
        return None
    w = sum(c['cases'] for c in later)
    return sum(c['cases'] * c['start_share'] / sk['sink_tokens'] / c['token_share'] for c in later) / w


def linking_verdict() -> str:
    """What the linking table and the sinks say about this model, in plain words, from the same JSON: whether
    naive linking scores as full recompute does, and whether chunk starts draw a sink's attention."""
    ev = json.load(open(EVAL_JSON)) if os.path.exists(EVAL_JSON) else None
    sk = json.load(open(SINKS_JSON)) if os.path.exists(SINKS_JSON) else None
    by = {r['algorithm']: r for r in (ev or {}).get('results', []) if r['n']}
    if 'naive' not in by or 'full' not in by or not sk:
        return ''
    naive, full = by['naive'], by['full']
    ratio = later_start_ratio(sk, 'naive')
    same = abs(naive['accuracy'] - full['accuracy']) <= 0.01
    no_sink = ratio is not None and ratio < 10
    facts = (f"on its {full['n']} held-out cases naive linking scores F1 {naive['accuracy']:.3f} against full "
             f"recompute's {full['accuracy']:.3f} (agreement with full {naive['agreement_with_full']:.3f}), and under "
             f"naive a chunk start draws {ratio:.1f}x the attention of an ordinary token of its chunk (sinks report, "
             f"chunks 2 and later; a pretrained model's sink draws 10x or more)")
    if same and no_sink:
        return (f"**qa-demo has no attention sink, and naive linking equals full recompute on it:** {facts}. "
                "Trained from scratch with attention supervision, it never learned to park attention on a "
                "sequence's first token, so a chunk that starts with its own BOS costs it nothing. Its F1 is "
                "therefore no evidence for linking quality: the gap that EPIC and CacheBlend close cannot appear "
                "here. The real-model tables are in docs/RESULTS.md.")
    return f"**Linking on qa-demo, as measured:** {facts}."


def linking_section(n_layers: int) -> str:
    """F1 and TTFT per linking algorithm (the evaluation runner's JSON) and the sink shares (npm run sinks);
    n_layers: the model's depth, for the note on CacheBlend's check layers."""
    out = []
    ev = json.load(open(EVAL_JSON)) if os.path.exists(EVAL_JSON) else None
    if ev:
        # finished cases: answered by every algorithm (what `npm run eval --resume` keeps)
        answered = defaultdict(set)
        for c in ev['cases']:
            answered[c['id']].add(c['algorithm'])
        done = sum(1 for algs in answered.values() if algs >= set(ev['algorithms']))
        runs = len(ev.get('resumed', [])) + 1
        out.append(f"`{ev.get('command', EVAL_CMD)}` on **{ev['adapter']}**, {ev['backend']} backend, greedy "
                   f"(LegoKV's own engine and WGSL kernels, not transformers), {runs} run{'s' if runs > 1 else ''}. "
                   "Chunks are compiled before timing; each chunk keeps its own BOS, so `full` here is the `linked` "
                   "layout above.\n")
        if not ev.get('complete'):
            out.append(f"**Partial: {done} of the {ev.get('cases_planned', '?')} held-out cases so far.** The same "
                       'command continues it (`--resume` keeps the finished cases); then `python train/report.py`.\n')
        wall_s = sum(run_seconds(x) for x in ev.get('resumed', []) + [ev])
        if done and wall_s:
            total = f'{wall_s / 3600:.1f} h' if wall_s >= 7200 else f'{wall_s / 60:.0f} min'
            each = f'{wall_s / 60 / done:.1f} min' if wall_s / done >= 120 else f'{wall_s / done:.0f} s'
            out.append(f"Wall time{'' if ev.get('complete') else ' so far'}: {total} for {done} cases, {each} a case "
                       "(model load, warm-up and each case's chunk compiles included).\n")
        busy = busy_host_text(ev['cases'])
        if busy:
            out.append(busy + '\n')
        cpus = [x.get('cpu_model', 'not recorded') for x in ev.get('resumed', []) + [ev]]
        if len(set(cpus)) > 1:
            tally = ', '.join(f"{cpus.count(m)} {'with the CPU' if m == 'not recorded' else 'on'} {m}"
                              for m in dict.fromkeys(cpus))
            out.append(f"Of its {len(cpus)} runs, {tally} (the same adapter string): the "
                       "mean and median TTFTs mix hosts. `× full` compares like with like: for each case, full's TTFT "
                       "over the algorithm's, both measured on that case in the same run; the column is their median.\n")
        out.append('| algorithm | cases | F1 | agreement with full | TTFT mean ms | TTFT median ms | × full '
                   '| recompute ms | recomputed tokens |')
        out.append('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
        for r in ev['results']:
            if not r['n']:  # no finished case yet
                continue
            agree = r.get('agreement_with_full')
            sp = r.get('speedup_vs_full_median')  # the runner's aggregate (src/eval/runner.ts)
            out.append(f"| {r['algorithm']} | {r['n']} | {r['accuracy']:.3f} | "
                       f"{'-' if agree is None else f'{agree:.3f}'} | {r['ttft_ms_mean']:.0f} | "
                       f"{r['ttft_ms_median']:.0f} | {'-' if sp is None else f'{sp:.2f}'} | "
                       f"{r['breakdown_ms_mean']['recompute']:.0f} | {100 * r['recompute_fraction']:.1f}% |")
        if any(r['algorithm'].startswith('cacheblend') and r['n'] for r in ev['results']):
            out.append(f"\n`recomputed tokens` is the share of prompt rows an algorithm recomputes (for cacheblend:r, "
                       "the rows it keeps after its check layer). cacheblend:r also runs its first two layers (layer 0, "
                       "and layer 1, its check layer, where it measures each token's V deviation; "
                       "`src/kvlink/cacheblend.ts`) over every token before keeping r of them: on this "
                       f"{n_layers}-layer model that is {2 / n_layers:.0%} of Full Recompute's work whatever r is, which is where most of its TTFT goes. On a deep model "
                       "(CacheBlend's have 32 or more layers) the same two layers are a few percent.")
    else:
        out.append(f'Not measured yet for these weights (tables for earlier weights are in this card\'s git history): '
                   f'run `{EVAL_CMD}`, then `python train/report.py`.')
    out.append('')
    if os.path.exists(SINKS_JSON):
        sk = json.load(open(SINKS_JSON))
        out.append(f"### Attention sinks at chunk starts\n\n`{sk['command']}` on **{sk['adapter']}**: the share of "
                   f"the question rows' attention (softmax, mean over {sk['cases']} cases, {sk['layers']} layers, every "
                   f"head and question row) that lands on the first {sk['sink_tokens']} token(s) of each linked chunk, "
                   "against the share of one ordinary token of the same chunk. Chunk 1 starts the prompt; every "
                   "later chunk starts with its own BOS at a later position"
                   + (", except under prompt, the ordinary prompt, whose one BOS starts chunk 1 and whose later chunks "
                      "start with their own first token" if 'prompt' in sk['algorithms'] else '') + ".\n")
        out.append('| algorithm | chunk | cases | start share | whole-chunk share | one ordinary token | start / ordinary token |')
        out.append('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
        for al, v in sk['algorithms'].items():
            for c in v['per_chunk']:
                ratio = c['start_share'] / sk['sink_tokens'] / c['token_share'] if c['token_share'] else float('nan')
                out.append(f"| {al} | {c['chunk']} | {c['cases']} | {c['start_share']:.4f} | {c['chunk_share']:.3f} | "
                           f"{c['token_share']:.4f} | {ratio:.1f} |")
    else:
        out.append(f'Attention-sink shares not measured yet: run `{SINKS_CMD}`.')
    return '\n'.join(out)
