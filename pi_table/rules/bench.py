"""``pi-table bench-odds``: how fast the kit's exact odds are, against icepool and dyce.

Cases (the largest pools the kit accepts, RULES.md):

- ``contract`` 30 d10 at every difficulty 2..10 (seed 003);
- ``contingency-action`` 20 action d8 and 20 pressure d6 (seed 000);
- ``contingency-skill`` d12, d12, d12 with advantage and a luck die, target 12 (seed 001).

Each case is timed *cold* (the first call in a fresh Python subprocess, after the import,
which is reported on its own) and *warm* (median of ``repeats`` calls in this process), in
milliseconds. The same band distributions are computed with icepool and dyce (test-only
dependencies, imported lazily in the subprocess that times them; a missing one is reported,
never an error) and checked to agree exactly with the kit; the ratios are oracle ms / kit ms
(> 1: the kit is faster). The kit's budget is 5 ms per case, cold and warm.

Run: ``pi-table bench-odds [--repeats N] [--small] [--no-oracles] [--json]``, or
``python -m pi_table.rules.bench``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
import warnings
from fractions import Fraction
from typing import Any, Callable

BUDGET_MS = 5.0
LIBS = ("kit", "icepool", "dyce")


# --------------------------------------------------------------------------- cases


def cases(small: bool = False) -> list[tuple[str, str, dict]]:
    """``(name, system, odds kwargs)`` of every bench case; ``small``: tiny pools (a quick check)."""
    if small:
        return [
            ("contract 3d10 D6", "contract", {"dice": 3, "difficulty": 6}),
            ("contingency-action 2d 2p", "contingency-action", {"dice": 2, "pressure": 2}),
            ("skill d4,d4,d4 adv+luck T5", "contingency-skill",
             {"dice": ["d4"] * 3, "advantage": 1, "luck": True, "target": 5}),
        ]
    out = [(f"contract 30d10 D{d}", "contract", {"dice": 30, "difficulty": d}) for d in range(2, 11)]
    out.append(("contingency-action 20d 20p", "contingency-action", {"dice": 20, "pressure": 20}))
    out.append(("skill d12,d12,d12 adv+luck T12", "contingency-skill",
                {"dice": ["d12"] * 3, "advantage": 1, "luck": True, "target": 12}))
    return out


def _kit(system: str, kw: dict) -> Callable[[], dict]:
    from pi_table.rules import odds

    return lambda: odds(system, **kw)


def _bands_from(items: Any, band_of: Callable[[Any], str]) -> dict[str, Fraction]:
    items = list(items)
    total = sum(int(c) for _, c in items)
    out: dict[str, Fraction] = {}
    for outcome, c in items:
        b = band_of(outcome)
        out[b] = out.get(b, Fraction(0)) + Fraction(int(c), total)
    return out


def _icepool(system: str, kw: dict) -> Callable[[], dict]:
    import icepool

    from pi_table.rules import contingency, contract

    if system == "contract":
        n, d = kw["dice"], kw["difficulty"]

        def run() -> dict:
            die = n @ icepool.d10.map(lambda f: contract.die_value(f, d))
            return _bands_from(die.items(), contract.band_of)
        return run
    if system == "contingency-action":
        n, p = kw["dice"], kw["pressure"]

        def run() -> dict:
            hc = icepool.d8.pool(n).highest_outcome_and_count()
            index = hc.map(lambda h, c: contingency.FACE_INDEX[h] + (c - 1 if h == 8 else 0), star=True)
            cuts = p @ (icepool.d6 == 6) if p else icepool.Die([0])
            final = icepool.map(lambda i, c: i - c, index, cuts)
            return _bands_from(final.items(), lambda i: contingency.band_of(i)[0])
        return run
    size = int(kw["dice"][0][1:])
    target = kw["target"]

    def run() -> dict:
        die = icepool.d(size).pool(3).highest(1).sum() + icepool.d(size)
        return _bands_from(die.items(), lambda r: "success" if r >= target else "failure")
    return run


def _dyce(system: str, kw: dict) -> Callable[[], dict]:
    from dyce import H, P

    from pi_table.rules import contingency, contract

    warnings.simplefilter("ignore")
    if system == "contract":
        n, d = kw["dice"], kw["difficulty"]

        def run() -> dict:
            h = n @ H(10).apply(lambda f: contract.die_value(f, d))
            return _bands_from(h.items(), contract.band_of)
        return run
    if system == "contingency-action":
        n, p = kw["dice"], kw["pressure"]
        # one d8 as its ladder class (0 disastrous .. 3 an 8); folding the pool die by die:
        # a further 8 on an 8 adds a critical level, else the higher class stands.

        def run() -> dict:
            cls = H(8).apply(lambda f: contingency.FACE_INDEX[f])
            acc = cls
            for _ in range(n - 1):
                acc = acc.apply(lambda a, b: a + 1 if a >= 3 and b == 3 else max(a, b), cls)
            cuts = p @ H(6).apply(lambda f: int(f == 6)) if p else H({0: 1})
            final = acc.apply(lambda i, c: i - c, cuts)
            return _bands_from(final.items(), lambda i: contingency.band_of(i)[0])
        return run
    size = int(kw["dice"][0][1:])
    target = kw["target"]

    def run() -> dict:
        h = P(H(size), H(size), H(size)).at(-1) + H(size)
        return _bands_from(h.items(), lambda r: "success" if r >= target else "failure")
    return run


_MAKERS = {"kit": _kit, "icepool": _icepool, "dyce": _dyce}


# --------------------------------------------------------------------------- timing


def _cold_child(lib: str, small: bool, index: int) -> None:
    """In a fresh subprocess: import, then time the first call; print one JSON line."""
    t0 = time.perf_counter()
    try:
        name, system, kw = cases(small)[index]
        fn = _MAKERS[lib](system, kw)
    except ImportError as exc:
        print(json.dumps({"error": f"{lib} not installed ({exc})"}))
        return
    t1 = time.perf_counter()
    bands = fn()
    t2 = time.perf_counter()
    print(json.dumps({"import_ms": (t1 - t0) * 1e3, "ms": (t2 - t1) * 1e3,
                      "bands": {k: f"{v.numerator}/{v.denominator}" for k, v in bands.items()}}))


def cold(lib: str, small: bool, index: int) -> dict:
    """Cold timing of one case in a fresh subprocess: ``{"ms", "import_ms", "bands"}`` or ``{"error"}``."""
    proc = subprocess.run([sys.executable, "-m", "pi_table.rules.bench", "--cold", lib, str(int(small)), str(index)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 or not proc.stdout.strip():
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def warm(fn: Callable[[], Any], repeats: int, budget_s: float = 3.0) -> float:
    """Median ms of ``repeats`` calls after one untimed call (fewer, at least 3, if they pass ``budget_s``)."""
    fn()
    times = []
    start = time.perf_counter()
    for i in range(max(repeats, 1)):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
        if i >= 2 and time.perf_counter() - start > budget_s:
            break
    return statistics.median(times)


def run(repeats: int = 21, small: bool = False, oracles: bool = True) -> dict:
    """Time every case; returns ``{"cases": [...], "kit_under_budget": bool, "kit_fastest": bool|None}``.

    Each case: ``name``, ``system``, ``params``, and per library (``kit``, ``icepool``,
    ``dyce``) ``cold_ms``, ``warm_ms``, ``import_ms``, ``agrees`` (exact bands equal the
    kit's), or ``error``; ``ratio_cold`` / ``ratio_warm``: oracle ms / kit ms.
    """
    libs = LIBS if oracles else ("kit",)
    rows = []
    for index, (name, system, kw) in enumerate(cases(small)):
        row: dict[str, Any] = {"name": name, "system": system, "params": kw}
        kit_bands = None
        for lib in libs:
            c = cold(lib, small, index)
            if "error" in c:
                row[lib] = {"error": c["error"]}
                continue
            fn = _MAKERS[lib](system, kw)
            entry = {"cold_ms": c["ms"], "import_ms": c["import_ms"], "warm_ms": warm(fn, repeats)}
            if lib == "kit":
                kit_bands = c["bands"]
            else:
                nz = {k: v for k, v in c["bands"].items() if v != "0/1"}
                entry["agrees"] = nz == {k: v for k, v in (kit_bands or {}).items() if v != "0/1"}
                entry["ratio_cold"] = c["ms"] / row["kit"]["cold_ms"]
                entry["ratio_warm"] = entry["warm_ms"] / row["kit"]["warm_ms"]
            row[lib] = entry
        rows.append(row)
    imports = {}
    for lib, mod in (("kit", "pi_table.rules"), ("icepool", "icepool"), ("dyce", "dyce")):
        if lib in libs:
            proc = subprocess.run([sys.executable, "-c", "import time; t = time.perf_counter(); import " + mod +
                                   "; print((time.perf_counter() - t) * 1e3)"], capture_output=True, text=True)
            imports[lib] = float(proc.stdout) if proc.returncode == 0 and proc.stdout.strip() else None
    under = all(max(r["kit"]["cold_ms"], r["kit"]["warm_ms"]) < BUDGET_MS for r in rows)
    ratios = [r[lib][k] for r in rows for lib in libs[1:] if "error" not in r[lib] for k in ("ratio_cold", "ratio_warm")]
    return {"cases": rows, "budget_ms": BUDGET_MS, "kit_under_budget": under,
            "kit_fastest": all(x > 1 for x in ratios) if ratios else None,
            "oracles_agree": all(r[lib].get("agrees", True) for r in rows for lib in libs[1:] if "error" not in r[lib]),
            "import_ms": imports, "python": sys.version.split()[0]}


def format_report(report: dict) -> str:
    """The bench as a text table: ms cold / warm per library and the oracle/kit ratios."""
    lines = [f"exact odds, ms (cold = first call in a fresh process; warm = median); budget {report['budget_ms']} ms"]
    head = f"{'case':<32}{'kit cold':>9}{'warm':>8}"
    libs = [lib for lib in LIBS[1:] if any(lib in r for r in report["cases"])]
    for lib in libs:
        head += f"{lib + ' cold':>14}{'warm':>9}{'x cold':>8}{'x warm':>8}"
    lines.append(head)
    errors = set()
    for r in report["cases"]:
        k = r["kit"]
        line = f"{r['name']:<32}{k['cold_ms']:>9.3f}{k['warm_ms']:>8.3f}"
        for lib in libs:
            e = r[lib]
            if "error" in e:
                errors.add(f"{lib}: {e['error']}")
                line += f"{'-':>14}{'-':>9}{'-':>8}{'-':>8}"
                continue
            flag = "" if e["agrees"] else "!"
            line += f"{e['cold_ms']:>14.2f}{e['warm_ms']:>9.2f}{e['ratio_cold']:>7.0f}x{e['ratio_warm']:>7.0f}x{flag}"
        lines.append(line)
    imp = ", ".join(f"{k} {v:.0f} ms" if v is not None else f"{k} -" for k, v in report["import_ms"].items())
    lines.append(f"import time (not in cold): {imp}; python {report['python']}")
    lines.append(f"kit under {report['budget_ms']} ms on every case: {'yes' if report['kit_under_budget'] else 'NO'}")
    if report["kit_fastest"] is not None:
        lines.append(f"kit faster than the oracles on every case (x = oracle ms / kit ms): "
                     f"{'yes' if report['kit_fastest'] else 'NO'}")
        lines.append(f"oracles agree exactly with the kit: {'yes' if report['oracles_agree'] else 'NO (marked !)'}")
    lines += sorted(errors)
    return "\n".join(lines)


def main(repeats: int = 21, small: bool = False, as_json: bool = False, oracles: bool = True) -> int:
    """Run the bench and print it (JSON with ``as_json``). Returns 0, or 1 when the kit is over
    budget, slower than an oracle, or disagrees with one."""
    if repeats < 1:
        raise ValueError(f"--repeats must be at least 1, got {repeats}")
    report = run(repeats, small, oracles)
    print(json.dumps(report) if as_json else format_report(report))
    ok = report["kit_under_budget"] and report["kit_fastest"] is not False and report["oracles_agree"]
    return 0 if ok or small else 1


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--cold":
        _cold_child(sys.argv[2], sys.argv[3] == "1", int(sys.argv[4]))
    else:
        import argparse

        ap = argparse.ArgumentParser(prog="python -m pi_table.rules.bench")
        ap.add_argument("--repeats", type=int, default=21)
        ap.add_argument("--small", action="store_true")
        ap.add_argument("--no-oracles", dest="no_oracles", action="store_true")
        ap.add_argument("--json", action="store_true")
        a = ap.parse_args()
        raise SystemExit(main(a.repeats, a.small, a.json, not a.no_oracles))
