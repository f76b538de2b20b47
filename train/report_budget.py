"""The qa-demo card's "One hour of training" section: what the issue's budget ("about an hour or less on
2 cores") buys when `train/train.py` runs for about an hour (on its default 60-minute wall-clock budget, or
on a step count that fits in it), next to the committed recipe. Each hour run's logs (run.json, dev_log.csv)
are kept in a folder train/logs/hour*/; its weights are not kept, only its figures."""
from __future__ import annotations

import csv
import glob
import json
import os

from stages import of as stages_of
from stages import precision, recipe

HERE = os.path.dirname(os.path.abspath(__file__))
LOGS = os.path.join(HERE, 'logs')
TARGET_F1 = 0.9  # the held-out target (Full Recompute, whole context as one sequence)


def read_hours() -> list:
    """[(folder name, run.json, dev rows)] of the hour runs kept under train/logs/hour*/ whose held-out set
    was scored, in the order of their numbers (hour9 before hour10)."""
    out = []
    for d in sorted(glob.glob(os.path.join(LOGS, 'hour*')), key=run_number):
        path = os.path.join(d, 'run.json')
        if os.path.exists(path) and os.path.exists(os.path.join(d, 'dev_log.csv')):
            run = json.load(open(path))
            if run.get('heldout', {}).get('concat'):
                with open(os.path.join(d, 'dev_log.csv')) as f:
                    out.append((os.path.basename(d), run, list(csv.DictReader(f))))
    return out


def run_number(folder: str) -> tuple:
    """Sort key of an hour folder: its number, then its name."""
    digits = ''.join(c for c in os.path.basename(folder) if c.isdigit())
    return (int(digits) if digits else 0, os.path.basename(folder))


def best_f1(runs: list) -> dict:
    """The held-out (concat) summary of the best-scoring run."""
    return max((r['heldout']['concat'] for r in runs), key=lambda c: c['f1'])


def options(argv: list) -> str:
    """What a run changes from the defaults, as the card names it."""
    return f"`{' '.join(recipe(argv))}`" if recipe(argv) else 'defaults'


def machines(runs: list) -> str:
    """The machine (or machines) that ran these runs, as the card names it after "on a"."""
    return ' or a '.join(sorted({r.get('machine', 'CPU') for r in runs}))


def committed_hour(full: dict, hours: list) -> str | None:
    """The name of the hour run that is the committed run itself (one stage, the same recipe, steps and
    held-out result), or None. full: the committed run's run.json; hours: read_hours()."""
    if len(stages_of(full)) != 1:
        return None
    for name, h, _ in hours:
        if (recipe(h['argv']) == recipe(full['argv']) and h['steps'] == full['steps']
                and h['heldout']['concat'] == full.get('heldout', {}).get('concat')):
            return name
    return None


def hour_line(full: dict, hours: list) -> str:
    """One sentence for the card's status: the committed run's training time when it is one of the hour
    runs, else the best hour's held-out F1 (empty without an hour run).
    full: the committed run's run.json; hours: read_hours()."""
    runs = [h for _, h, _ in hours]
    if not runs:
        return ''
    link = '(see [One hour of training](#one-hour-of-training))'
    mine = committed_hour(full, hours)
    if mine:
        others = [h['heldout']['concat']['f1'] for name, h, _ in hours if name != mine]
        spread = (f"; the {len(others)} other one-hour runs there gave held-out F1 "
                  f"{min(others):.3f} to {max(others):.3f}" if others else '')
        return (f" It was trained in {full['train_minutes']:.1f} min on a {machines([full])}, from scratch, by one "
                f"command with a fixed seed (the issue's budget: about an hour or less on 2 cores){spread} {link}.")
    where = 'the same machine' if machines(runs) == machines([full]) else f'a {machines(runs)}'
    return f" One hour of training on {where} gives held-out F1 {best_f1(runs)['f1']:.3f} at best {link}."


def step_costs() -> str:
    """The hour section's paragraph on where a training step's time goes, from train/bench_step.py's
    output in train/logs/bench_step.json (empty without it)."""
    path = os.path.join(LOGS, 'bench_step.json')
    if not os.path.exists(path):
        return ''
    from bench_step import step_seconds, table
    bench = json.load(open(path))
    rows = sorted(bench['rows'], key=lambda r: r['Ld'])
    if len(rows) < 2:
        return ''
    short, long = rows[0], rows[-1]
    return f"""Where a step's time goes, measured by `python train/bench_step.py --out train/logs/bench_step.json` on
train.py's default options, on a {bench['machine']}:

{table(bench)}

A step of the longest rows, the length of the held-out contexts, costs {step_seconds(long) / step_seconds(short):.1f}x one of
the shortest, and the attention kernels (PyTorch's own flash attention for the CPU) take
{long['attention_share']:.0%} of its uncompiled pass, against {short['attention_share']:.0%} for the shortest.
Padding is a smaller cost: {long['real_share']:.0%} of the longest rows' slots hold real tokens.

"""


def hour_section(full: dict, hours: list) -> str:
    """full: the committed run's run.json (train/logs/run.json); hours: read_hours(). Empty when no hour
    run is kept."""
    f = full.get('heldout', {}).get('concat')
    if not hours or not f:
        return ''
    stages = stages_of(full)
    runs = [h for _, h, _ in hours]
    head = ('run', 'options (besides `--fresh`)', 'machine', 'precision', 'training wall time', 'steps',
            'tokens seen', 'final dev F1 (48 cases)', 'probe: first answer token',
            '**held-out F1** (concat, 200 cases)', 'held-out F1 one hop / two hops')

    def cells(name: str, opts: str, run: dict, prec: str, minutes: str) -> list:
        c = run['heldout']['concat']
        return [name, opts, run.get('machine', '?'), prec, minutes, f"{run['steps']:,}",
                f"{run['tokens_seen'] / 1e6:.2f}M", f"{run['final_dev']['f1']:.3f}",
                f"{run['final_dev']['probe_first_acc']:.3f}", f"**{c['f1']:.3f}**",
                f"{c['f1_1hop']:.3f} / {c['f1_2hop']:.3f}"]
    mine = committed_hour(full, hours)
    body = [cells(f"{name} (committed)" if name == mine else name, options(h['argv']), h, precision(h['args']),
                  f"**{h['train_minutes']:.1f} min**") for name, h, _ in hours]
    if not mine:
        body.append(cells('committed', f"`train/reproduce.py`'s {len(stages)} stage{'s' if len(stages) > 1 else ''}",
                          full, ' then '.join(dict.fromkeys(precision(s['args']) for s in stages)),
                          f"{full['train_minutes']:.1f} min"))
    table = '\n'.join('| ' + ' | '.join(r) + ' |' for r in [list(head), ['---'] * len(head)] + body)
    b = best_f1(runs)
    verdict = (f"the committed run, {mine}, reaches the {TARGET_F1} target: held-out F1 {f['f1']:.3f} after "
               f"{full['train_minutes']:.1f} min of training ({full['steps']:,} steps)" if mine and f['f1'] >= TARGET_F1 else
               f"the best hour reaches the {TARGET_F1} target (held-out F1 {b['f1']:.3f})" if b['f1'] >= TARGET_F1 else
               f"an hour does not reach the {TARGET_F1} target: the best hour's held-out F1 is {b['f1']:.3f}, one-hop "
               f"questions {b['f1_1hop']:.3f} and two-hop ones {b['f1_2hop']:.3f}. The committed model took "
               f"{full['train_minutes']:.0f} min on a {machines([full])}")
    dev = '\n'.join(f"- {name} ({options(h['argv'])}): " + ', '.join(
        f"{float(r['dev_f1']):.2f} at {float(r['minutes']):.0f} min" for r in rows_) for (name, h, rows_) in hours)
    cmds = '\n'.join(f"python train/train.py {' '.join(h['argv'])} && mkdir -p train/logs/{name} && "
                     f"cp {h['args']['log_dir']}/run.json {h['args']['log_dir']}/dev_log.csv train/logs/{name}/"
                     for name, h, _ in hours)
    return f"""## One hour of training

The issue asks for a model trained "in about an hour or less on 2 cores". What `train/train.py` gives in about
an hour, each run from scratch with `--bf16 auto`, side by side with the committed recipe: either on its default
60-minute wall-clock budget (the LR decay pulled in to end on time), or with `--steps` set to what fits in an
hour here and `--max-minutes` raised out of its way. On a {machines(runs)}, {verdict}. Over the
{len(runs)} hours here, held-out F1 ranges from {min(h['heldout']['concat']['f1'] for h in runs):.3f} to {b['f1']:.3f}.

A run on the wall-clock budget is not repeatable to the step: its progress, and with it the LR and the mix of
row lengths, is measured in minutes, so the same options give different steps on a busier or quieter machine.
A run whose `--steps` ends it before `--max-minutes` does follows the step instead: its LR, data and row-length
mix depend on the step and the seed only, not on how busy the machine is. Either way each row is a single
sample of a noisy process (runs whose options differ only a little have ended far apart), not a ranking of
their options.

{table}

{step_costs()}Dev F1 during each hour:

{dev}

The hours' weights are not kept; their figures come from `train/logs/hour*/` (run.json, dev_log.csv),
written by

```sh
{cmds}
```

"""
