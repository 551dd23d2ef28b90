"""Training code (optional extra `train`)."""

import sys


def refuse(option: str, why: str):
    """Stop with exit status 2 and one line, ``error: OPTION: WHY`` (SystemExit; no traceback)."""
    print(f"error: {option}: {why}", file=sys.stderr)
    raise SystemExit(2)


def int_list(text: str) -> tuple[int, ...]:
    """``"1,2,3"`` -> (1, 2, 3): an option's comma-separated whole numbers; () when ``text`` is not
    such a list (the caller refuses it with :func:`refuse_bad_options`, naming the option)."""
    try:
        return tuple(int(v) for v in str(text).split(","))
    except ValueError:
        return ()


def refuse_bad_options(checks) -> None:
    """Stop with exit status 2 and one line, ``error: OPTION must be NEED, got VALUE``, at the first
    of ``checks`` (``(option, value, ok, need)`` tuples, checked in order) whose ``ok`` is false."""
    for option, value, ok, need in checks:
        if not ok:
            print(f"error: {option} must be {need}, got {value}", file=sys.stderr)
            raise SystemExit(2)


def one_cycle(opt, lr: float, steps: int):
    """torch's one-cycle learning-rate schedule (Smith and Topping 2019) for ``opt`` over ``steps``
    (1 or more) optimiser steps, peaking at ``lr`` after a warm-up of 5% of them.

    torch divides by the warm-up's length in steps less one, which is zero at exactly 20 steps
    (a ZeroDivisionError at the first step): there the warm-up is two steps. Any other count keeps
    the 5% every shipped model was trained with.
    """
    import torch

    pct = 0.05 if abs(0.05 * steps - 1) > 1e-9 else 2 / steps
    return torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=pct)
