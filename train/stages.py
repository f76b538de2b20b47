"""A second training stage: `train.py --init-from DIR` starts from the weights of a saved model folder
(an earlier stage's export) with fresh optimizer state, and continues that stage's step count, token
count, wall time, data stream and logs, so the curve and the card cover the whole history.

The earlier stage is read from --log-dir's run.json, which its export wrote; each stage's argv, steps
and minutes are kept in run.json's `stages` list, which the card turns into one command per stage.
"""
from __future__ import annotations

import json
import os


def load_weights(model, folder: str) -> None:
    """Loads a Hugging Face folder's model.safetensors (F16 or F32) into the training model (f32).
    The names are transformers' own (model.py mirrors them); lm_head is tied to the embedding."""
    import torch
    from safetensors.torch import load_file
    path = os.path.join(folder, 'model.safetensors')
    if not os.path.exists(path):
        raise SystemExit(f'--init-from: {path} does not exist')
    sd = {k: v.to(torch.float32) for k, v in load_file(path).items()}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [m for m in missing if m != 'lm_head.weight']
    if missing or unexpected:
        raise SystemExit(f'--init-from: {path} does not fit this model shape '
                         f'(missing {missing[:3]}, unexpected {unexpected[:3]})')


def of(run: dict) -> list:
    """A run.json's stages, oldest first, each with its command line, options, steps and minutes (a run
    from before stages existed is one stage). A stage recorded without its options gets them from its
    command line (the last stage: run.json's own)."""
    from args import parse_args
    stages = run.get('stages') or [{'argv': run['argv'], 'args': run['args'], 'steps': run['steps'],
                                     'train_minutes': run['train_minutes']}]
    for i, s in enumerate(stages):
        if 'args' not in s:
            s['args'] = run['args'] if i == len(stages) - 1 else vars(parse_args(s['argv']))
        if s['args'].get('bf16') in ('0', '1'):  # as train.py resolves it
            s['args']['bf16'] = int(s['args']['bf16'])
    return stages


PLACES = ('--out', '--ckpt-dir', '--log-dir', '--eval-data')  # where a run writes, not what it does


def recipe(argv: list) -> list:
    """What a command line trains: without the options that only say where the run writes, and
    without --fresh (whether it starts over, not what it does)."""
    keep, skip = [], False
    for x in argv:
        if skip:
            skip = False
        elif x in PLACES:
            skip = True
        elif x != '--fresh' and not any(x.startswith(p + '=') for p in PLACES):
            keep.append(x)
    return keep


def commands(run: dict) -> list:
    """train.py's argument lists that train the run again, one per stage, the first afresh, all into the
    default folders: a run trained elsewhere (an hour run in /tmp, say) and then committed is reproduced
    where the committed files live, and a stage that started from an earlier stage's export starts from
    the default export instead."""
    from args import ROOT, parse_args
    stages = of(run)
    outs = {s['args']['out'] for s in stages}
    default_out = os.path.relpath(parse_args([]).out, ROOT)
    cmds = []
    for i, s in enumerate(stages):
        argv = recipe(s['argv'])
        for j, x in enumerate(argv):
            if j and argv[j - 1] == '--init-from' and x in outs:
                argv[j] = default_out
            elif x.startswith('--init-from=') and x.split('=', 1)[1] in outs:
                argv[j] = '--init-from=' + default_out
        cmds.append((['--fresh'] if i == 0 else []) + argv)
    return cmds


def precision(args: dict) -> str:
    """A run's training precision as the card names it (train.py records --bf16 resolved to 0 or 1)."""
    return 'bf16' if int(args['bf16']) else 'float32'


def later_stage_text(s: dict) -> str:
    """A later stage's schedule for the card, from its recorded options."""
    a = s['args']
    return (f"from the previous stage's export (its F16 weights) with fresh optimizer state; {s['steps']:,} steps, "
            f"{s['train_minutes']:.1f} min, {precision(a)}; {a['warmup']} warmup steps "
            f"to a peak LR of {a['lr']:g} (Muon {a['muon_lr']:g}), then linear decay to {a['min_lr_frac']:g}x of that "
            + ('over the whole stage' if a['decay_frac'] >= 1 else f"over the last {a['decay_frac']:.0%} of the stage")
            + "; the data mix the first stage ended on")


def read_run(log_dir: str, why: str) -> dict:
    """A recorded run's run.json; `why` names what needs it, for the message when it is missing."""
    path = os.path.join(log_dir, 'run.json')
    if not os.path.exists(path):
        raise SystemExit(f'{why} needs the recorded run, but {path} does not exist')
    with open(path) as f:
        return json.load(f)


def continue_state(state: dict, log_dir: str, init_from: str) -> dict:
    """The training state at the start of a new stage: the earlier run's counters, and where this
    stage starts (its schedule counts from there)."""
    prev = read_run(log_dir, '--init-from')
    state.update(step=prev['steps'], tokens=prev['tokens_seen'], elapsed=prev['train_minutes'] * 60,
                 sessions=prev['sessions'], start_step=prev['steps'], start_elapsed=prev['train_minutes'] * 60,
                 stages=of(prev), init_from=init_from)
    return state


def finish(run: dict, state: dict) -> dict:
    """Adds this stage's record (after the earlier ones) to run.json's contents."""
    run['stages'] = state.get('stages', []) + [{
        'argv': run['argv'], 'args': run['args'], 'steps': state['step'] - state.get('start_step', 0),
        'train_minutes': round((state['elapsed'] - state.get('start_elapsed', 0.0)) / 60, 2)}]
    return run
