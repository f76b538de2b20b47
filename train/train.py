#!/usr/bin/env python3
"""Trains LegoKV's qa-demo model (a 5.5M-parameter LlamaForCausalLM) on the CPU.

    python train/train.py                      # the full run (resumes from train/ckpt/ if present)
    python train/train.py --smoke              # a two-minute end-to-end check into /tmp/qa-demo-smoke
                                               # (also checks the packed attention against a dense mask)
    python train/train.py --max-minutes 30     # stop earlier (the LR decay is pulled in to finish by then)
    python train/train.py --fresh              # ignore an existing checkpoint
    python train/train.py --init-from public/models/qa-demo --steps 1300 ...
                                               # a later stage from the export (train/stages.py)
    python train/reproduce.py                  # every stage of the committed run, in order

Steps, in order:
 1. tokenizer: byte-level BPE trained on generated text (train/tokenizer.py), unless the
    output folder already has one (--fresh trains it again);
 2. the 200-case held-out eval set (train/eval/qa-demo-eval.jsonl, seed 777000; written when
    missing or with --fresh) and a separate 48-case dev set for monitoring (seed 555000), both
    1K-2K tokens of documents;
 3. training: every step draws fresh samples from train/data.py (seeded by the step
    number, so a resumed run sees the same data). train/packing.py puts one sample per row:
    its documents in 256, 512, 1024 or 2048 document slots (short rows first, a curriculum),
    then several question/answer blocks that share them: every block attends to the documents
    and to itself only and sits at the positions right after the documents, so each block is
    exactly one "BOS, documents, Question, Answer, EOS" sequence (the documents are computed
    once). The documents take plain causal attention, the blocks one masked attention
    (model.RowLayout). Loss: next-token cross-entropy on the documents and the questions,
    answer tokens (and the EOS after them) weighted x3, plus attention supervision (--attn-sup):
    at each block's last question token, one head is pulled towards where the generator put the
    answer's value (and, for two hops, the bridge name), which makes the lookup form within the
    hour where next-token loss alone did not. Optimizer: Muon (train/muon.py) for
    the blocks' weight matrices, AdamW for the embedding and the norms. Where the CPU has
    AMX-BF16 or AVX512-BF16, matmuls and attention run in bfloat16 autocast (--bf16 auto); the forward pass
    and loss are compiled with torch.compile (--compile);
 4. LR schedule: linear warmup, constant, then linear decay over the last 25% of the run to
    5% of the peak. Progress is max(step / steps, minutes / max-minutes), so on a slow or
    busy machine the decay starts earlier and the run still ends by --max-minutes;
 5. every --eval-every steps: greedy generation with transformers' LlamaForCausalLM (the
    current weights) on the dev set, exact match and F1 logged, and the probe: the share of
    answers' first tokens predicted right (teacher-forced) on fixed rows of 1-2K documents; checkpoints every few
    minutes to train/ckpt/last.pt (git-ignored);
 6. export (train/export.py): model.safetensors (f16) + config.json + generation_config.json + tokenizer into
    public/models/qa-demo/, reloaded with AutoModelForCausalLM and checked against the
    training model's logits; then the held-out F1 (train/evaluate.py) into
    train/eval/results.json.

Logs: train/logs/train_log.csv (loss per step), train/logs/dev_log.csv (dev EM/F1), and
train/logs/run.json (config, parameter count, tokens seen, wall time, results).
"""
from __future__ import annotations

import csv
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..'))
sys.path.insert(0, HERE)

from args import parse_args  # noqa: E402
from machine import machine_name  # noqa: E402


def truncate_log(path: str, step: int) -> None:
    """Drop the CSV rows after `step`, so a resumed run does not log those steps twice."""
    if not os.path.exists(path):
        return
    with open(path, newline='') as f:
        rows = list(csv.reader(f))
    keep = rows[:1] + [r for r in rows[1:] if r and int(r[0]) <= step]
    if len(keep) != len(rows):
        with open(path + '.tmp', 'w', newline='') as f:
            csv.writer(f).writerows(keep)
        os.replace(path + '.tmp', path)


# ----------------------------------------------------------------------------- schedule

def lr_frac(step: int, progress: float, a) -> float:
    """The learning rate as a fraction of the peak (every optimizer's own peak)."""
    warm = min(1.0, (step + 1) / a.warmup)
    start = 1.0 - a.decay_frac
    if progress <= start:
        f = 1.0
    else:
        f = 1.0 - (1.0 - a.min_lr_frac) * min(1.0, (progress - start) / a.decay_frac)
    return warm * f


# ----------------------------------------------------------------------------- logs

def shown(path: str) -> str:
    """A path as the logs show it: relative to the repository when inside it (no machine paths)."""
    rel = os.path.relpath(path, ROOT)
    return path if rel.startswith('..') else rel


def next_kind(b):
    """(B, T): the kind of the next slot's token (0 document, 1 question, 2 answer, -1 padding or
    row end). Inside a QA block that is the kind of the token each label predicts."""
    import torch
    nxt = torch.full_like(b['kind'], -1)
    nxt[:, :-1] = b['kind'][:, 1:]
    return nxt


def first_answer_targets(b):
    """(B*T,) bool: the positions whose label is an answer's first token (the lookup): a question
    token followed by an answer token."""
    return ((b['kind'] == 1) & (next_kind(b) == 2)).view(-1)


# ----------------------------------------------------------------------------- main

def main(argv=None):
    a = parse_args(argv, __doc__)
    os.environ.setdefault('OMP_NUM_THREADS', str(a.threads))
    import torch
    from tokenizers import Tokenizer
    import train_step
    train_step.resolve_bf16(a)

    import data
    import evaluate
    import stages
    import tokenizer as tokmod
    from export import export, to_hf
    from packing import ROW_CLASSES, Packer, check_layout

    torch.set_num_threads(a.threads)
    os.makedirs(a.log_dir, exist_ok=True)
    os.makedirs(a.ckpt_dir, exist_ok=True)
    log_path = os.path.join(a.log_dir, 'train.out')
    if a.fresh and os.path.exists(log_path):
        os.remove(log_path)  # a fresh run's log starts empty, like its CSVs

    def log(msg: str):
        line = time.strftime('%H:%M:%S ') + msg
        print(line, flush=True)
        with open(log_path, 'a') as f:
            f.write(line + '\n')

    # 1. tokenizer
    tok_dir = a.out
    if a.fresh or not os.path.exists(os.path.join(tok_dir, 'tokenizer.json')):
        log(f'training the tokenizer (vocab {a.vocab}) into {shown(tok_dir)}')
        tokmod.main(['--vocab', str(a.vocab), '--out', tok_dir])
    tok = Tokenizer.from_file(os.path.join(tok_dir, 'tokenizer.json'))
    if tok.get_vocab_size() != a.vocab:
        raise SystemExit(f'tokenizer has {tok.get_vocab_size()} tokens, --vocab is {a.vocab}')
    tok_cfg = train_step.special_ids(tok)
    count = lambda t: len(tok.encode(t, add_special_tokens=False).ids)  # noqa: E731

    # 2. eval and dev sets
    if a.fresh or not os.path.exists(a.eval_data):
        log(f'writing the held-out eval set to {shown(a.eval_data)}')
        data.main(['--eval-out', a.eval_data, '--tokenizer', tok_dir, '--eval-n', '200'])
    dev_cases = data.make_eval_cases(555_000, a.dev_n, count)

    # 3. model, optimizer, resume
    torch.manual_seed(a.seed)
    random.seed(a.seed)
    model = train_step.model(a)
    n_params = model.num_params()
    opt, muon, peaks = train_step.optimizers(model, a)  # each optimizer with its peak LR
    state = {'step': 0, 'tokens': 0, 'elapsed': 0.0, 'sessions': 0}
    ckpt_path = os.path.join(a.ckpt_dir, 'last.pt')
    train_csv = os.path.join(a.log_dir, 'train_log.csv')
    dev_csv = os.path.join(a.log_dir, 'dev_log.csv')
    ck = torch.load(ckpt_path, weights_only=False) if os.path.exists(ckpt_path) and not a.fresh else None
    if ck is not None and ck['state'].get('init_from', '') != a.init_from:
        ck = None  # another stage's checkpoint: this one starts anew (and overwrites it)
    if ck is not None:
        if ck.get('model_args') != model.args.to_dict():
            raise SystemExit(f'{ckpt_path} is for another model shape; use --fresh or another --ckpt-dir')
        model.load_state_dict(ck['model'])
        opt.load_state_dict(ck['opt'])
        if muon:
            muon.load_state_dict(ck['muon'])
        state = ck['state']
        log(f"resumed from {ckpt_path}: step {state['step']}, {state['tokens']:,} tokens, "
            f"{state['elapsed'] / 60:.1f} min")
        for p in (train_csv, dev_csv):  # a killed session logged past its last checkpoint
            truncate_log(p, state['step'])
    elif a.init_from:  # a second stage: fresh optimizer state, the earlier stage's counters and logs
        stages.load_weights(model, a.init_from)
        stages.continue_state(state, a.log_dir, a.init_from)
        log(f"stage {len(state['stages']) + 1} from {shown(a.init_from)} at step {state['step']}")
        for p in (train_csv, dev_csv):
            truncate_log(p, state['step'])
    else:
        for p in (train_csv, dev_csv):
            if os.path.exists(p):
                os.remove(p)
    state['sessions'] += 1
    log(f'model: {n_params:,} parameters ({a.layers} layers, hidden {a.hidden}, heads {a.heads}/{a.kv_heads} kv, '
        f'ffn {a.intermediate}, vocab {a.vocab}); threads {torch.get_num_threads()}; bf16 autocast {bool(a.bf16)}')

    packer = train_step.packer(tok, a)
    if a.smoke:
        err = max(check_layout(model, packer.batch('smoke-mask', 0.9, a.tokens_per_step, row_class=c))
                  for c in range(2))
        log(f'row layout attention vs dense mask: max |logit diff| {err:.2e}')
        if err > 1e-4:
            raise RuntimeError(f'the row layout attention differs from its dense mask by {err:.3e}')

    forward_loss = train_step.loss_fn(model, a)
    step_fn = torch.compile(forward_loss) if a.compile else forward_loss
    # A fixed probe of long rows (1-2K document tokens, every question teacher-forced): the share
    # of first answer tokens predicted right, the lookup itself, with far less noise than dev F1.
    probe_packer = Packer(tok, tok_cfg['bos'], tok_cfg['eos'], tok_cfg['pad'], 1.0, 1.0)  # the same probe for every run
    probe = [probe_packer.batch(f'probe-{i}', 1.0, a.tokens_per_step, row_class=len(ROW_CLASSES) - 1)
             for i in range(12)]

    def probe_first_acc():
        hit = n = 0
        with torch.no_grad():
            for b in probe:
                _, _, pred, _ = step_fn(b['ids'], b['pos'], b['Ld'], b['mask'].qa_mask, b['labels'], b['weights'])
                first = first_answer_targets(b)
                hit += int((pred[first] == b['labels'].view(-1)[first]).sum())
                n += int(first.sum())
        return hit / max(1, n)

    hf_encode = lambda t: tok.encode(t, add_special_tokens=False).ids  # noqa: E731
    hf_decode = lambda ids: tok.decode(ids, skip_special_tokens=True)  # noqa: E731

    def dev_eval():
        """Dev EM/F1 (greedy, transformers) and the probe, written as one dev_log.csv row."""
        model.eval()
        hf = to_hf(model, tok_cfg)
        t0 = time.time()
        preds = evaluate.generate_answers(hf, dev_cases, hf_encode, hf_decode, tok_cfg['bos'], tok_cfg['eos'],
                                          'concat', max_new_tokens=16)
        res = evaluate.score(dev_cases, preds)['summary']
        res['probe_first_acc'] = probe_first_acc()
        model.train()
        res['seconds'] = time.time() - t0
        wdev.writerow([state['step'], state['tokens'], round(state['elapsed'] / 60, 3), f"{res['em']:.4f}",
                       f"{res['f1']:.4f}", f"{res.get('f1_1hop', float('nan')):.4f}",
                       f"{res.get('f1_2hop', float('nan')):.4f}", f"{res['probe_first_acc']:.4f}"])
        fdev.flush()
        return res, preds

    def save_ckpt():
        tmp = ckpt_path + '.tmp'
        torch.save({'model': model.state_dict(), 'opt': opt.state_dict(), 'state': state,
                    'muon': muon.state_dict() if muon else None,
                    'model_args': model.args.to_dict(), 'args': dict(vars(a))}, tmp)
        os.replace(tmp, ckpt_path)

    new_train = not os.path.exists(train_csv)
    ftrain = open(train_csv, 'a', newline='')
    wtrain = csv.writer(ftrain)
    if new_train:
        wtrain.writerow(['step', 'tokens', 'minutes', 'lr', 'row_len', 'loss', 'doc_loss', 'answer_loss',
                         'answer_token_acc', 'sec_per_step', 'first_answer_acc'])
    new_dev = not os.path.exists(dev_csv)
    fdev = open(dev_csv, 'a', newline='')
    wdev = csv.writer(fdev)
    if new_dev:
        wdev.writerow(['step', 'tokens', 'minutes', 'dev_em', 'dev_f1', 'dev_f1_1hop', 'dev_f1_2hop',
                       'probe_first_acc'])

    budget_s = a.max_minutes * 60
    session_start = time.time()
    base_elapsed = state['elapsed']
    last_ckpt = time.time()
    model.train()
    ema = None
    s0, e0 = state.get('start_step', 0), state.get('start_elapsed', 0.0)  # where this stage started
    while True:
        elapsed = base_elapsed + (time.time() - session_start)
        progress = max((state['step'] - s0) / a.steps, (elapsed - e0) / budget_s)
        if progress >= 1.0:
            break
        step = state['step']
        t0 = time.time()
        # a later stage draws the data mix the first one ended on (the curriculum is over)
        b = packer.batch(f"{a.seed}-{step}", progress if s0 == 0 else 1.0, a.tokens_per_step)
        f = lr_frac(step - s0, progress, a)
        lr = a.lr * f  # logged: AdamW's
        for o, peak in peaks:
            for g in o.param_groups:
                g['lr'] = peak * f
        sup = train_step.sup_of(b, a)
        loss, ce, pred, sup_nll = step_fn(b['ids'], b['pos'], b['Ld'], b['mask'].qa_mask, b['labels'], b['weights'],
                                          sup)
        model.zero_grad(set_to_none=True)
        loss.backward()
        train_step.update(model, peaks)
        with torch.no_grad():
            lab = b['labels'].view(-1)
            kind = b['kind'].view(-1)
            is_ans = (lab >= 0) & (next_kind(b).view(-1) == 2)  # labels that are answer tokens or their EOS
            is_doc = (lab >= 0) & (kind == 0)
            ans_loss = ce[is_ans].mean().item() if is_ans.any() else float('nan')
            doc_loss = ce[is_doc].mean().item() if is_doc.any() else float('nan')
            hit = pred == lab
            acc = hit[is_ans].float().mean().item()
            first_acc = hit[first_answer_targets(b)].float().mean().item()
        ntok = int((b['kind'] >= 0).sum())  # padding excluded
        state['tokens'] += ntok
        state['step'] = step + 1
        dt = time.time() - t0
        ema = dt if ema is None else 0.9 * ema + 0.1 * dt
        state['elapsed'] = base_elapsed + (time.time() - session_start)
        wtrain.writerow([step + 1, state['tokens'], round(state['elapsed'] / 60, 3), f'{lr:.3e}', b['L'],
                         f'{loss.item():.4f}', f'{doc_loss:.4f}', f'{ans_loss:.4f}', f'{acc:.4f}', f'{dt:.2f}', f'{first_acc:.4f}'])
        if (step + 1) % 10 == 0:
            ftrain.flush()
            log(f"step {step + 1} tok {state['tokens']:,} {state['elapsed'] / 60:.1f}min lr {lr:.2e} L{b['L']} "
                f"loss {loss.item():.3f} doc {doc_loss:.3f} ans {ans_loss:.3f} acc {acc:.3f} first {first_acc:.3f} "
                f"attn-nll {sup_nll.item():.2f} {ema:.2f}s/step")
        if (step + 1) % a.eval_every == 0:
            res, preds = dev_eval()
            log(f"dev @ step {step + 1}: EM {res['em']:.3f} F1 {res['f1']:.3f} (1-hop {res.get('f1_1hop', 0):.3f}, "
                f"2-hop {res.get('f1_2hop', 0):.3f}) in {res['seconds']:.0f}s; probe first-token acc "
                f"{res['probe_first_acc']:.3f}; e.g. {preds[0][0]!r} vs {dev_cases[0]['answers'][0]!r}")
            # evaluation time counts toward the budget (it already does: wall clock)
        if time.time() - last_ckpt > a.ckpt_minutes * 60:
            save_ckpt()
            last_ckpt = time.time()
    ftrain.close()
    state['elapsed'] = base_elapsed + (time.time() - session_start)
    save_ckpt()
    log(f"training done: {state['step']} steps, {state['tokens']:,} tokens, {state['elapsed'] / 60:.1f} min")

    # 5-6. final dev score, export, held-out eval
    res, _ = dev_eval()
    fdev.close()
    log(f"final dev: EM {res['em']:.3f} F1 {res['f1']:.3f}, probe first-token acc {res['probe_first_acc']:.3f}")
    info = export(model, tok_cfg, a.out, tok_dir, log)
    log(f'saved {shown(a.out)}: ' + ', '.join(f'{f} {os.path.getsize(os.path.join(a.out, f)):,} B'
                                       for f in sorted(os.listdir(a.out))))
    run = {'params': n_params, 'torch': torch.__version__, 'argv': sys.argv[1:], 'machine': machine_name(), 'steps': state['step'], 'tokens_seen': state['tokens'],
           'train_minutes': round(state['elapsed'] / 60, 2), 'sessions': state['sessions'],
           'final_dev': res, **info,
           'args': {k: (shown(v) if isinstance(v, str) and os.path.isabs(v) else v) for k, v in vars(a).items()}}
    stages.finish(run, state)
    if a.final_eval_n:
        t0 = time.time()
        rep = evaluate.main(['--model', a.out, '--data', a.eval_data, '--n', str(a.final_eval_n),
                             '--threads', str(a.threads),
                             '--out', os.path.join(os.path.dirname(a.eval_data), 'results.json')])
        run['heldout'] = {k: v['summary'] for k, v in rep['layouts'].items()}
        run['eval_minutes'] = round((time.time() - t0) / 60, 2)
    with open(os.path.join(a.log_dir, 'run.json'), 'w') as f:
        json.dump(run, f, indent=1)
        f.write('\n')
    log('run summary: ' + json.dumps({k: run[k] for k in run if k != 'args'}))


if __name__ == '__main__':
    main()
