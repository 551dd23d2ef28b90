"""Training data for the reader: splits, augmented detector samples, augmented die crops.

Splits are per data folder and fixed by the seed (they are written to ``models/splits.json``
so that ``pi-table eval --held-out`` scores only images training never saw):

* a folder named ``Valid``/``valid``/``val`` is all validation; one named ``Train`` gives
  ``calib`` (10%) and ``train``;
* any other folder gives ``valid`` (20%), ``calib`` (8%) and ``train`` (the rest).

``calib`` is used only to fit the confidence temperature and to pick the checkpoint; it is
never trained on.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import cv2
import numpy as np

from pi_table.vision.dataset import LabelledImage

STRIDE = 4


def split_folder(images: list[LabelledImage], folder: str, seed: int) -> dict[str, list[LabelledImage]]:
    """``{"train", "calib", "valid"}`` lists of one data folder's images (see module docstring)."""
    items = sorted(images, key=lambda im: im.path.name)
    leaf = folder.rstrip("/").split("/")[-1].lower()
    if leaf in ("valid", "val", "validation", "test"):
        return {"train": [], "calib": [], "valid": items}
    rng = random.Random(f"{seed}:{folder}")
    shuffled = items[:]
    rng.shuffle(shuffled)
    n = len(shuffled)
    if leaf == "train":
        n_valid, n_calib = 0, max(1, round(n * 0.10))
    else:
        n_valid, n_calib = max(1, round(n * 0.20)), max(1, round(n * 0.08))
    valid = shuffled[:n_valid]
    calib = shuffled[n_valid : n_valid + n_calib]
    train = shuffled[n_valid + n_calib :]
    return {"train": train, "calib": calib, "valid": valid}


def chw_batch(crops) -> np.ndarray:
    """A list of N SxSx3 uint8 BGR crops as an Nx3xSxS float32 RGB 0..1 batch (a net's input)."""
    return np.stack([c[:, :, ::-1].transpose(2, 0, 1) for c in crops]).astype(np.float32) / 255


def load_rgb(path) -> np.ndarray:
    """HxWx3 uint8 BGR image from ``path``; ValueError if unreadable."""
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError(f"not an image: {path}")
    return image


# ---------------------------------------------------------------- photometric augmentation

def photometric(image: np.ndarray, rng: np.random.Generator, strength: float = 1.0,
                colour: float | None = None) -> np.ndarray:
    """Lighting, white balance, colour, blur, noise and JPEG changes of an HxWx3 uint8 BGR image.

    Exposure, white balance, contrast and gamma are folded into one lookup table per channel.
    ``colour``: the strength of the colour changes alone (channels swapped, grey, each channel's gain: another
    camera's colours, ``pi-table eval --colour``); None, as shipped, takes ``strength``. It draws the same random
    numbers either way, so a run without it is the run it was.
    """
    tint = strength if colour is None else colour
    img = image
    if rng.random() < 0.25 * tint:
        img = np.ascontiguousarray(img[:, :, rng.permutation(3)])  # other dice and tray colours
    if rng.random() < 0.1 * tint:
        img = cv2.cvtColor(cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2BGR)
    levels = np.arange(256, dtype=np.float32)
    gains = np.exp(rng.normal(0, 0.12 * tint, 3)) * math.exp(rng.normal(0, 0.25 * strength))
    contrast = math.exp(rng.normal(0, 0.2 * strength))
    gamma = math.exp(rng.normal(0, 0.2 * strength))
    mean = float(img.mean())
    luts = []
    for c in range(3):
        v = levels * gains[c]
        v = np.clip((v - mean) * contrast + mean, 0, 255)
        luts.append(np.clip(255.0 * (v / 255.0) ** gamma, 0, 255).astype(np.uint8))
    img = cv2.merge([cv2.LUT(ch, lut) for ch, lut in zip(cv2.split(img), luts)])
    if rng.random() < 0.3 * strength:  # uneven light across the frame
        h, w = img.shape[:2]
        gx, gy = rng.normal(0, 0.3, 2)
        ramp = (1 + np.linspace(-0.5, 0.5, w, dtype=np.float32)[None, :] * gx
                + np.linspace(-0.5, 0.5, h, dtype=np.float32)[:, None] * gy)
        img = cv2.multiply(img, cv2.merge([np.clip(ramp, 0, 4)] * 3), dtype=cv2.CV_8U)
    if rng.random() < 0.3 * strength:
        img = cv2.GaussianBlur(img, (0, 0), rng.uniform(0.4, 1.6))
    elif rng.random() < 0.1 * strength:
        k = int(rng.integers(3, 8))
        kernel = np.zeros((k, k), np.float32)
        kernel[k // 2, :] = 1 / k
        rot = cv2.getRotationMatrix2D((k / 2 - 0.5, k / 2 - 0.5), float(rng.uniform(0, 180)), 1.0)
        kernel = cv2.warpAffine(kernel, rot, (k, k))
        kernel /= max(kernel.sum(), 1e-6)
        img = cv2.filter2D(img, -1, kernel)
    if rng.random() < 0.5 * strength:
        noise = np.empty(img.shape, np.int16)
        cv2.randn(noise, 0, float(rng.uniform(1, 7)))
        img = cv2.add(img, noise, dtype=cv2.CV_8U)
    out = img
    if rng.random() < 0.3 * strength:
        ok, enc = cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(35, 92))])
        if ok:
            out = cv2.imdecode(enc, cv2.IMREAD_COLOR)
    return out


# ---------------------------------------------------------------- detector samples

@dataclass
class DetSample:
    """One detector training sample: ``image`` SxSx3 uint8 BGR, ``boxes`` Nx4 float32 pixels."""

    image: np.ndarray
    boxes: np.ndarray


def det_sample(image: np.ndarray, boxes: np.ndarray, rng: np.random.Generator, out: int = 320,
               size_range: tuple[float, float] = (12.0, 90.0)) -> DetSample:
    """A random ``out x out`` view of a labelled image: scale (dice ``size_range`` px across),
    position, 90-degree turns and flips, border fill, then :func:`photometric`."""
    h, w = image.shape[:2]
    sides = np.maximum(boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]) if len(boxes) else np.array([40.0])
    med = float(np.median(sides))
    target = math.exp(rng.uniform(math.log(size_range[0]), math.log(size_range[1])))
    s = target / med
    sw, sh = w * s, h * s
    # Window position in the scaled image: anywhere that keeps some of it in view.
    tx = rng.uniform(min(0, sw - out), max(0, sw - out))
    ty = rng.uniform(min(0, sh - out), max(0, sh - out))
    m = np.array([[s, 0, -tx], [0, s, -ty]], np.float32)
    if rng.random() < 0.5:
        border = dict(borderMode=cv2.BORDER_REFLECT_101)
    else:
        border = dict(borderMode=cv2.BORDER_CONSTANT, borderValue=tuple(int(v) for v in rng.integers(0, 256, 3)))
    view = cv2.warpAffine(image, m, (out, out), flags=cv2.INTER_AREA if s < 1 else cv2.INTER_LINEAR, **border)
    b = boxes.astype(np.float32).copy() if len(boxes) else np.zeros((0, 4), np.float32)
    b[:, [0, 2]] = b[:, [0, 2]] * s - tx
    b[:, [1, 3]] = b[:, [1, 3]] * s - ty
    # Reflected borders mirror dice without labels: only keep reflection when no die is near the edge.
    k = int(rng.integers(0, 4))
    if k:
        view = np.ascontiguousarray(np.rot90(view, k))
        for _ in range(k):  # (x, y) -> (y, out - x) per 90-degree turn counter-clockwise
            b = np.stack([b[:, 1], out - b[:, 2], b[:, 3], out - b[:, 0]], axis=1)
    if rng.random() < 0.5:
        view = np.ascontiguousarray(view[:, ::-1])
        b = np.stack([out - b[:, 2], b[:, 1], out - b[:, 0], b[:, 3]], axis=1)
    view = photometric(view, rng)
    return DetSample(view, b.astype(np.float32))


def det_targets(boxes: np.ndarray, out: int = 320) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """CenterNet targets at stride 4 for ``boxes`` (Nx4 pixels of an out x out view).

    Returns heat (1xGxG), size (2xGxG, box w/h in cells), offset (2xGxG), mask (1xGxG, 1 at
    centre cells; 0 elsewhere), G = out / 4. Boxes whose centre is outside the view are dropped;
    their heat is left at 0 but masked out of the loss with -1 in heat.
    """
    g = out // STRIDE
    heat = np.zeros((1, g, g), np.float32)
    size = np.zeros((2, g, g), np.float32)
    offset = np.zeros((2, g, g), np.float32)
    mask = np.zeros((1, g, g), np.float32)
    for x0, y0, x1, y1 in boxes:
        cx, cy = (x0 + x1) / 2 / STRIDE, (y0 + y1) / 2 / STRIDE
        bw, bh = (x1 - x0) / STRIDE, (y1 - y0) / STRIDE
        if not (0 <= cx < g and 0 <= cy < g) or bw <= 0.5 or bh <= 0.5:
            continue
        # A die cut by the view's edge: train neither for nor against it (heat -1 = ignore).
        cut = x0 < -0.25 * (x1 - x0) or y0 < -0.25 * (y1 - y0) or x1 > out + 0.25 * (x1 - x0) or y1 > out + 0.25 * (y1 - y0)
        sigma = max(0.6, 0.16 * min(bw, bh))
        r = int(math.ceil(3 * sigma))
        ix, iy = int(cx), int(cy)
        ya, yb, xa, xb = max(0, iy - r), min(g, iy + r + 1), max(0, ix - r), min(g, ix + r + 1)
        yy, xx = np.mgrid[ya:yb, xa:xb].astype(np.float32)
        blob = np.exp(-((xx - cx + 0.5) ** 2 + (yy - cy + 0.5) ** 2) / (2 * sigma**2))
        window = heat[0, ya:yb, xa:xb]
        if cut:
            window[blob > 0.1] = -1.0
            continue
        np.copyto(window, np.maximum(window, blob), where=window >= 0)
        heat[0, iy, ix] = 1.0
        size[:, iy, ix] = (bw, bh)
        offset[:, iy, ix] = (cx - ix, cy - iy)
        mask[0, iy, ix] = 1.0
    return heat, size, offset, mask


# ---------------------------------------------------------------- classifier crops

def crop_rotated(image: np.ndarray, cx: float, cy: float, side: float, angle: float, size: int) -> np.ndarray:
    """A ``size x size`` crop of ``side`` pixels around (cx, cy), turned by ``angle`` degrees.

    With angle 0 and ``side <= 3 * size`` this is exactly :func:`pi_table.vision.reader.crop_die`
    (same affine map); the training dice (photos and renders, 12 to 90 pixels) are never larger.
    """
    scale = size / side
    m = cv2.getRotationMatrix2D((cx, cy), angle, scale)
    m[0, 2] += size / 2 - cx
    m[1, 2] += size / 2 - cy
    return cv2.warpAffine(image, m, (size, size), flags=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR,
                          borderMode=cv2.BORDER_REPLICATE)


@dataclass
class DieCrop:
    """A classifier training crop: ``image`` SxSx3 uint8 BGR and its box target.

    ``box`` is the labelled box in the crop's frame as the reader's refinement head predicts
    it: (dx, dy) = box centre minus crop centre, in crop sides; (lw, lh) = log(box w, h /
    crop side). ``box_known`` is False when the crop was turned by an angle that is not a
    multiple of 90 degrees (the axis-aligned box of a turned die is not defined by the label).
    """

    image: np.ndarray
    box: np.ndarray
    box_known: bool


def box_target(box, cx: float, cy: float, side: float) -> np.ndarray:
    """(dx, dy, lw, lh) of ``box`` for a crop of ``side`` pixels centred at (cx, cy), unturned."""
    x0, y0, x1, y1 = (float(v) for v in box)
    return np.array([((x0 + x1) / 2 - cx) / side, ((y0 + y1) / 2 - cy) / side,
                     math.log(max(x1 - x0, 1e-3) / side), math.log(max(y1 - y0, 1e-3) / side)], np.float32)


def die_crop(image: np.ndarray, box, rng: np.random.Generator, size: int, margin: float, jitter: float = 1.0) -> DieCrop:
    """Crop of a labelled die as the reader would cut it from a detector's box: the centre
    and size jittered like a detector's error (``jitter`` scales it; 0 for none), turned by
    a multiple of 90 degrees, or half the time by any angle."""
    x0, y0, x1, y1 = (float(v) for v in box)
    side = max(x1 - x0, y1 - y0)
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    k = int(rng.integers(0, 4)) if jitter else 0
    free = bool(jitter) and rng.random() < 0.5
    angle = 90.0 * k + (float(rng.uniform(0, 90)) if free else 0.0)
    if jitter:
        cx += rng.normal(0, 0.1 * jitter) * side
        cy += rng.normal(0, 0.1 * jitter) * side
        side *= math.exp(rng.normal(0, 0.15 * jitter))
    crop_side = side * margin
    target = box_target(box, cx, cy, crop_side)
    # getRotationMatrix2D turns counter-clockwise on screen by `angle`; follow the centre offset.
    t = math.radians(90.0 * k)
    dx, dy = target[0], target[1]
    target[0], target[1] = dx * math.cos(t) + dy * math.sin(t), -dx * math.sin(t) + dy * math.cos(t)
    if k % 2:
        target[2], target[3] = target[3], target[2]
    return DieCrop(crop_rotated(image, cx, cy, crop_side, angle, size), target, not free)


def is_unlabelled(box, labels: np.ndarray, max_iou: float = 0.25) -> bool:
    """True when a detected ``box`` is no labelled die: IoU < ``max_iou`` with every label and
    no label's centre inside it (a die whose label boxes only its pips, as in matteop65's
    ones, still counts as labelled)."""
    from pi_table.vision.reader import iou

    x0, y0, x1, y1 = box
    for b in labels:
        cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
        if x0 <= cx <= x1 and y0 <= cy <= y1 or iou(tuple(box), tuple(b)) >= max_iou:
            return False
    return True


def negative_crop(image: np.ndarray, boxes: np.ndarray, rng: np.random.Generator, size: int, margin: float):
    """A crop that is not one die (background, or a die's edge): label ``none``; None if not found."""
    from pi_table.vision.reader import iou

    h, w = image.shape[:2]
    sides = np.maximum(boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]) if len(boxes) else np.array([40.0])
    for _ in range(20):
        side = float(np.median(sides) * math.exp(rng.normal(0, 0.25)))
        if len(boxes) and rng.random() < 0.4:  # off-centre on a die: a duplicate or a half box
            b = boxes[int(rng.integers(len(boxes)))]
            bs = max(b[2] - b[0], b[3] - b[1])
            ang = rng.uniform(0, 2 * math.pi)
            dist = rng.uniform(0.6, 0.9) * bs
            cx, cy = (b[0] + b[2]) / 2 + dist * math.cos(ang), (b[1] + b[3]) / 2 + dist * math.sin(ang)
        else:
            cx, cy = rng.uniform(0, w), rng.uniform(0, h)
        cand = (cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2)
        if all(iou(cand, tuple(b)) < 0.2 for b in boxes):
            return crop_rotated(image, cx, cy, side * margin, float(rng.uniform(0, 360)), size)
    return None


# ---------------------------------------------------------------- copy-paste onto new surfaces
#
# Two data folders are two scenes: a detector trained on them learns "grey tray" and "wooden
# desk" as much as it learns dice (trained on the tray alone, it reads 2% of the desk's dice).
# Pasting labelled dice onto surfaces neither folder has (synthetic felt, wood, black, paper,
# with tray walls) takes the scene away as a cue. Dwibedi et al. 2017, "Cut, Paste and Learn".

def surface(rng: np.random.Generator, size: int) -> np.ndarray:
    """A ``size x size x 3 uint8 BGR`` synthetic table surface (the renderer's train surfaces)."""
    from pi_table.train.render.backgrounds import surfaces_for, synthetic_background

    bg, _ = synthetic_background(rng, size, surfaces_for("train"))
    return np.ascontiguousarray((bg[:, :, ::-1] * 255 + 0.5).astype(np.uint8))


def recolour_die(patch: np.ndarray, core: int, rng: np.random.Generator) -> np.ndarray:
    """The die in ``patch`` (HxWx3 uint8 BGR, the die centred, its body at least ``core`` pixels
    across) in other colours: its brightness, stretched between the 2nd and 98th percentiles of
    the central ``core x core`` square, mapped through a random two-colour ramp (a duotone; pip
    colour at the dark end, body colour at the bright end, or the other way round, at least
    0.35 apart in grey level). The pips, the shading of the sides and the shape stay; a white
    die with black pips may come out a black die with red pips or a green die with white ones.

    Domain randomisation (Tobin et al. 2017) of the pasted dice: one folder's photos show white
    dice only, and a reader that learned them alongside rendered coloured dice missed half of
    the other folder's coloured real dice (models/history/classifier.md, leave one folder out).
    Returns an array of ``patch``'s shape, uint8.
    """
    grey = cv2.cvtColor(patch, cv2.COLOR_BGR2GRAY).astype(np.float32)
    h, w = grey.shape
    c = max(2, min(int(core), h, w))
    y0, x0 = (h - c) // 2, (w - c) // 2
    lo, hi = np.percentile(grey[y0 : y0 + c, x0 : x0 + c], (2, 98))
    t = np.clip((grey - lo) / max(float(hi - lo), 8.0), 0, 1) ** math.exp(rng.normal(0, 0.3))
    weights = np.array([0.114, 0.587, 0.299])  # grey level of a BGR colour
    for _ in range(20):
        dark, bright = rng.uniform(0, 255, (2, 3))
        if float((bright - dark) @ weights) >= 0.35 * 255:
            break
    else:
        dark, bright = np.zeros(3), np.full(3, 255.0)
    if rng.random() < 0.5:
        dark, bright = bright, dark
    out = dark[None, None, :] + (bright - dark)[None, None, :] * t[:, :, None]
    return np.clip(out + 0.5, 0, 255).astype(np.uint8)


def paste_die(canvas: np.ndarray, image: np.ndarray, box, cx: float, cy: float, side: float,
              rng: np.random.Generator, recolour: float = 0.0) -> tuple[float, float, float, float]:
    """Paste the die of ``image`` in ``box`` onto ``canvas`` (in place), centred at (cx, cy),
    its long side ``side`` canvas pixels, turned by a random multiple of 90 degrees and maybe
    mirrored, with a soft-edged mask and a soft shadow; with chance ``recolour`` (0..1) in other
    colours (:func:`recolour_die`). ``recolour`` 0 draws nothing more from ``rng``.

    ``canvas`` and ``image`` are HxWx3 uint8 BGR; returns the die's new box (x0, y0, x1, y1)
    in canvas pixels (the label box moved with the die, so loose or tight labels stay so).
    """
    x0, y0, x1, y1 = (float(v) for v in box)
    bw, bh = x1 - x0, y1 - y0
    s = side / max(bw, bh, 1.0)
    k = int(rng.integers(0, 4))
    if k % 2:
        bw, bh = bh, bw
    flip = rng.random() < 0.5
    pw, ph = bw * s, bh * s
    half = int(math.ceil(max(pw, ph) * 0.75)) + 2
    n = 2 * half
    # Patch: the source around the die, scaled, centred; then turned and mirrored.
    m = np.array([[s, 0, half - (x0 + x1) / 2 * s], [0, s, half - (y0 + y1) / 2 * s]], np.float32)
    patch = cv2.warpAffine(image, m, (n, n), flags=cv2.INTER_AREA if s < 1 else cv2.INTER_LINEAR,
                           borderMode=cv2.BORDER_REPLICATE)
    patch = np.rot90(patch, k)
    if flip:
        patch = patch[:, ::-1]
    if recolour > 0 and rng.random() < recolour:
        patch = recolour_die(np.ascontiguousarray(patch), int(0.7 * min(pw, ph)), rng)
    # Mask: the box grown a little (the die's sides and rounded corners), feathered.
    mask = np.zeros((n, n), np.float32)
    gw, gh = pw * rng.uniform(0.94, 1.08) / 2, ph * rng.uniform(0.94, 1.08) / 2
    radius = int(max(1, 0.25 * min(gw, gh) * 2))
    a, b = (int(round(half - gw)), int(round(half - gh))), (int(round(half + gw)), int(round(half + gh)))
    cv2.rectangle(mask, (a[0] + radius, a[1]), (b[0] - radius, b[1]), 1.0, -1)
    cv2.rectangle(mask, (a[0], a[1] + radius), (b[0], b[1] - radius), 1.0, -1)
    for px, py in ((a[0] + radius, a[1] + radius), (b[0] - radius, a[1] + radius),
                   (a[0] + radius, b[1] - radius), (b[0] - radius, b[1] - radius)):
        cv2.circle(mask, (px, py), radius, 1.0, -1)
    mask = cv2.GaussianBlur(mask, (0, 0), max(0.6, 0.04 * side))
    # Place it, clipped to the canvas.
    H, W = canvas.shape[:2]
    ox, oy = int(round(cx - half)), int(round(cy - half))
    ca, cb = max(0, ox), max(0, oy)
    cc, cd = min(W, ox + n), min(H, oy + n)
    if cc > ca and cd > cb:
        region = canvas[cb:cd, ca:cc].astype(np.float32)
        pm = mask[cb - oy : cd - oy, ca - ox : cc - ox, None]
        # Shadow: the mask shifted away from a light, darkening the surface under the die.
        dx, dy = (int(v) for v in rng.integers(-1, 2, 2) * max(1, int(0.06 * side)))
        shadow = np.roll(np.roll(mask, dy, 0), dx, 1)
        shadow = cv2.GaussianBlur(shadow, (0, 0), max(1.0, 0.08 * side))[cb - oy : cd - oy, ca - ox : cc - ox, None]
        region *= 1 - rng.uniform(0.2, 0.5) * shadow
        src = np.ascontiguousarray(patch)[cb - oy : cd - oy, ca - ox : cc - ox].astype(np.float32)
        canvas[cb:cd, ca:cc] = np.clip(region * (1 - pm) + src * pm, 0, 255).astype(np.uint8)
    return (cx - pw / 2, cy - ph / 2, cx + pw / 2, cy + ph / 2)


def paste_sample(dice: list, image_of, rng: np.random.Generator, out: int = 256,
                 size_range: tuple[float, float] = (12.0, 70.0), max_dice: int = 14,
                 recolour: float = 0.0) -> DetSample:
    """A detector sample of labelled dice pasted onto a new surface (see :func:`paste_die`;
    ``recolour`` the chance that each die is recoloured).

    ``dice`` is a list of (LabelledImage, Die) to draw from, ``image_of`` maps a LabelledImage
    to its HxWx3 uint8 BGR pixels. Dice keep apart (no overlap), one size per scene.
    """
    canvas = surface(rng, out)
    side = math.exp(rng.uniform(math.log(size_range[0]), math.log(size_range[1])))
    boxes: list[tuple[float, float, float, float]] = []
    for _ in range(int(rng.integers(1, max_dice + 1))):
        im, die = dice[int(rng.integers(len(dice)))]
        s = side * math.exp(rng.normal(0, 0.08))
        for _ in range(10):
            cx, cy = rng.uniform(0.3 * s, out - 0.3 * s, 2)
            if all(abs(cx - (b[0] + b[2]) / 2) > 0.55 * (s + b[2] - b[0]) or abs(cy - (b[1] + b[3]) / 2) > 0.55 * (s + b[3] - b[1])
                   for b in boxes):
                boxes.append(paste_die(canvas, image_of(im), die.box, float(cx), float(cy), s, rng, recolour))
                break
    view = photometric(canvas, rng)
    return DetSample(view, np.array(boxes, np.float32).reshape(-1, 4))


# ---------------------------------------------------------------- a bank of die crops
#
# Rendered dice are many (tens of thousands) and their scenes large: cutting each die once, at
# twice its size, and turning, shifting and scaling that small crop at every step is much
# cheaper than cutting from the scene again, and any angle can be drawn.

@dataclass
class CropBank:
    """Dice cut once from their images: ``crops`` N x B x B x 3 uint8 BGR, each die's box
    centred with its long side ``B / margin`` pixels; ``labels`` N class names ``KIND:FACE``."""

    crops: np.ndarray
    labels: list[str]
    margin: float
    #: N x 2 float32: each die's box centre minus its image's centre, in image long sides (x right, y down).
    offsets: np.ndarray | None = None

    @classmethod
    def cut(cls, images, keep, side: int, margin: float = 2.0, load=None, label=None) -> "CropBank":
        """The dice of ``images`` (LabelledImage) for which ``keep(die)`` is true, each cut as a
        ``side`` x ``side`` crop ``margin`` times its box's long side (``load``: path ->
        HxWx3 uint8 BGR, default :func:`load_rgb`), labelled ``label(die)`` (default ``KIND:FACE``)."""
        from pi_table.vision.reader import centre_offset, crop_die

        load = load or load_rgb
        crops, labels, offsets = [], [], []
        for im in images:
            dice = [d for d in im.dice if keep(d)]
            if not dice:
                continue
            image = load(im.path)
            for d in dice:
                crops.append(crop_die(image, d.box, side, margin))
                labels.append(label(d) if label else f"{d.kind}:{d.face}")
                offsets.append(centre_offset(d.box, image.shape[1], image.shape[0]))
        array = np.stack(crops) if crops else np.zeros((0, side, side, 3), np.uint8)
        return cls(array, labels, margin, np.array(offsets, np.float32).reshape(-1, 2))

    def __len__(self) -> int:
        return len(self.labels)

    def sample(self, i: int, rng: np.random.Generator, size: int, margin: float, jitter: float = 1.0,
               offset: bool = False):
        """Die ``i`` as the reader would crop it (``size`` x ``size``, ``margin`` times its box),
        turned by any angle, its centre and size moved like a detector's error (``jitter``
        scales it: 0.07 and 0.12 of the box, 1 sigma). With ``offset``, also its offset from
        the image centre (:attr:`offsets`) turned as the crop was: (crop, 2 float32)."""
        bank = self.crops[i]
        b = bank.shape[0]
        die = b / self.margin  # the die's long side in bank pixels
        side = margin * die * math.exp(rng.normal(0, 0.12 * jitter))
        cx, cy = b / 2 + rng.normal(0, 0.07 * jitter, 2) * die
        scale = size / side
        m = cv2.getRotationMatrix2D((float(cx), float(cy)), float(rng.uniform(0, 360)), scale)
        m[0, 2] += size / 2 - cx
        m[1, 2] += size / 2 - cy
        crop = cv2.warpAffine(bank, m, (size, size), flags=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR,
                              borderMode=cv2.BORDER_REPLICATE)
        if not offset:
            return crop
        return crop, (m[:, :2] / scale @ self.offsets[i]).astype(np.float32)

