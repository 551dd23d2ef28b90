"""Backgrounds: clean plates cut from the real tray/desk photos, and synthetic felt, wood, black.

Real plates: each labelled real photo has its dice painted out (OpenCV inpainting over the
YOLO boxes, widened), then a random square window of it is scaled to the output size.  Photos
are split train/valid by md5 of the file name (one in five held out for ``valid``).  Synthetic
surfaces are split by colour (md5 of the colour name) the same way.

All functions return float32 sRGB images in 0..1, shape (size, size, 3), RGB order.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np

from pi_table.train.render import held_out, md5_int, of_split

DEFAULT_BACKGROUNDS = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "real"


@lru_cache(maxsize=8)
def real_photos(root: str, split: str) -> tuple[tuple[str, str], ...]:
    """(image, label) pairs under ``root`` (any ``images/`` folder with ``labels/`` beside it)
    for the split; empty when root does not exist."""
    base = Path(root)
    if not base.is_dir():
        return ()
    out = []
    for img in sorted(base.rglob("*.jpg")):
        if img.parent.name != "images":
            continue
        lab = img.parent.parent / "labels" / (img.stem + ".txt")
        if not lab.is_file():
            continue
        if held_out(img.name) == (split == "valid"):
            out.append((str(img), str(lab)))
    return tuple(out)


@lru_cache(maxsize=48)
def clean_plate(image: str, label: str) -> np.ndarray:
    """The photo (BGR uint8) with every labelled die painted out: the boxes, widened (they
    can be tight, cover only the top face, and the die has sides and a shadow), are filled by
    inpainting at quarter resolution, plus fresh grain as strong as the photo's own."""
    img = cv2.imread(image, cv2.IMREAD_COLOR)
    if img is None:
        raise FileNotFoundError(image)
    h, w = img.shape[:2]
    mask = np.zeros((h, w), np.uint8)
    # how busy the photo is (at half size): smoothed Laplacian energy; a die's edge or pips
    # stand far above the bare surface's level
    half = cv2.resize(cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), (w // 2, h // 2), interpolation=cv2.INTER_AREA)
    grad = cv2.GaussianBlur(np.abs(cv2.Laplacian(half, cv2.CV_32F, ksize=3)), (0, 0), 1.0)
    level = float(cv2.mean(grad)[0]) + 1e-3
    busy = (grad > 2.0 * level).astype(np.uint8)
    for line in Path(label).read_text().splitlines():
        parts = line.split()
        if len(parts) < 5:
            continue
        cx, cy, bw, bh = (float(x) for x in parts[1:5])
        cx, cy, side = cx * w, cy * h, max(bw * w, bh * h)
        # boxes can be loose, tight, or hold only the top face: grow the disc until the ring
        # round it (nearly) only sees bare surface
        for grow in (1.3, 1.7, 2.2, 2.8, 3.5):
            r = (side * grow + 12) / 2
            hx, hy, hr = int(cx / 2), int(cy / 2), int((r + 6) / 2)
            m = hr + 4
            x0, y0 = max(0, hx - m), max(0, hy - m)
            x1, y1 = min(w // 2, hx + m + 1), min(h // 2, hy + m + 1)
            ring = np.zeros((y1 - y0, x1 - x0), np.uint8)
            cv2.circle(ring, (hx - x0, hy - y0), hr, 1, 3)
            n_ring = int(ring.sum())
            if n_ring == 0 or int((busy[y0:y1, x0:x1] & ring).sum()) < 0.03 * n_ring:
                break
        cv2.circle(mask, (int(cx), int(cy)), int(r), 255, -1)
    if mask.any():
        q = 4
        small = cv2.resize(img, (w // q, h // q), interpolation=cv2.INTER_AREA)
        msmall = cv2.dilate(cv2.resize(mask, (w // q, h // q), interpolation=cv2.INTER_NEAREST), np.ones((3, 3), np.uint8))
        fill = cv2.inpaint(small, msmall, 3, cv2.INPAINT_TELEA)
        fill = cv2.resize(fill, (w, h), interpolation=cv2.INTER_LINEAR).astype(np.float32)
        imf = img.astype(np.float32)
        high = cv2.subtract(imf, cv2.GaussianBlur(imf, (0, 0), 1.5))
        keep = (mask == 0).astype(np.uint8)
        sd = float(np.mean(cv2.meanStdDev(high, mask=keep)[1])) if keep.any() else 2.0
        cv2.setRNGSeed(md5_int(Path(image).name) % (2 ** 31))
        grain = cv2.GaussianBlur(cv2.randn(np.empty((h, w), np.float32), 0.0, 1.0), (0, 0), 0.7)
        grain *= np.float32(0.6 * sd / max(float(cv2.meanStdDev(grain)[1][0, 0]), 1e-6))
        fill = cv2.add(fill, cv2.merge([grain, grain, grain]))
        m = cv2.GaussianBlur(mask, (0, 0), 3).astype(np.float32) * np.float32(1 / 255.0)
        img = cv2.blendLinear(imf, fill, 1 - m, m)
        img = cv2.convertScaleAbs(np.maximum(img, 0, out=img))  # saturating cast to uint8
    return img


def _source(image: str) -> str:
    """Top folder of a photo under the backgrounds root (nellbyler-d6-tray, matteop65-d6-desk)."""
    p = Path(image).parent.parent
    return p.parent.name if p.name in ("Train", "Valid", "train", "valid", "test") else p.name


@lru_cache(maxsize=8)
def _by_source(photos: tuple[tuple[str, str], ...]) -> tuple[tuple[tuple[str, str], ...], ...]:
    names = sorted({_source(p[0]) for p in photos})
    return tuple(tuple(p for p in photos if _source(p[0]) == n) for n in names)


def real_background(rng: np.random.Generator, size: int, photos: tuple[tuple[str, str], ...]) -> tuple[np.ndarray, str]:
    # each source folder equally often, whatever its number of photos
    groups = _by_source(photos)
    pool = groups[int(rng.integers(len(groups)))]
    image, label = pool[int(rng.integers(len(pool)))]
    img = clean_plate(image, label)
    h, w = img.shape[:2]
    side = int(min(h, w) * rng.uniform(0.5, 1.0))
    y = int(rng.integers(0, h - side + 1))
    x = int(rng.integers(0, w - side + 1))
    crop = img[y:y + side, x:x + side]
    crop = np.rot90(crop, int(rng.integers(4)))
    if rng.random() < 0.5:
        crop = crop[:, ::-1]
    out = cv2.resize(np.ascontiguousarray(crop), (size, size), interpolation=cv2.INTER_LINEAR)
    out = cv2.cvtColor(out, cv2.COLOR_BGR2RGB).astype(np.float32)
    # colour / exposure jitter, sometimes much darker (dark trays)
    gain = rng.uniform(0.7, 1.15) if rng.random() < 0.65 else rng.uniform(0.12, 0.45)
    tint = (1 + rng.normal(0, 0.04, 3)) * gain / 255.0
    out = np.minimum(cv2.multiply(out, (*map(float, tint), 0.0)), np.float32(1.0))
    return out, f"real:{_source(image)}/{Path(image).name}"


# synthetic surfaces ------------------------------------------------------------------------

SURFACES: tuple[tuple[str, str, tuple[int, int, int]], ...] = (
    ("felt", "felt-green", (30, 90, 50)),
    ("felt", "felt-darkgreen", (20, 55, 35)),
    ("felt", "felt-blue", (30, 50, 110)),
    ("felt", "felt-navy", (18, 24, 55)),
    ("felt", "felt-red", (120, 25, 30)),
    ("felt", "felt-burgundy", (70, 18, 30)),
    ("felt", "felt-purple", (60, 30, 90)),
    ("felt", "felt-grey", (110, 110, 110)),
    ("felt", "felt-charcoal", (45, 45, 48)),
    ("felt", "felt-black", (18, 18, 20)),
    ("felt", "felt-brown", (80, 55, 35)),
    ("felt", "felt-teal", (20, 80, 85)),
    ("felt", "felt-beige", (170, 155, 125)),
    ("wood", "wood-pine", (200, 165, 115)),
    ("wood", "wood-oak", (160, 115, 70)),
    ("wood", "wood-walnut", (90, 60, 40)),
    ("wood", "wood-birch", (215, 195, 160)),
    ("wood", "wood-cherry", (140, 70, 45)),
    ("wood", "wood-ebony", (40, 30, 25)),
    ("black", "black-matte", (14, 14, 15)),
    ("black", "black-leather", (25, 22, 20)),
    ("black", "black-plastic", (8, 8, 9)),
    ("black", "black-rubber", (30, 30, 32)),
    ("paper", "paper-white", (225, 225, 220)),
    ("paper", "paper-grey", (150, 150, 145)),
    ("paper", "card-grey", (185, 182, 175)),
)


@lru_cache(maxsize=4)
def surfaces_for(split: str) -> tuple[tuple[str, str, tuple[int, int, int]], ...]:
    return of_split(SURFACES, lambda s: s[1], split)


def _noise(rng: np.random.Generator, size: int, cells: int) -> np.ndarray:
    small = rng.standard_normal((cells, cells)).astype(np.float32)
    return cv2.resize(small, (size, size), interpolation=cv2.INTER_CUBIC)


@lru_cache(maxsize=4)
def _grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    return yy, xx


def _tint(lum: np.ndarray, rgb) -> np.ndarray:
    """(H, W) luminance x RGB colour -> (H, W, 3) (cv2.merge: much faster than broadcasting)."""
    lum = lum.astype(np.float32, copy=False)
    return cv2.merge([lum * np.float32(c) for c in rgb])


def _white(rng: np.random.Generator, size: int, sigma: float) -> np.ndarray:
    """Gaussian white noise (OpenCV's generator, seeded from rng), blurred by sigma px."""
    cv2.setRNGSeed(int(rng.integers(2 ** 31)))
    n = cv2.randn(np.empty((size, size), np.float32), 0.0, 1.0)
    return cv2.GaussianBlur(n, (0, 0), sigma)


def synthetic_background(rng: np.random.Generator, size: int, surfaces) -> tuple[np.ndarray, str]:
    kind, name, rgb = surfaces[int(rng.integers(len(surfaces)))]
    base = np.asarray(rgb, np.float32) / 255.0 * rng.uniform(0.8, 1.2) * (1 + rng.normal(0, 0.05, 3))
    yy, xx = _grid(size)
    if kind == "wood":
        # long grain along x: noise stretched along the grain, rings warped slowly; then turned
        cv2.setRNGSeed(int(rng.integers(2 ** 31)))
        streak = cv2.resize(cv2.randn(np.empty((size, max(4, size // 48)), np.float32), 0.0, 1.0), (size, size),
                            interpolation=cv2.INTER_CUBIC)
        fine = cv2.resize(cv2.randn(np.empty((size, max(4, size // 12)), np.float32), 0.0, 1.0), (size, size),
                          interpolation=cv2.INTER_LINEAR)
        warp = cv2.resize(rng.standard_normal((3, 3)).astype(np.float32), (size, size), interpolation=cv2.INTER_CUBIC)
        period = rng.uniform(14, 40)
        rings = np.sin((yy + warp * np.float32(rng.uniform(10, 30)) + streak * 2) * np.float32(2 * np.pi / period))
        lum = 1 + np.float32(rng.uniform(0.03, 0.09)) * rings + 0.05 * streak + np.float32(rng.uniform(0.02, 0.06)) * fine
        M = cv2.getRotationMatrix2D((size / 2, size / 2), float(rng.uniform(0, 180)), 1.0)
        lum = cv2.warpAffine(lum.astype(np.float32), M, (size, size), borderMode=cv2.BORDER_REFLECT)
        img = _tint(lum, base)
    elif kind == "felt":
        fibre = _white(rng, size, rng.uniform(0.6, 1.2))
        lum = 1 + 0.08 * _noise(rng, size, 6) + 0.04 * _noise(rng, size, 40) + rng.uniform(0.06, 0.2) * fibre
        img = _tint(lum, base)
    elif kind == "black":
        fibre = _white(rng, size, 0.8)
        img = _tint(1 + 0.15 * _noise(rng, size, 5) + np.float32(rng.uniform(0.1, 0.3)) * fibre, base)
        if rng.random() < 0.5:  # soft glossy reflection of a lamp
            cx, cy = (float(v) for v in rng.uniform(0, size, 2))
            r = rng.uniform(0.2, 0.6) * size
            glow = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / np.float32(2 * r * r)) * np.float32(rng.uniform(0.02, 0.08))
            glow = glow.astype(np.float32)
            img = cv2.add(img.astype(np.float32), cv2.merge([glow, glow, glow]))
    else:  # paper / card
        fibre = _white(rng, size, 0.7)
        img = _tint(1 + 0.04 * _noise(rng, size, 8) + 0.08 * fibre, base)
    if rng.random() < 0.35:  # tray walls seen from above
        img = _tray_walls(rng, img, size)
    return np.clip(img.astype(np.float32), 0.0, 1.0), f"synthetic:{name}"


def _tray_walls(rng: np.random.Generator, img: np.ndarray, size: int) -> np.ndarray:
    wall = np.asarray(rng.uniform(0.02, 0.6, 3) if rng.random() < 0.5 else [rng.uniform(0.02, 0.5)] * 3, np.float32)
    out = img.copy()
    for side in range(4):
        if rng.random() < 0.45:
            continue
        wdt = int(rng.uniform(0.04, 0.14) * size)
        ramp = np.linspace(0.6, 1.1, wdt, dtype=np.float32)
        strip = wall[None, None, :] * ramp[None, :, None] * np.ones((size, 1, 1), np.float32)
        o = np.rot90(out, side)
        o[:, :wdt] = strip[:, ::-1] if side % 2 else strip
        out = np.rot90(o, -side)
    return np.ascontiguousarray(out)


def background(rng: np.random.Generator, size: int, split: str, root: str | None) -> tuple[np.ndarray, str]:
    """A background for a scene: a real plate (when ``root`` has photos) about half the time,
    else a synthetic surface."""
    photos = real_photos(str(root), split) if root else ()
    if photos and rng.random() < 0.5:
        return real_background(rng, size, photos)
    return synthetic_background(rng, size, surfaces_for(split))
