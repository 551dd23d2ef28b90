"""One labelled scene: background, dice placed on it (some touching, some cocked), lighting,
shadows, camera effects.  ``make_scene(seed, split, index, ...)`` is a pure function of its
arguments: the same arguments give the same image, labels and metadata.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np

from . import class_id
from .backgrounds import background
from .geometry import Solid, hull_points, rest_pose, solid, up_face
from .raster import Camera, Light, Material, Patch, composite, render_die, to_linear
from .textures import (DARK_GREY, LOGOS, TEX, dark_palettes_for, faint_palettes, fonts_for, logo_mask, numeral_mask,
                       palettes_for, pip_mask)

SPLIT_CODE = {"train": 0, "valid": 1}
SIZE_RANGE = (28.0, 70.0)  # die outline across, px at 640 (scaled with --size)
N_DICE_WEIGHTS = np.array([3.0, 2.2, 1.8, 1.5, 1.3, 1.1, 1.0, 1.0, 0.9, 0.8, 0.8, 0.7])


@dataclass
class Scene:
    image: np.ndarray  # uint8 RGB (H, W, 3)
    labels: list[tuple[int, float, float, float, float]]
    meta: dict
    jpeg_quality: int


def _pick(rng: np.random.Generator, options, weights) -> object:
    w = np.asarray(weights, float)
    return options[int(rng.choice(len(options), p=w / w.sum()))]


def _material(rng: np.random.Generator, split: str, dark: bool = False, faint: float = 0.0) -> tuple[Material, str]:
    """A die's material and its name (``PALETTE/KIND``). ``faint``: the share of dice whose palette is drawn from
    :func:`~pi_table.train.render.textures.faint_palettes` (their dark-bodied ones with ``dark``), not the split's
    own; at 0 no random draw is made for it, so the scene is the same as before the option existed."""
    pals = dark_palettes_for(split) if dark else palettes_for(split)
    if faint and rng.random() < faint:
        pals = faint_palettes(dark)
    name, body, ink, body2 = pals[int(rng.integers(len(pals)))]
    kind = _pick(rng, ("opaque", "translucent", "marbled", "metallic"), (0.45, 0.2, 0.22, 0.13))
    jitter = lambda c: np.clip(to_linear(c) * (1 + rng.normal(0, 0.08, 3)) * rng.uniform(0.85, 1.15), 0, 1).astype(np.float32)
    m = Material(kind=kind, body=jitter(body), ink=jitter(ink), body2=jitter(body2))
    m.spec = float(rng.uniform(0.05, 0.35))
    m.shine = float(np.exp(rng.uniform(np.log(40), np.log(300))))
    m.ink_depth = float(rng.uniform(0.0, 1.0))
    if kind == "translucent":
        m.opacity = float(rng.uniform(0.55, 0.85))
        grey = float(m.body.mean())
        m.body = np.clip(grey + (m.body - grey) * 1.4, 0.005, 1).astype(np.float32)  # more saturated
        m.spec = float(rng.uniform(0.15, 0.45))
    elif kind == "marbled":
        k = 4
        dirs = rng.standard_normal((k, 3)).astype(np.float32)
        dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
        main = rng.standard_normal(3).astype(np.float32)
        main /= np.linalg.norm(main)
        m.marble = (dirs, rng.uniform(2, 7, k).astype(np.float32), rng.uniform(0, 6.3, k).astype(np.float32),
                    main, float(rng.uniform(3, 9)))
    elif kind == "metallic":
        m.spec = float(rng.uniform(0.5, 0.9))
        m.shine = float(rng.uniform(8, 30))
        m.sparkle = float(rng.uniform(0.0, 0.25))
    return m, f"{name}/{kind}"


def _face_masks(rng: np.random.Generator, s: Solid, font: str, logo_ones: float = 0.0) -> tuple[np.ndarray, dict]:
    """Ink masks of all faces of one die, and how it is printed. ``logo_ones``: the share of the d6
    printed with pips whose "1" is a logo (:func:`logo_mask`; ``printing["logo"]`` names it); at 0 no
    random draw is made for it, so the scene is the same as before the option existed."""
    info: dict = {}
    hq = lambda x: round(float(x), 2)  # quantised: lets the mask cache hit
    if s.kind == "d6" and rng.random() < 0.85:
        radius = hq(rng.uniform(0.075, 0.11))
        spread = hq(rng.uniform(0.23, 0.28))
        big = hq(rng.uniform(1.0, 1.7)) if rng.random() < 0.3 else 1.0
        masks = [pip_mask(int(lab), radius, spread, bool(rng.random() < 0.5), big) for lab in s.labels]
        info["print"] = "pips"
        if logo_ones and rng.random() < logo_ones:
            info["logo"] = str(LOGOS[int(rng.integers(len(LOGOS)))])
            logo = logo_mask(info["logo"], hq(rng.uniform(0.35, 0.6)))
            masks = [logo if lab == "1" else m for lab, m in zip(s.labels, masks)]
        return np.stack(masks), info
    frac = s.glyph_height / s.tex_extent  # fixed per kind (cache hits); size varies in render_die
    info["glyph_k"] = float(rng.uniform(0.85, 1.15))
    stroke = int(rng.random() < 0.25)
    if s.kind == "d10":
        mark = _pick(rng, ("underline", "dot"), (0.65, 0.35))
        zero = "10" if rng.random() < 0.2 else "0"
        marked = ("6", "9")
        info.update(zero=zero)
    elif s.kind == "d10-tens":
        mark = _pick(rng, ("", "underline", "dot"), (0.55, 0.3, 0.15))
        marked = ("60", "90")
        zero = "0"
    else:  # d8 and d6 numerals: only "6" can be misread
        mark = _pick(rng, ("", "underline", "dot"), (0.2, 0.55, 0.25))
        marked = ("6",)
        zero = "0"
    rotate = 90 if (s.kind == "d10-tens" and rng.random() < 0.2) else 0
    masks = []
    for lab in s.labels:
        text = zero if (s.kind == "d10" and lab == "0") else lab
        masks.append(numeral_mask(text, font, hq(frac), mark if lab in marked else "", stroke, rotate))
    info.update(print="numerals", mark=mark, rotate=rotate)
    return np.stack(masks), info


def _outline(s: Solid, R: np.ndarray, scale: float, pos: np.ndarray, cam: Camera) -> np.ndarray:
    """Convex hull (pixels, float32 (K, 2)) of the projected die."""
    pts = cam.project(hull_points(s.kind) @ R.T * scale + pos).astype(np.float32)
    return cv2.convexHull(pts).reshape(-1, 2)


def _overlaps(a: np.ndarray, others: list[np.ndarray]) -> bool:
    for b in others:
        area, _ = cv2.intersectConvexConvex(a, b)
        if area > 0.5:
            return True
    return False


def _dark_background(rng: np.random.Generator, size: int, split: str, bg_root: str | None) -> tuple[np.ndarray, str]:
    """:func:`background`, drawn again until its mean grey is under :data:`DARK_GREY` (a ``dark``
    scene's ground). Raises ValueError after 200 draws with none."""
    for _ in range(200):
        bg, name = background(rng, size, split, bg_root)
        if float(cv2.cvtColor(bg, cv2.COLOR_RGB2GRAY).mean()) * 255 < DARK_GREY:
            return bg, name
    raise ValueError(f"no dark background (mean grey under {DARK_GREY:g}) in 200 draws for the {split} split")


def make_scene(seed: int, split: str, index: int, kinds: tuple[str, ...] = ("d6", "d8", "d10", "d10-tens"),
               size: int = 640, bg_root: str | None = None, die_px: tuple[float, float] | None = None,
               max_dice: int = 12, dark: bool = False, extra_fonts: tuple[str, ...] = (),
               logo_ones: float = 0.0, faint_pips: float = 0.0) -> Scene:
    """Render scene ``index`` of (seed, split).  ``die_px`` overrides the die size range (px
    across at this ``size``) and ``max_dice`` caps the count (used by the compare sheet).
    ``dark``: dark dice on dark ground, every die's body from the split's dark palettes and the
    background a plate whose mean grey is under :data:`DARK_GREY` (drawn again until it is; the
    meta says ``"dark": true``).

    ``extra_fonts``: font files drawn beside the split's own (``train`` only;
    :func:`~pi_table.train.render.textures.extra_train_fonts`); without them the scene is the same
    as before they existed. ``logo_ones``: the share of the pip d6 whose "1" is a maker's logo
    (:func:`_face_masks`); at 0 the same scene as before. ``faint_pips``: the share of dice painted in a palette
    whose pips are about as bright as the body, or coloured on a dark body (:func:`_material`; ``train`` only); at 0
    the same scene as before.

    Raises:
        ValueError: an unknown split, ``extra_fonts`` or ``faint_pips`` for ``valid``, or ``dark`` with no dark palette
            or no dark background in 200 draws for the split."""
    if split not in SPLIT_CODE:
        raise ValueError(f"split must be train or valid, not {split!r}")
    if extra_fonts and split != "train":
        raise ValueError(f"extra fonts are for the train split only, not {split!r}")
    if faint_pips and split != "train":
        raise ValueError(f"faint pips are for the train split only, not {split!r}")
    if dark and not dark_palettes_for(split):
        raise ValueError(f"no dark palette in the {split} split")
    rng = np.random.default_rng([int(seed), SPLIT_CODE[split], int(index)])
    fonts = fonts_for(split) + tuple(extra_fonts)
    k = size / 640.0
    cam_h = size * rng.uniform(1.4, 4.0)
    cam = Camera(size, size, size / 2 + rng.normal(0, 0.05) * size, size / 2 + rng.normal(0, 0.05) * size, cam_h)
    bg, bg_name = (_dark_background if dark else background)(rng, size, split, bg_root)
    img = np.ascontiguousarray(bg, np.float32)  # sRGB 0..1; dice are shaded in linear light

    az = rng.uniform(0, 2 * np.pi)
    el = np.radians(rng.uniform(45, 88))
    ldir = np.array([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], np.float32)
    warm = rng.normal(0, 0.06)
    lcol = np.array([1 + warm, 1.0, 1 - warm], np.float32) * rng.uniform(0.45, 0.75)
    waz = rng.uniform(0, 2 * np.pi)
    wel = np.radians(rng.uniform(50, 85))
    window = np.array([np.cos(wel) * np.cos(waz), np.cos(wel) * np.sin(waz), np.sin(wel)], np.float32)
    light = Light(ldir, lcol, float(rng.uniform(0.08, 0.2)), float(rng.uniform(0.1, 0.3)), window)
    exposure = float(rng.uniform(0.8, 1.15))

    n_dice = min(max_dice, int(rng.choice(np.arange(1, 13), p=N_DICE_WEIGHTS / N_DICE_WEIGHTS.sum())))
    lo_px, hi_px = die_px if die_px else (SIZE_RANGE[0] * k, SIZE_RANGE[1] * k)
    base = rng.uniform(lo_px, hi_px)
    spread = rng.uniform(0.0, 0.25)
    outlines: list[np.ndarray] = []
    dice = []
    for _ in range(n_dice):
        kind = kinds[int(rng.integers(len(kinds)))]
        s = solid(kind)
        face = int(rng.integers(s.n_faces))
        cocked = bool(rng.random() < 0.1)
        tilt = np.radians(rng.uniform(10, 24 if kind.startswith("d10") else 30)) if cocked else 0.0
        R = rest_pose(s, face, rng.uniform(0, 2 * np.pi), tilt, rng.uniform(0, 2 * np.pi))
        up = up_face(s, R)
        target = float(np.clip(base * (1 + rng.normal(0, spread)), lo_px, hi_px))
        vw = hull_points(kind) @ R.T
        ext = np.sqrt((np.ptp(vw[:, 0])) * (np.ptp(vw[:, 1])))
        scale = target / ext
        z = -vw[:, 2].min() * scale  # resting on the ground
        touching = False
        placed = None
        for attempt in range(30):
            if dice and rng.random() < 0.35 and attempt < 15:
                j = int(rng.integers(len(dice)))
                ang = rng.uniform(0, 2 * np.pi)
                cj = dice[j]["pos"][:2]
                lo, hi = 0.0, (target + dice[j]["target"]) * 1.2
                for _ in range(12):  # bisect to just not overlapping
                    mid = 0.5 * (lo + hi)
                    pos = np.array([cj[0] + mid * np.cos(ang), cj[1] + mid * np.sin(ang), z])
                    if _overlaps(_outline(s, R, scale, pos, cam), outlines):
                        lo = mid
                    else:
                        hi = mid
                pos = np.array([cj[0] + hi * np.cos(ang), cj[1] + hi * np.sin(ang), z])
                touching = True
            else:
                m = target * 0.8 + 2
                pos = np.array([rng.uniform(m, size - m), -rng.uniform(m, size - m), z])
                touching = False
            ol = _outline(s, R, scale, pos, cam)
            if ol[:, 0].min() < 1 or ol[:, 1].min() < 1 or ol[:, 0].max() > size - 1 or ol[:, 1].max() > size - 1:
                continue
            if _overlaps(ol, outlines):
                continue
            placed = pos
            break
        if placed is None:
            continue
        font = fonts[int(rng.integers(len(fonts)))]
        mat, mat_name = _material(rng, split, dark, faint_pips)
        masks, printing = _face_masks(rng, s, font, logo_ones)
        outlines.append(ol)
        dice.append(dict(kind=kind, solid=s, R=R, scale=scale, pos=placed, target=target, face=s.labels[up],
                         rest_face=s.labels[face], cocked=cocked, tilt=float(np.degrees(tilt)), touching=touching,
                         mat=mat, mat_name=mat_name, masks=masks, printing=printing,
                         font=Path(font).name,
                         round_k=float(rng.uniform(0.92, 1.02) if kind == "d6" else rng.uniform(0.97, 1.02)),
                         bevel_k=float(rng.uniform(0.7, 1.6))))

    # render far-from-centre dice first: nearer the optical axis they lean over their neighbours
    order = sorted(range(len(dice)), key=lambda i: -np.hypot(dice[i]["pos"][0] - cam.cx, -dice[i]["pos"][1] - cam.cy))
    patches: dict[int, Patch] = {}
    for i in order:
        d = dice[i]
        ss = 2
        p = render_die(d["solid"], d["R"], d["scale"], d["pos"], cam, d["mat"], d["masks"], light, ss=ss, rng=rng,
                       round_k=d["round_k"], bevel_k=d["bevel_k"], glyph_k=d["printing"].get("glyph_k", 1.0))
        if p is not None:
            p.colour *= exposure
            patches[i] = p

    # shadows on the ground (soft, offset away from the light) and contact occlusion, die by die
    lx, ly, lz = ldir
    soft_k = rng.uniform(0.04, 0.15)
    dark_k = rng.uniform(0.35, 0.75)
    for i, p in patches.items():
        d = dice[i]
        h, w = p.cover.shape
        hgt = d["pos"][2] * 1.1
        dx, dy = -lx / lz * hgt, ly / lz * hgt
        sig = max(0.8, soft_k * d["target"])
        m = int(abs(dx) + abs(dy) + 3 * sig + 3)
        rx0, ry0 = max(0, p.x0 - m), max(0, p.y0 - m)
        rx1, ry1 = min(size, p.x0 + w + m), min(size, p.y0 + h + m)
        rw, rh = rx1 - rx0, ry1 - ry0
        strength = 0.55 if d["mat"].kind == "translucent" else 1.0
        sh = np.zeros((rh, rw), np.float32)
        for frac in (0.35, 0.7, 1.0):
            M = np.float32([[1, 0, p.x0 - rx0 + dx * frac], [0, 1, p.y0 - ry0 + dy * frac]])
            np.maximum(sh, cv2.warpAffine(p.cover, M, (rw, rh), flags=cv2.INTER_LINEAR), out=sh)
        ct = np.zeros((rh, rw), np.float32)
        ct[p.y0 - ry0:p.y0 - ry0 + h, p.x0 - rx0:p.x0 - rx0 + w] = p.cover
        sh = cv2.GaussianBlur(sh, (0, 0), sig)
        ct = cv2.GaussianBlur(ct, (0, 0), max(0.8, 0.08 * d["target"]))
        shade = strength * (dark_k * sh + 0.35 * np.clip(ct * 1.5, 0, 1))
        keep = cv2.pow(1 - np.clip(shade, 0, 0.9), 1 / 2.2)  # linear-light darkening, in sRGB
        img[ry0:ry1, rx0:rx1] = cv2.multiply(img[ry0:ry1, rx0:rx1], cv2.merge([keep, keep, keep]))
    for i in order:
        if i in patches:
            composite(img, patches[i])

    out = _camera_effects(rng, img, size)
    labels, meta_dice = [], []
    for i, d in enumerate(dice):
        p = patches.get(i)
        if p is None:
            continue
        ys, xs = np.nonzero(p.cover > 0.5)
        if len(xs) == 0:
            continue
        x0, x1 = p.x0 + xs.min(), p.x0 + xs.max() + 1
        y0, y1 = p.y0 + ys.min(), p.y0 + ys.max() + 1
        cid = class_id(d["kind"], d["face"])
        box = ((x0 + x1) / 2 / size, (y0 + y1) / 2 / size, (x1 - x0) / size, (y1 - y0) / size)
        labels.append((cid, *box))
        meta_dice.append(dict(kind=d["kind"], face=d["face"], cls=cid, cocked=d["cocked"], tilt_deg=round(d["tilt"], 1),
                              touching=d["touching"], box_px=[int(x0), int(y0), int(x1), int(y1)],
                              size_px=round(d["target"], 1), material=d["mat_name"], font=d["font"],
                              printing=d["printing"]))
    q = int(rng.integers(55, 96))
    meta = dict(seed=int(seed), split=split, index=int(index), width=size, height=size, background=bg_name,
                camera_height_px=round(cam_h, 1), jpeg_quality=q, dice=meta_dice)
    if dark:
        meta["dark"] = True
    return Scene(out, labels, meta, q)


@lru_cache(maxsize=4)
def _radial(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size - 0.5
    return xx, yy, (xx ** 2 + yy ** 2) * 2


def _camera_effects(rng: np.random.Generator, img: np.ndarray, size: int) -> np.ndarray:
    """sRGB float image -> uint8: vignetting, white balance, blur, resolution loss, noise.
    (OpenCV element-wise ops: several times faster than numpy broadcasting here.)"""
    xx, yy, r2 = _radial(size)
    g = rng.normal(0, 0.08, 2)
    gain = (1 - rng.uniform(0.0, 0.5) * r2) * (1 + g[0] * xx + g[1] * yy)
    wb = 1 + rng.normal(0, 0.04, 3)
    gain = gain.astype(np.float32)
    img = cv2.multiply(img.astype(np.float32), cv2.merge([gain * np.float32(w) for w in wb]))
    if rng.random() < 0.15:  # resolution loss (phone / webcam scaling)
        f = rng.uniform(0.6, 0.9)
        small = cv2.resize(img, (int(size * f), int(size * f)), interpolation=cv2.INTER_AREA)
        img = cv2.resize(small, (size, size), interpolation=cv2.INTER_LINEAR)
    r = rng.random()
    if r < 0.4:
        img = cv2.GaussianBlur(img, (0, 0), rng.uniform(0.3, 0.9))
    elif r < 0.48:  # motion blur
        n = int(rng.integers(3, 6))
        kern = np.zeros((n, n), np.float32)
        kern[n // 2, :] = 1.0 / n
        M = cv2.getRotationMatrix2D(((n - 1) / 2, (n - 1) / 2), rng.uniform(0, 180), 1.0)
        kern = cv2.warpAffine(kern, M, (n, n))
        img = cv2.filter2D(img, -1, kern / max(kern.sum(), 1e-6))
    if rng.random() < 0.35:  # phone sharpening
        amt = rng.uniform(0.3, 1.0)
        img = cv2.addWeighted(img, 1 + amt, cv2.GaussianBlur(img, (0, 0), 1.2), -amt, 0)
    sigma = float(rng.uniform(0.003, 0.022))
    cv2.setRNGSeed(int(rng.integers(2 ** 31)))
    lum = cv2.randn(np.empty((size, size), np.float32), 0.0, sigma)
    chroma = cv2.randn(np.empty((size // 2, size // 2, 3), np.float32), 0.0, sigma * 0.5)
    noise = cv2.add(cv2.resize(chroma, (size, size), interpolation=cv2.INTER_LINEAR), cv2.merge([lum, lum, lum]))
    img = cv2.max(cv2.add(img, noise), 0.0)
    return cv2.convertScaleAbs(img, alpha=255.0)


def write_scene(scene: Scene, out: Path, name: str) -> None:
    (out / "images").mkdir(parents=True, exist_ok=True)
    (out / "labels").mkdir(parents=True, exist_ok=True)
    (out / "meta").mkdir(parents=True, exist_ok=True)
    ok, buf = cv2.imencode(".jpg", scene.image[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, scene.jpeg_quality])
    if not ok:
        raise RuntimeError("JPEG encoding failed")
    (out / "images" / f"{name}.jpg").write_bytes(buf.tobytes())
    lines = "".join(f"{c} {cx:.6f} {cy:.6f} {w:.6f} {h:.6f}\n" for c, cx, cy, w, h in scene.labels)
    (out / "labels" / f"{name}.txt").write_text(lines)
    (out / "meta" / f"{name}.json").write_text(json.dumps(dict(scene.meta, image=f"{name}.jpg"), indent=1))
