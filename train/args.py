"""train/train.py's command line: the model's shape, the optimization, and the recipe options. What other
values were tried, with their figures, is in docs/models/qa-demo-history.md. `--smoke` shrinks everything
to a two-minute end-to-end check."""
from __future__ import annotations

import argparse
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..'))


def parse_args(argv=None, description: str = ''):
    from packing import WARMUP
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--out', default=os.path.join(ROOT, 'public', 'models', 'qa-demo'))
    ap.add_argument('--ckpt-dir', default=os.path.join(HERE, 'ckpt'))
    ap.add_argument('--log-dir', default=os.path.join(HERE, 'logs'))
    ap.add_argument('--eval-data', default=os.path.join(HERE, 'eval', 'qa-demo-eval.jsonl'))
    ap.add_argument('--seed', type=int, default=1234)
    ap.add_argument('--threads', type=int, default=2,
                    help='torch threads (1 leaves a core free on a machine shared with other work)')
    # model
    ap.add_argument('--vocab', type=int, default=4096)
    ap.add_argument('--hidden', type=int, default=256)
    ap.add_argument('--intermediate', type=int, default=704)
    ap.add_argument('--layers', type=int, default=6)
    ap.add_argument('--heads', type=int, default=4)
    ap.add_argument('--kv-heads', type=int, default=2)
    ap.add_argument('--max-len', type=int, default=2048)
    ap.add_argument('--rope-theta', type=float, default=10_000.0, help='RoPE base')
    # optimization
    ap.add_argument('--steps', type=int, default=100_000,
                    help='step cap; the default leaves the wall-clock budget (--max-minutes) to end the run. With a '
                         'cap that ends the run first, progress (the LR and the row-length mix) follows the step, '
                         'not the machine\'s load')
    ap.add_argument('--tokens-per-step', type=int, default=4096,
                    help='tokens per optimizer step (rows of the step\'s length class, at least one)')
    ap.add_argument('--lr', type=float, default=3e-3)
    ap.add_argument('--min-lr-frac', type=float, default=0.05,
                    help='the LR at the end of the decay, as a fraction of the peak')
    ap.add_argument('--warmup', type=int, default=100)
    ap.add_argument('--decay-frac', type=float, default=0.25,
                    help='share of the run over which the LR decays linearly to --min-lr-frac')
    ap.add_argument('--weight-decay', type=float, default=0.1)
    ap.add_argument('--optimizer', choices=('adamw', 'muon'), default='muon',
                    help='muon: the blocks\' weight matrices on Muon (train/muon.py), embedding and norms on AdamW')
    ap.add_argument('--muon-lr', type=float, default=0.02, help="Muon's peak learning rate (same schedule as --lr)")
    ap.add_argument('--qa-slots', type=float, default=1.0,
                    help='question/answer slots per row, relative to packing.ROW_CLASSES (more questions over the '
                         'same documents)')
    ap.add_argument('--crowd', type=float, default=0.0,
                    help='share of crowded rows after an all-crowded warm-up (packing.crowd_share): one kind of '
                         'entity fills the documents, so a question is answered only by matching its name, not by '
                         'its relation alone')
    ap.add_argument('--crowd-warmup', type=float, default=WARMUP,
                    help='with --crowd: share of the run that is the all-crowded warm-up of short one-hop rows '
                         '(packing.WARMUP)')
    ap.add_argument('--notes', type=float, default=0.0,
                    help='share of question/answer blocks replaced by note blocks: a fact sentence of the '
                         'documents cut before its value ("Note: Maren Tolvaski lives in" -> " Drunavik."), '
                         'the same lookup as a question with the prefix in the fact\'s own words')
    ap.add_argument('--two-hop', type=float, default=0.5,
                    help='share of two-hop questions, where the documents allow one (packing.two_hop_share)')
    ap.add_argument('--doc-weight', type=float, default=1.0,
                    help='loss weight of document and question tokens (answers: --answer-weight)')
    ap.add_argument('--attn-sup', type=float, default=0.3,
                    help='weight of the attention supervision loss: at the last question token of each block, head 0 '
                         'of --attn-sup-layers\' first layer is trained to attend to the answer\'s value in its '
                         'supporting fact, and for a two-hop question head 0 of the second layer to the bridge '
                         'name in the first fact (-log of the attention mass on those slots; 0: off)')
    ap.add_argument('--attn-sup-layers', default='-1,-3',
                    help='answer layer, bridge layer (negative: from the top): the bridge on layer 3, the answer on '
                         'the top layer 5, so a two-hop answer is looked up after the bridge it needs')
    ap.add_argument('--answer-weight', type=float, default=3.0, help='loss weight of answer tokens and their <|eos|>')
    ap.add_argument('--first-answer-weight', type=float, default=3.0,
                    help="loss weight of each answer's first token, the one that needs the lookup (the dev log's "
                         "probe_first_acc column is its teacher-forced accuracy on 1-2K-token rows)")
    ap.add_argument('--bf16', choices=('auto', '1', '0'), default='auto',
                    help='bfloat16 autocast for matmuls and attention; auto: on where the CPU has AMX-BF16 or '
                         'AVX512-BF16 (python train/bench_bf16.py measures the gain), off elsewhere')
    ap.add_argument('--compile', type=int, default=1,
                    help='torch.compile the forward and loss (1/0): one compilation per row class, ~20 s each '
                         '(cached by inductor for later runs), then ~1.5x faster steps')
    ap.add_argument('--max-minutes', type=float, default=60.0, help='training wall time, resumes included')
    # monitoring
    ap.add_argument('--eval-every', type=int, default=500)
    ap.add_argument('--dev-n', type=int, default=48)
    ap.add_argument('--ckpt-minutes', type=float, default=3.0)
    ap.add_argument('--final-eval-n', type=int, default=200, help='held-out cases scored at the end (0: skip)')
    ap.add_argument('--fresh', action='store_true', help='ignore an existing checkpoint')
    ap.add_argument('--init-from', default='',
                    help='a later training stage (train/stages.py): start from this saved model folder\'s weights '
                         '(an earlier stage\'s export) with fresh optimizer state, continuing the step count, data '
                         'and logs of the run in --log-dir; --steps, --max-minutes, --warmup and the LR schedule '
                         'then count this stage only')
    ap.add_argument('--smoke', action='store_true', help='tiny model, a few steps, into /tmp/qa-demo-smoke')
    args = ap.parse_args(argv)
    if args.init_from and args.fresh:
        ap.error('--init-from continues an earlier run; --fresh would retrain its tokenizer and eval set')
    if args.smoke:
        smoke = '/tmp/qa-demo-smoke'
        args.out, args.ckpt_dir, args.log_dir = smoke + '/model', smoke + '/ckpt', smoke + '/logs'
        args.eval_data = smoke + '/eval.jsonl'
        args.hidden, args.intermediate, args.layers, args.heads, args.kv_heads = 64, 128, 2, 4, 2
        args.steps, args.tokens_per_step, args.warmup, args.eval_every = 30, 2048, 5, 15
        args.dev_n, args.final_eval_n, args.max_minutes, args.lr = 8, 10, 3.0, 3e-3
    return args
