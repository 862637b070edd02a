#!/usr/bin/python3
"""Train the DDE reference implementation on given training and test rows (experiments/dde-table1/README.md).

    experiments/dde-table1/run-reference-dde.py CHECKOUT TRAIN.npy TEST.npy SAVE_DIR [REFERENCE FLAGS ...]

CHECKOUT is a checkout of Hanjun-Dai/dde (not part of kef; nothing of it is copied here). This calls its
unconditional training loop (dde.unconditional.train_loop) on TRAIN.npy and TEST.npy (float32, as its own
data files are), with the settings of its two-moons run script (dde/unconditional/two_moons/
run_double_dual.sh: widths 128, z 128, generator depth 4, dual depth 3, 3 dual steps, clip 5, learning
rate 1e-4, f_bd 0.1, lambda 1) on the CPU, followed by any further flags, which override them (e.g.
-num_epochs 4001 -seed 2). It saves epoch-E.{f,q,v} to SAVE_DIR every 100 epochs, which
experiments/dde-table1/evaluate-reference-dde.py measures. For the reference's own two-moons files, its script
two_moons_double_dual.py does the same (and seeds Python's, NumPy's and PyTorch's generators as this does).
Needs /usr/bin/python3 with PyTorch, matplotlib, tqdm, seaborn and pandas (the reference imports them).
"""
import os
import random
import sys

import numpy as np

SETTINGS = ["-nn_hidden_size", "128", "-f_bd", "0.1", "-f_depth", "3", "-kl_lambda", "1.0", "-grad_clip", "5",
            "-v_iter", "3", "-z_dim", "128", "-learning_rate", "1e-4", "-gen_depth", "4", "-ctx", "cpu"]


def main():
    if len(sys.argv) < 5:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    checkout, train_path, test_path, save_dir = sys.argv[1:5]
    for p in (os.path.join(checkout, "dde", "unconditional", "__init__.py"), train_path, test_path):
        if not os.path.exists(p):
            print(f"run-reference-dde: {p}: no such file", file=sys.stderr)
            sys.exit(2)
    # The reference parses its flags from sys.argv when its modules are imported; later flags win.
    sys.argv = [sys.argv[0]] + SETTINGS + ["-save_dir", save_dir] + sys.argv[5:]
    sys.path.insert(0, os.path.abspath(checkout))
    from dde.common.cmd_args import cmd_args
    import torch
    from dde.unconditional import train_loop
    random.seed(cmd_args.seed)
    np.random.seed(cmd_args.seed)
    torch.manual_seed(cmd_args.seed)
    train_loop(np.load(train_path).astype(np.float32), np.load(test_path).astype(np.float32))


if __name__ == "__main__":
    main()
