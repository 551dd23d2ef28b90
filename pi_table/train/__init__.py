"""Training code (optional extra `train`)."""

import sys


def refuse(option: str, why: str):
    """Stop with exit status 2 and one line, ``error: OPTION: WHY`` (SystemExit; no traceback)."""
    print(f"error: {option}: {why}", file=sys.stderr)
    raise SystemExit(2)


def refuse_bad_options(checks) -> None:
    """Stop with exit status 2 and one line, ``error: OPTION must be NEED, got VALUE``, at the first
    of ``checks`` (``(option, value, ok, need)`` tuples, checked in order) whose ``ok`` is false."""
    for option, value, ok, need in checks:
        if not ok:
            print(f"error: {option} must be {need}, got {value}", file=sys.stderr)
            raise SystemExit(2)
