"""``python3 -m pi_table.train.render compare --out FILE.png``: real d6 crops beside rendered
crops (d6, d8, d10, d10-tens) at the same scale, one row per source, for eyeballing realism."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from pi_table.cli import Parser

from . import CLASSES
from .backgrounds import DEFAULT_BACKGROUNDS
from .scene import make_scene

CROP = 96  # crop side (px of the 640-px image): dice of 35-50 px, as in nellbyler-d6-tray


def _crop(img: np.ndarray, cx: float, cy: float, side: int = CROP) -> np.ndarray:
    h, w = img.shape[:2]
    pad = cv2.copyMakeBorder(img, side, side, side, side, cv2.BORDER_CONSTANT, value=(128, 128, 128))
    x0, y0 = int(round(cx - side / 2)) + side, int(round(cy - side / 2)) + side
    return pad[y0:y0 + side, x0:x0 + side]


def real_crops(root: Path, folder: str, n: int, rng: np.random.Generator) -> list[tuple[np.ndarray, str]]:
    base = root / folder
    imgs = sorted(base.rglob("images/*.jpg"))
    out = []
    for p in rng.permutation(len(imgs)):
        if len(out) >= n:
            break
        img_p = imgs[int(p)]
        lab = img_p.parent.parent / "labels" / (img_p.stem + ".txt")
        if not lab.is_file():
            continue
        img = cv2.imread(str(img_p))
        rows = [r.split() for r in lab.read_text().splitlines() if r.strip()]
        if not rows:
            continue
        r = rows[int(rng.integers(len(rows)))]
        h, w = img.shape[:2]
        out.append((_crop(img, float(r[1]) * w, float(r[2]) * h), f"d6:{int(r[0]) + 1}"))
    return out


def rendered_crops(kind: str, n: int, seed: int, bg: str | None, die_px=(36.0, 52.0),
                   split: str = "train") -> list[tuple[np.ndarray, str]]:
    out = []
    i = 0
    while len(out) < n and i < 10 * n:
        sc = make_scene(seed, split, i, (kind,), 640, bg, die_px=die_px, max_dice=3)
        i += 1
        img = np.ascontiguousarray(sc.image[..., ::-1])
        for (c, cx, cy, w, h), d in zip(sc.labels, sc.meta["dice"]):
            tag = CLASSES[c] + ("*" if d["cocked"] else "")
            out.append((_crop(img, cx * 640, cy * 640), tag))
            break
    return out


def sheet(rows: list[tuple[str, list[tuple[np.ndarray, str]]]], zoom: int = 2) -> np.ndarray:
    cell = CROP * zoom
    cols = max(len(r[1]) for r in rows)
    head = 110
    H = len(rows) * (cell + 18)
    W = head + cols * (cell + 4)
    out = np.full((H, W, 3), 255, np.uint8)
    for ri, (title, crops) in enumerate(rows):
        y = ri * (cell + 18)
        cv2.putText(out, title, (4, y + cell // 2), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 1, cv2.LINE_AA)
        for ci, (c, tag) in enumerate(crops):
            x = head + ci * (cell + 4)
            out[y:y + cell, x:x + cell] = cv2.resize(c, (cell, cell), interpolation=cv2.INTER_CUBIC)
            cv2.putText(out, tag, (x + 2, y + cell + 13), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (0, 0, 120), 1, cv2.LINE_AA)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog="python3 -m pi_table.train.render compare")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--n", type=int, default=8, help="crops per row")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backgrounds", default=str(DEFAULT_BACKGROUNDS))
    ap.add_argument("--zoom", type=int, default=2)
    ap.add_argument("--split", choices=("train", "valid"), default="train")
    a = ap.parse_args(argv)
    from pi_table.train import out_folder_problem

    for option, value, ok, need in (("--n", a.n, a.n >= 1, "1 or more"), ("--seed", a.seed, a.seed >= 0, "0 or more"),
                                    ("--zoom", a.zoom, a.zoom >= 1, "1 or more")):
        if not ok:
            ap.error(f"{option} must be {need}, got {value}")
    if a.out.is_dir():
        ap.error(f"--out: {a.out} is a folder, not an image file")
    if not cv2.haveImageWriter(str(a.out)):
        ap.error(f"--out: {a.out}: OpenCV writes no image of that kind (name it .png or .jpg)")
    if (why := out_folder_problem(a.out.parent)) is not None:
        ap.error(f"--out: {why}")
    root = Path(a.backgrounds)
    bg = str(root) if root.is_dir() else None
    rng = np.random.default_rng(a.seed)
    rows = []
    if bg:
        rows.append(("real d6 tray", real_crops(root, "nellbyler-d6-tray", a.n, rng)))
        rows.append(("real d6 tray", real_crops(root, "nellbyler-d6-tray", a.n, rng)))
        rows.append(("real d6 desk", real_crops(root, "matteop65-d6-desk", a.n, rng)))
    for kind in ("d6", "d8", "d10", "d10-tens"):
        rows.append((f"{a.split} {kind}", rendered_crops(kind, a.n, a.seed, bg, split=a.split)))
    rows.append((f"{a.split} d8/d10 small", rendered_crops("d8", a.n // 2, a.seed + 7, bg, (28, 34), a.split)
                 + rendered_crops("d10", a.n - a.n // 2, a.seed + 7, bg, (28, 34), a.split)))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    if not cv2.imwrite(str(a.out), sheet(rows, a.zoom)):
        ap.error(f"--out: {a.out} could not be written")
    print(f"wrote {a.out}")
    return 0
