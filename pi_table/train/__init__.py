"""Training code (optional extra `train`)."""

import json
import os
import sys
from pathlib import Path


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


def out_folder_problem(path) -> str | None:
    """Why ``path`` cannot be an output folder (``--out``), as words to follow the option's name:
    it is a file, a file stands where one of its parents should be, or the folder (or the nearest
    parent that exists, where it is to be made) cannot be written; None when it can be used."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        return f"{path} is not a folder"
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{path} cannot be made: {existing} is not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable"
    return None


def refuse_bad_out(path, option: str = "--out") -> None:
    """Stop with exit status 2 and one line, ``error: --out: WHY``, when ``path`` cannot be an output
    folder (:func:`out_folder_problem`)."""
    if (why := out_folder_problem(path)) is not None:
        refuse(option, why)


def refuse_smoke_over_models(out) -> None:
    """For ``--smoke``: stop with exit status 2 and one line when ``out`` holds a model a real run
    trained, a training log there (``train-log.json``, ``numerals-log.json``, ``cocked-log.json``,
    ``detector-big-log.json``: any ``*-log.json``) whose ``args`` do not say ``smoke``. A smoke
    run writes a model of a few steps on a few images; into such a folder (the shipped ``models/``)
    it would stand in for the trained one."""
    for log_path in sorted(Path(out).glob("*-log.json")):
        try:
            smoke = json.loads(log_path.read_text()).get("args", {}).get("smoke") == "True"
        except (OSError, ValueError, AttributeError):
            smoke = False
        if not smoke:
            refuse("--smoke", f"{out} holds a trained model ({log_path.name} is no smoke run's): a smoke run "
                              "would write its few-step model over it; give another --out")


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
