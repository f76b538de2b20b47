#!/usr/bin/env python3
"""Trains qa-demo again with one command: every stage recorded in the committed run.json, in order.

    python train/reproduce.py             # stage 1 with --fresh (tokenizer, eval set, training,
                                          # export, held-out eval), then each later stage
    python train/reproduce.py --dry-run   # print the commands only

The commands are read before the first one runs (the run rewrites run.json as it goes), so the
recipe is exactly what trained the committed weights. A stage that fails stops the rest.
"""
from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--log-dir', default=os.path.join(HERE, 'logs'), help="the recorded run's logs (its run.json)")
    ap.add_argument('--dry-run', action='store_true')
    a = ap.parse_args(argv)
    from stages import commands, read_run
    cmds = commands(read_run(a.log_dir, 'train/reproduce.py'))
    for i, args in enumerate(cmds):
        cmd = [sys.executable, os.path.join(HERE, 'train.py')] + args
        print(f'stage {i + 1}/{len(cmds)}: python train/train.py {shlex.join(args)}', flush=True)
        if not a.dry_run:
            subprocess.run(cmd, check=True)


if __name__ == '__main__':
    main()
