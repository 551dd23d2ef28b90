"""CLI: ``python3 -m pi_table.train.render --out DIR --n N --seed S --split train|valid``
and ``python3 -m pi_table.train.render compare --out FILE.png``.  See docs/renders.md."""

from __future__ import annotations

import os

# one thread per worker process: the arrays are small, and threads only fight for the cores
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from multiprocessing import get_context  # noqa: E402
from pathlib import Path  # noqa: E402

from pi_table.cli import Parser  # noqa: E402

from . import RENDER_KINDS  # noqa: E402
from .backgrounds import DEFAULT_BACKGROUNDS  # noqa: E402


def _kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    bad = [k for k in kinds if k not in RENDER_KINDS]
    if bad or not kinds:
        raise argparse.ArgumentTypeError(f"kinds must be among {','.join(RENDER_KINDS)} (got {text!r})")
    return kinds


def _die_px(text: str) -> tuple[float, float]:
    """``LO,HI``: the range of dice's outline across, pixels at the image's ``--size``."""
    try:
        lo, hi = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--die-px must be LO,HI pixels, e.g. 90,220 (got {text!r})") from None
    if not 8 <= lo <= hi:
        raise argparse.ArgumentTypeError(f"--die-px must have 8 <= LO <= HI (got {text!r})")
    return lo, hi


def _max_dice(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 12:
        raise argparse.ArgumentTypeError(f"--max-dice must be an integer 1..12 (got {text!r})")
    return n


#: The smallest image side ``--size`` takes, pixels: the default dice (28..70 px at 640, scaled with
#: ``--size``) are 5.6..14 px across there; below it they shrink to a pixel or two (labelled all the same).
MIN_SIZE = 128

_JOB: dict = {}


def _init(job: dict) -> None:
    import cv2

    cv2.setNumThreads(1)
    _JOB.clear()
    _JOB.update(job)


def scene_name(split: str, seed: int, index: int) -> str:
    """A scene's file name without extension, ``SPLIT_sSEED_INDEX`` (docs/renders.md, Output)."""
    return f"{split}_s{seed}_{index:06d}"


def _one(index: int) -> int:
    from .scene import make_scene, write_scene

    j = _JOB
    scene = make_scene(j["seed"], j["split"], index, j["kinds"], j["size"], j["backgrounds"], die_px=j["die_px"],
                       max_dice=j["max_dice"], dark=j["dark"], extra_fonts=j["extra_fonts"], logo_ones=j["logo_ones"],
                       faint_pips=j["faint_pips"])
    write_scene(scene, Path(j["out"]), scene_name(j["split"], j["seed"], index))
    return len(scene.labels)


def generate(argv: list[str]) -> int:
    ap = Parser(prog="python3 -m pi_table.train.render", description="Render labelled dice scenes.")
    ap.add_argument("--out", required=True, type=Path, help="output folder (images/, labels/, meta/)")
    ap.add_argument("--n", type=int, default=100, help="number of scenes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", choices=("train", "valid"), default="train")
    ap.add_argument("--kinds", type=_kinds, default=RENDER_KINDS, help="comma list of d6,d8,d10,d10-tens")
    ap.add_argument("--size", type=int, default=640, help="image side in pixels")
    ap.add_argument("--backgrounds", default=str(DEFAULT_BACKGROUNDS),
                    help="folder of real labelled photos for background plates ('' or missing: synthetic only)")
    ap.add_argument("--start", type=int, default=0, help="first scene index (to extend a set)")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--die-px", type=_die_px, default=None,
                    help="LO,HI: dice this many pixels across at --size (default 28,70 scaled with --size); e.g. "
                         "90,220 with --max-dice 3 for close-ups, a phone held over a few dice")
    ap.add_argument("--max-dice", type=_max_dice, default=12, help="at most this many dice a scene (1..12)")
    ap.add_argument("--dark", action="store_true",
                    help="dark dice on dark ground: every die a dark-bodied palette of the split, every background a "
                         "dark plate (the detector's weak case; models/history/detector.md)")
    ap.add_argument("--calib-only", action="store_true",
                    help="render only the scenes training keeps for calibration (one in 20 by the name, "
                         "pi_table.vision.dataset.is_calib_render): what --calibrate-only reads of a set, the same "
                         "files as the whole set's, about a twentieth of the time")
    ap.add_argument("--extra-fonts", action="append", default=[], metavar="DIR",
                    help="a folder of more TTF/OTF fonts for the train split only (repeatable): families the "
                         "system already has, held-out ones included, are dropped, and each keeps at most "
                         "4 files (docs/renders.md, Fonts)")
    ap.add_argument("--logo-ones", type=float, default=0.0, metavar="P",
                    help="the share (0..1) of the d6 printed with pips whose 1 is a maker's logo instead of its pip, as "
                         "on many real dice (a swirl, a ring, a star, a mark; the meta's printing.logo names it). "
                         "Default 0: the renders as before the option existed")
    ap.add_argument("--faint-pips", type=float, default=0.0, metavar="P",
                    help="the share (0..1) of dice painted in a palette whose pips are about as bright as the body, or "
                         "coloured on a dark body (smoky dice with red pips; textures.FAINT_PALETTES), --split train "
                         "only (the meta's material names it). Default 0: the renders as before the option existed")
    a = ap.parse_args(argv)
    from pi_table.train import out_folder_problem

    for option, value, ok, need in (("--n", a.n, a.n >= 1, "1 or more"),
                                    ("--seed", a.seed, a.seed >= 0, "0 or more"),
                                    ("--start", a.start, a.start >= 0, "0 or more"),
                                    ("--workers", a.workers, a.workers >= 1, "1 or more"),
                                    ("--size", a.size, a.size >= MIN_SIZE, f"{MIN_SIZE} or more"),
                                    ("--logo-ones", a.logo_ones, 0.0 <= a.logo_ones <= 1.0, "0..1"),
                                    ("--faint-pips", a.faint_pips, 0.0 <= a.faint_pips <= 1.0, "0..1")):
        if not ok:
            ap.error(f"{option} must be {need}, got {value}")
    if a.die_px is not None and a.die_px[1] > a.size / 2:
        ap.error(f"--die-px {a.die_px[0]:g},{a.die_px[1]:g}: dice at most half of --size ({a.size / 2:g} px) across "
                 "fit in the image")
    if (why := out_folder_problem(a.out)) is not None:
        ap.error(f"--out: {why}")
    if a.faint_pips and a.split != "train":
        ap.error(f"--faint-pips is for --split train only, not {a.split}")
    extra: tuple[str, ...] = ()
    if a.extra_fonts:
        if a.split != "train":
            ap.error(f"--extra-fonts is for --split train only, not {a.split}")
        from pi_table.train.render.textures import extra_fonts_line, extra_train_fonts

        try:
            extra, _dropped = extra_train_fonts(tuple(a.extra_fonts))
        except ValueError as e:
            ap.error(str(e))
        if not extra:
            ap.error(f"--extra-fonts {','.join(a.extra_fonts)}: no font with ten digits of a family the system "
                     "does not already have")
    bg = a.backgrounds if a.backgrounds and Path(a.backgrounds).is_dir() else None
    if a.backgrounds and bg is None:
        print(f"note: {a.backgrounds} not found: synthetic backgrounds only", file=sys.stderr)
    job = dict(seed=a.seed, split=a.split, kinds=a.kinds, size=a.size, backgrounds=bg, out=str(a.out),
               die_px=a.die_px, max_dice=a.max_dice, dark=a.dark, extra_fonts=extra, logo_ones=a.logo_ones,
               faint_pips=a.faint_pips)
    a.out.mkdir(parents=True, exist_ok=True)
    from pi_table.train.render import CLASSES

    (a.out / "classes.txt").write_text("\n".join(CLASSES) + "\n")  # what label CLASS indexes (pi_table.vision.dataset)
    # The fonts numerals are drawn with depend on the machine: say which, so two sets can be compared.
    from pi_table.train.render.textures import font_set, fonts_for

    fonts_line = font_set()
    if extra:
        fonts_line += "\n" + extra_fonts_line(extra)
    (a.out / "fonts.txt").write_text(fonts_line + "\n" + "".join(f"{Path(f).name}\n" for f in fonts_for(a.split) + extra))
    print(fonts_line, file=sys.stderr)
    t0 = time.time()
    idx = range(a.start, a.start + a.n)
    if a.calib_only:
        from pi_table.vision.dataset import is_calib_render

        idx = [i for i in idx if is_calib_render(f"{scene_name(a.split, a.seed, i)}.jpg")]
    n_dice = 0
    if a.workers <= 1:
        _init(job)
        for i in idx:
            n_dice += _one(i)
    else:
        with get_context("fork").Pool(a.workers, initializer=_init, initargs=(job,)) as pool:
            for k in pool.imap_unordered(_one, idx, chunksize=8):
                n_dice += k
    dt = time.time() - t0
    print(f"{len(idx)} scenes, {n_dice} dice -> {a.out} in {dt:.1f} s ({len(idx) / max(dt, 1e-9):.1f} scenes/s)")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "compare":
        from .compare import main as compare_main

        return compare_main(argv[1:])
    return generate(argv)


if __name__ == "__main__":
    raise SystemExit(main())
