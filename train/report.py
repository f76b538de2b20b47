#!/usr/bin/env python3
"""Writes the qa-demo model card (docs/models/qa-demo.md) and the training-curve chart
(train/logs/curve.svg) from the training logs and the held-out results. No figure in the
card is typed by hand.

    python train/report.py
"""
from __future__ import annotations

import csv
import json
import os
from collections import defaultdict

from curve import svg_chart
from packing import WARMUP
from report_budget import TARGET_F1, hour_line, hour_section, read_hours
from report_linking import EVAL_CMD, SINKS_CMD, linking_section, linking_verdict
from stages import commands, later_stage_text, precision
from stages import of as stages_of

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..'))
LOGS = os.path.join(HERE, 'logs')
MODEL = os.path.join(ROOT, 'public', 'models', 'qa-demo')
CARD = os.path.join(ROOT, 'docs', 'models', 'qa-demo.md')


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def optimizer_text(a) -> str:
    adamw = f"AdamW (betas 0.9/0.95, weight decay {a['weight_decay']}, grad clip 1.0), peak LR {a['lr']}"
    if a.get('optimizer', 'adamw') != 'muon':
        return adamw
    return (f"Muon (`train/muon.py`: Nesterov momentum 0.95, 5 Newton-Schulz steps) for the blocks' weight "
            f"matrices, peak LR {a['muon_lr']}; {adamw} for the embedding and the norms")


def fmt(x, d=3):
    return f'{x:.{d}f}' if isinstance(x, float) else str(x)


def status_text(results) -> str:
    """The card's status line: held-out F1 against the target, and what the model does and does not do."""
    swap = (results or {}).get('name_swap')
    bands = (results or {}).get('by_length') or []
    reach = ''
    reads = bool(swap) and swap['changed'] >= 0.5
    if len(bands) >= 2 and reads:
        held_out = results['layouts']['concat']['summary']
        h1, h2 = held_out['f1_1hop'], held_out['f1_2hop']
        reach = (f" It reads the name in the question (asked again with the other document's name, its first answer "
                 f"token changes in {swap['changed']:.2f} of two-document cases and both answers are right in "
                 f"{swap['both_right']:.2f}; see the name swap below). One-hop questions are answered (held-out F1 "
                 f"{h1:.2f}), " + (f"two-hop ones mostly not ({h2:.2f}): the second lookup, through the entity that "
                                   "the first fact names, fails more as the documents grow" if h2 < 0.5 else
                                   f"two-hop ones mostly too ({h2:.2f}), the second lookup going through the entity "
                                   "that the first fact names") +
                 f" (two-hop F1 {bands[0]['f1_2hop']:.2f} over "
                 f"{bands[0]['lo']}-{bands[0]['hi']} tokens of documents, {bands[-1]['f1_2hop']:.2f} over "
                 f"{bands[-1]['lo']:,}-{bands[-1]['hi']:,})")
    elif len(bands) >= 2 and swap:
        reach = (f": it picks among the values of the asked kind in the documents without reading the name in the "
                 f"question (asked again with the other document's name, its first answer token changes in only "
                 f"{swap['changed']:.2f} of two-document cases; see the name swap below), so its F1 falls as "
                 f"documents of the same kind multiply ({bands[0]['f1']:.2f} over {bands[0]['lo']}-{bands[0]['hi']} "
                 f"tokens of documents, {bands[-1]['f1']:.2f} over {bands[-1]['lo']:,}-{bands[-1]['hi']:,})")
    elif len(bands) >= 2:
        reach = (f": it reads short contexts (F1 {bands[0]['f1']:.2f} over {bands[0]['lo']}-{bands[0]['hi']} tokens of "
                 f"documents) and loses the thread as they grow ({bands[-1]['f1']:.2f} over "
                 f"{bands[-1]['lo']:,}-{bands[-1]['hi']:,}; see the table by context length)")
    if not results or 'concat' not in results['layouts']:
        return ''
    f1 = results['layouts']['concat']['summary']['f1']
    met = f1 >= TARGET_F1
    return (f"**Status: held-out F1 {f1:.3f} under Full Recompute (target: at least {TARGET_F1}), "
            f"{'met' if met else 'not met yet'}.**" + (reach + ('.' if reach else '') if met else
            (' Its answers are mostly of the right kind (a year, a city, a name from the documents) but often '
             'not the right one' if not reads else '') + reach + '. It is the '
            "app's default model all the same, with sample documents and its question framing, because the "
            'caching itself (compile, link, TTFT, attention maps) works the same whether the answer is right.'))


def main():
    run = json.load(open(os.path.join(LOGS, 'run.json')))
    if 'torch' not in run:
        try:
            from importlib.metadata import version
            run['torch'] = version('torch')
        except Exception:  # noqa: BLE001
            run['torch'] = ''
    train = read_csv(os.path.join(LOGS, 'train_log.csv'))
    dev = read_csv(os.path.join(LOGS, 'dev_log.csv'))
    results_path = os.path.join(HERE, 'eval', 'results.json')
    results = json.load(open(results_path)) if os.path.exists(results_path) else None
    svg_chart(train, dev, os.path.join(LOGS, 'curve.svg'))
    cfg = json.load(open(os.path.join(MODEL, 'config.json')))
    stages = stages_of(run)
    a = stages[0]['args']  # the model, data and loss: later stages only continue the optimization
    argv = stages[0]['argv']
    multi = len(stages) > 1
    precision_text = lambda s: ('bf16 autocast (matmuls and attention; weights, norms and loss in f32)'  # noqa: E731
                                if precision(s['args']) == 'bf16' else 'float32 throughout')
    stage_cmds = '; then '.join(f"`python train/train.py {' '.join(s['argv'])}`"
                                + (f" ({s['steps']:,} steps, {s['train_minutes']:.1f} min)" if multi else '')
                                for s in stages)
    stage_precisions = '; '.join((f'stage {i + 1}: ' if multi else '') + precision_text(s) for i, s in enumerate(stages))
    stage_rows = ''.join(f"| stage {i + 2} | {later_stage_text(s)} |\n" for i, s in enumerate(stages[1:]))
    reproduce_train = ('.cache/train-venv/bin/python train/reproduce.py     # runs these stages in order:\n' + ''.join(
        f"#   train/train.py {' '.join(s)}   # "
        + ('a further stage from the export, then export and eval\n' if i else 'tokenizer, eval set, training, export, eval\n')
        for i, s in enumerate(commands(run))))
    fixed_steps = any(x == '--steps' or x.startswith('--steps=') for x in argv)
    clock = (f"the {a['steps']:,} steps end the run unless {a['max_minutes']:g} minutes pass first, so the LR and "
             "the row mix follow the step" if fixed_steps else
             "on a slow machine the decay starts earlier and the run still ends on time")
    files = sorted(os.listdir(MODEL))
    sizes = {f: os.path.getsize(os.path.join(MODEL, f)) for f in files}

    # loss curve table: every ~10% of the run
    n = len(train)
    idx = sorted({min(n - 1, round(n * i / 10)) for i in range(1, 11)})
    win = 25
    curve_rows = []
    for i in idx:
        sl = train[max(0, i - win + 1): i + 1]
        mean = lambda k: sum(float(r[k]) for r in sl if r[k] != 'nan') / max(1, sum(1 for r in sl if r[k] != 'nan'))  # noqa: E731,E501
        curve_rows.append(f"| {train[i]['step']} | {int(train[i]['tokens']) / 1e6:.2f}M | {float(train[i]['minutes']):.1f} "
                          f"| {float(train[i]['lr']):.2e} | {mean('loss'):.3f} | {mean('doc_loss'):.3f} "
                          f"| {mean('answer_loss'):.3f} | {mean('answer_token_acc'):.3f} |")
    dev_rows = [f"| {r['step']} | {int(r['tokens']) / 1e6:.2f}M | {float(r['minutes']):.1f} | {float(r['dev_em']):.3f} "
                f"| {float(r['dev_f1']):.3f} | {float(r['dev_f1_1hop']):.3f} | {float(r['dev_f1_2hop']):.3f} "
                f"| {r.get('probe_first_acc') or '-'} |" for r in dev]

    held = ''
    qtype_rows = ''
    length_rows = '\n'.join(
        f"| {b['lo']:,}-{b['hi']:,} | {b['n']} | {b['f1']:.3f} | {b.get('f1_1hop', float('nan')):.3f} | "
        f"{b.get('f1_2hop', float('nan')):.3f} |" for b in (results or {}).get('by_length', []))
    length_part = '' if not length_rows else f"""
F1 against context length: {(results or {})['by_length'][0]['n']} fresh cases per band of document tokens (seed
999000 + the band's low end, never trained on), whole context as one sequence, same scoring. It separates not
reading at all from not reading far.

| document tokens | cases | F1 | F1 one hop | F1 two hops |
| --- | --- | --- | --- | --- |
{length_rows}
"""
    match = (results or {}).get('matching') or []
    matching_part = '' if not match else f"""
Reading by name: {match[0]['n']} crowded one-hop cases per size (seed 998000 + the document budget, never
trained on), where one kind of entity fills the documents, so every document states the asked relation and
only the name in the question tells them apart (`python train/evaluate.py`, `matching_sweep`). Scored by the
greedy first answer token; chance is one over the documents of that kind. A model that picks an answer of the
right kind without matching the name stays at chance.

| document tokens (mean) | cases | first answer token right | chance |
| --- | --- | --- | --- |
""" + '\n'.join(f"| {m['tokens']:,} | {m['n']} | {m['acc']:.3f} | {m['chance']:.3f} |" for m in match) + '\n'
    swap = (results or {}).get('name_swap')
    if swap:
        matching_part += f"""
Name swap: {swap['n']} crowded one-hop cases with exactly two documents of the asked kind (~170 tokens, seed
997000, never trained on) whose two entities differ in the asked value, each question asked once with either
document's name (`name_swap`). A model that reads the name gets both right; one that ignores it gives the
same first answer token twice, so at most one is right. The first answer token changes with the name in
**{swap['changed']:.3f}** of the cases; both are right in **{swap['both_right']:.3f}**.
"""
    examples = ''
    if results:
        lay = results['layouts']
        held_rows = []
        for name, desc in [('concat', 'whole context as one sequence: BOS + chunks joined + question'),
                           ('linked', 'every chunk with its own BOS (as KVCompile stores it), then the question')]:
            if name in lay:
                s = lay[name]['summary']
                held_rows.append(f"| {name} | {desc} | {s['n']} | **{s['f1']:.3f}** | {s['em']:.3f} "
                                 f"| {s.get('f1_1hop', float('nan')):.3f} | {s.get('f1_2hop', float('nan')):.3f} |")
        held = '\n'.join(held_rows)
        if 'concat' in lay:
            by = defaultdict(list)
            for c in lay['concat']['cases']:
                by[c['qtype']].append(c['f1'])
            qtype_rows = '\n'.join(f'| {k} | {len(v)} | {sum(v) / len(v):.3f} |' for k, v in sorted(by.items()))
            ex = lay['concat']['cases']
            wrong = [c for c in ex if c['f1'] < 1][:5]
            right = [c for c in ex if c['f1'] == 1][:3]
            examples = '\n'.join(f"| {c['id']} | {c['qtype']} | {c['answers'][0]} | {c['pred']} | {c['f1']:.2f} |"
                                 for c in right + wrong)

    crowd_row = '' if not a.get('crowd') else (
        f"| crowded rows | all rows during a warm-up (the first {a.get('crowd_warmup', WARMUP):.0%} of the run: short rows, one-hop questions), "
        f"then {a['crowd']:.0%}: one kind of entity fills the documents and the questions are about it, so every "
        "document states the asked relation and only the name in the question tells them apart |\n")
    sup_layers = [int(x) % cfg['num_hidden_layers'] for x in a.get('attn_sup_layers', '-3,-1').split(',')]
    sup_row = '' if not a.get('attn_sup') else (
        f"| attention supervision | plus {a['attn_sup']:g} x the mean -log attention mass that head 0 of one layer, at "
        "each block's last question token, puts on where the answer stands: the value's tokens in its supporting "
        f"fact (layer {sup_layers[0]}, counting from 0), and for a two-hop question the bridge entity's name in the "
        f"first fact (layer {sup_layers[1]}). The generator knows where each answer stands; without this the lookup "
        "did not form within the hour (no reading by name; the earlier figures are in this card's git history) |\n")
    hours = read_hours()
    status = status_text(results) + hour_line(run, hours)
    verdict = linking_verdict()
    if verdict:
        status += '\n\n' + verdict
    card = f"""# qa-demo: LegoKV's in-house document-QA model

A {run['params'] / 1e6:.1f}M-parameter Llama (`LlamaForCausalLM`) trained from scratch on the CPU ({run['train_minutes']:.0f}
minutes on a {run.get('machine', '2-core CPU')}, {' then '.join(dict.fromkeys(precision(s['args']) for s in stages))}), on procedurally generated multi-document question answering. It exists so that LegoKV's accuracy-against-TTFT
evaluation (EPIC / CacheBlend style: naive, full, legolink:k, cacheblend:r, ...) runs on a laptop CPU with a
model whose job is to answer questions about its documents (the linking table below says how long its 200 cases
took on a CPU WebGPU adapter, and a few cases run in CI). It knows nothing outside its
synthetic world of fictional people, companies, cities and objects: it is a test instrument, not an assistant.

{status}

Everything in this card is written by `python train/report.py` from the training logs (`train/logs/`) and
the held-out results (`train/eval/results.json`).

## Files (`public/models/qa-demo/`, the standard Hugging Face layout)

| file | bytes |
| --- | --- |
""" + '\n'.join(f'| `{f}` | {sizes[f]:,} |' for f in files) + f"""

Weights are stored as F16 safetensors (computation in f32 gives the same greedy answers: the export check
below compares the reloaded F16 model with the f32 training model). Tied input/output embeddings, so there
is no `lm_head.weight`.

## Model

| | |
| --- | --- |
| architecture | `LlamaForCausalLM` (model_type `llama`): RoPE, RMSNorm, SwiGLU MLP, grouped-query attention |
| parameters | **{run['params']:,}** (embeddings tied) |
| layers | {cfg['num_hidden_layers']} |
| hidden size | {cfg['hidden_size']} |
| MLP size | {cfg['intermediate_size']} |
| attention heads | {cfg['num_attention_heads']} query heads, {cfg['num_key_value_heads']} key/value heads, head dim {cfg.get('head_dim', cfg['hidden_size'] // cfg['num_attention_heads'])} |
| RoPE | default (no scaling), theta {cfg.get('rope_theta', (cfg.get('rope_parameters') or {}).get('rope_theta'))} |
| context | {cfg['max_position_embeddings']} positions (trained on rows of 256 to 2048 tokens) |
| vocabulary | {cfg['vocab_size']:,}: byte-level BPE trained on generated text; `<|pad|>` 0, `<|bos|>` 1, `<|eos|>` 2 |
| tokenizer | `tokenizer.json` (newlines split off before the GPT-2 byte-level split, numbers kept whole so a year is one or two tokens; the post-processor prepends `<|bos|>`), `tokenizer_config.json` (`PreTrainedTokenizerFast`, no chat template) |

## Prompt format

No instruction and no chat template: the documents, each a title line, then its sentences on one line
indented by one space, then a blank line; then the question. The model answers in a few words and stops with
`<|eos|>`. (The indent makes a name at the start of the body tokenize as it does everywhere else, after a
space.)

```
<|bos|>Title: Maren Tolvaski
 Maren Tolvaski works as a baker. Maren Tolvaski lives in Drunavik. ...

Title: Drunavik
 Drunavik is a city in Osmeria. The mayor of Drunavik is Pell Odrasa. ...

Question: Who is the mayor of the city where Maren Tolvaski lives?
Answer:
```

15% of the training samples put one instruction line before `Question:` (for example the evaluation runner's
default, "Answer the question based on the documents. Answer within 5 words."), so the model tolerates one.

## Data (`train/data.py`)

A seeded procedural generator; no text comes from anywhere else. Every sample is a fresh world: names are
built from syllables for every sample (a fifth of them come from a small recurring pool whose facts change from
sample to sample), attribute values come from shared pools, so the same name or value is attached to different
facts in different samples and the model has to read. Each entity has one document (title line, then one
sentence per fact in random order, some facts left out; every sentence names its subject in full, and each kind
of fact has one phrasing, which its question mirrors). Questions
are one hop (the answer is in the entity's own document: occupation, home city, employer, year of birth, pet,
founder, headquarters, product, population, mayor, owner, maker, ...) or two hops (the entity's document names
a second entity whose document holds the answer: "Who is the mayor of the city where X lives?", "Where is the
company that made the Y based?", ...). Documents not needed by the question are distractors. Within a sample
no two entities share a distinctive name word (first name, surname, company root, object stem).

An earlier recipe (several phrasings per fact, pronouns, filler sentences, names that collided on purpose; this
card's history in git has its figures) taught the model in the same hour what kind of answer a question wants,
but not to look it up. The text was made plainer, not the task smaller: the same worlds, relations, one- and
two-hop questions and distractors.

## Training (`train/train.py`)

| | |
| --- | --- |
| command | {stage_cmds}, {a['threads']} torch thread(s) |
| machine | {run.get('machine', 'a 2-core CPU VM')}, PyTorch {run.get('torch', '')} CPU, {stage_precisions}{', torch.compile' if a.get('compile') else ''} |
| wall time | **{run['train_minutes']:.1f} min** of training ({run['sessions']} session(s)) + {run.get('eval_minutes', 0):.1f} min held-out evaluation |
| steps | {run['steps']:,} |
| tokens seen | **{run['tokens_seen']:,}** (non-padding tokens processed; {a['tokens_per_step']:,}-token steps) |
| optimizer | {'stage 1: ' if multi else ''}{optimizer_text(a)}; {a['warmup']} warmup steps, constant, linear decay to {a['min_lr_frac']:g}x over the last {a['decay_frac']:.0%} of the run |
{stage_rows}| schedule clock | progress = max(step / {a['steps']}, minutes / {a['max_minutes']:g}): {clock} |
| seed | {a['seed']} (data of step s is drawn from seed "{a['seed']}-s", so a resumed run sees the same data) |
| packing | one sample per row: 256, 512, 1,024 or 2,048 document slots (documents of half to all of them, so 128 to 2,047 tokens; short rows first, a curriculum), then {'128-512' if a.get('qa_slots', 1) == 1 else f"{a['qa_slots']:g}x 128-512"} question/answer slots holding several question/answer blocks that share the documents (every block sees the documents and itself only, at the positions right after the documents) |
{crowd_row}| loss | next-token cross-entropy on documents and questions, answer tokens and their `<|eos|>` weighted x{a['answer_weight']:g}{'' if a.get('first_answer_weight', a['answer_weight']) == a['answer_weight'] else f", the first answer token x{a['first_answer_weight']:g}"} |
{sup_row}| final loss | {curve_rows[-1].split('|')[5].strip() if curve_rows else '?'} (weighted, last 25 steps); answer-token loss {curve_rows[-1].split('|')[7].strip() if curve_rows else '?'} |
| export check | reloaded with `AutoModelForCausalLM` (F16 → f32): max logit difference {run['export_rel_err']:.1e} of the logit range, argmax agreement {run['export_argmax_agree']:.4f} |

![training curve](../../train/logs/curve.svg)

| step | tokens | minutes | LR | loss | document loss | answer loss | answer-token accuracy |
| --- | --- | --- | --- | --- | --- | --- | --- |
""" + '\n'.join(curve_rows) + """

Development set (48 cases of 1K-2K tokens, seed 555000, not the held-out set), greedy generation with
transformers during training; the probe is the share of answers' first tokens predicted right, teacher-forced,
over ~600 questions on 24 fixed rows of 1K-2K document tokens (the lookup itself, with less noise than F1):

| step | tokens | minutes | EM | F1 | F1 one hop | F1 two hops | probe: first answer token |
| --- | --- | --- | --- | --- | --- | --- | --- |
""" + '\n'.join(dev_rows) + f"""

## Held-out evaluation (Full Recompute)

`train/eval/qa-demo-eval.jsonl`: 200 cases (100 one-hop, 100 two-hop) written by `python train/data.py
--eval-out train/eval/qa-demo-eval.jsonl` (seed 777000, never used in training), each 1,025 to 2,017 tokens of
documents packed whole into chunks of at most ~512 tokens (3 to 5 chunks), in the project's JSONL format
(`id`, `chunks`, `question`, `answers`, `metric: "f1"`, plus `instruction: ""`, `hops`, `qtype`). The
`question` field holds the whole uncached tail, `Question: ...\\nAnswer:`, so a runner that appends
instruction and question as text reproduces the training prompt; `instruction` is empty on purpose (no
instruction).

Scored by `python train/evaluate.py`: transformers {results['decoding'].split('transformers ')[-1] if results else ''}, greedy, at most 32 new
tokens, LongBench-style F1 (lower-case, punctuation and articles removed, token overlap).

| layout | prompt | cases | F1 | EM | F1 one hop | F1 two hops |
| --- | --- | --- | --- | --- | --- | --- |
{held}

`concat` is the target measurement (whole context as one sequence). `linked` is what LegoKV's `full`
algorithm computes over linked chunks, since KVCompile keeps each chunk's own BOS; the model never saw a BOS in
the middle of a sequence during training, and the figures are reported as they are, not tuned.
{length_part}{matching_part}
F1 by question type (`concat`):

| type | cases | F1 |
| --- | --- | --- |
{qtype_rows}

Examples (`concat`):

| id | type | gold | prediction | F1 |
| --- | --- | --- | --- | --- |
{examples}

""" + hour_section(run, hours) + """## Linking algorithms

""" + linking_section(cfg['num_hidden_layers']) + """

## Reproduce

```sh
python3 -m venv .cache/train-venv && .cache/train-venv/bin/pip install torch transformers tokenizers safetensors
""" + reproduce_train + """.cache/train-venv/bin/python train/evaluate.py        # held-out F1 of public/models/qa-demo
.cache/train-venv/bin/python train/make_reference.py  # transformers' logits for the engine's parity test
rm -f docs/results/eval-qa-demo.json    # then the linking table (a stopped run continues with the same command)
""" + EVAL_CMD + """
""" + SINKS_CMD + """   # the sinks at chunk starts
.cache/train-venv/bin/python train/report.py          # this card and train/logs/curve.svg
```

`train/tokenizer.py` and `python train/data.py --eval-out ...` rebuild the tokenizer and the eval set on their
own. `train/reproduce.py` reads the stages from `train/logs/run.json` before it starts (`--dry-run` prints them).
A stopped stage resumes from `train/ckpt/last.pt` (git-ignored) when its own `train/train.py` command is started
again; `--max-minutes` caps a stage's training wall time (resumes included) and the model is exported whenever a
stage ends. `--smoke` runs
the whole pipeline on a tiny model in about a minute. Without `--steps`, training runs on wall-clock progress
(`--max-minutes`, 60 by default), so on a busier or quieter machine the number of steps, and therefore the exact
weights, differ""" + (f"; the committed run fixed its first stage's {stages[0]['steps']:,} steps instead "
                  f"({stages[0]['train_minutes']:.1f} min of training on a {run.get('machine', 'CPU')}; see the schedule "
                  "clock above). The weights are still not bitwise repeatable: "
                  "the seed fixes the initialization and every step's data, and a rerun on the same machine sees the "
                  "same tokens in the same rows, but its loss drifts from the recorded one after the first few steps "
                  "(PyTorch does not promise bitwise-equal floating-point results on the CPU)"
                  if fixed_steps else
                  f" (the committed run: {run['steps']} steps)") + """. `--bf16 auto` trains in bfloat16 only where the CPU has AMX-BF16 or AVX512-BF16 (the committed stages:
""" + ', '.join(('yes' if precision(s['args']) == 'bf16' else 'no') for s in stages) + """); elsewhere it trains in float32, several times slower per step.

## Limitations

- Only the generator's world: fictional entities, this document style, these question types. On real text it
  produces fluent-looking nonsense.
- Answers are short spans copied from the documents; no reasoning beyond two hops.
- Trained contexts up to 2,048 tokens; longer contexts are untested.
- Project-made model and data: no outside licence applies.
"""
    os.makedirs(os.path.dirname(CARD), exist_ok=True)
    with open(CARD, 'w') as f:
        f.write(card)
    print(f'wrote {CARD} and {os.path.join(LOGS, "curve.svg")}')


if __name__ == '__main__':
    main()
