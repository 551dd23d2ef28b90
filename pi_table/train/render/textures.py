"""Fonts, colour palettes and the ink masks printed on each face (numerals, marks, pips, logos).

Splits are deterministic: fonts are split by family and palettes by name, both with an md5
of the name, so that the ``valid`` split sees fonts and colours that ``train`` never does.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from pi_table.train.render import md5_int, of_split

TEX = 96  # texture side in pixels (one square texture per face)
FONT_DIRS = ("/usr/share/fonts", "/usr/local/share/fonts", "~/.fonts", "~/.local/share/fonts")
DEFAULT_FONT = "<pillow-default>"
# not printed on dice: symbol sets, scripts, hairline weights
_SKIP_FONT_WORDS = ("math", "symbol", "emoji", "dingbat", "d050000l", "z003", "hairline", "thin", "extralight")
# metric clones of one design count as one family, so that no design is on both sides of the split
_CLONES = {
    "liberationserif": "times", "nimbus": "times", "freeserif": "times", "tinos": "times",
    "liberationsans": "helvetica", "nimbussans": "helvetica", "freesans": "helvetica", "arimo": "helvetica",
    "liberationmono": "courier", "nimbusmono": "courier", "freemono": "courier", "cousine": "courier",
    "dejavusansmono": "dejavusans", "bitstreamvera": "dejavusans",
    # TeX Gyre's clones of the URW designs (only ever met among --extra-fonts)
    "texgyretermes": "times", "texgyreheros": "helvetica", "texgyrecursor": "courier", "texgyreschola": "c059",
    "texgyrebonum": "urwbookman", "texgyrepagella": "p052", "texgyreadventor": "urwgothic",
}
MAX_EXTRA_PER_FAMILY = 4  # files a family of --extra-fonts gives at most, so that no big family crowds the rest
_STYLE_WORDS = ("regular", "bold", "italic", "oblique", "light", "thin", "extra", "semi", "demi", "medium",
                "black", "heavy", "book", "roman", "condensed", "narrow", "hairline", "ps", "ttf", "mt")


def _family(path: str) -> str:
    """Family of a font file: stem before the first '-' or '_', without style / width words
    (DejaVuSansCondensed-Bold -> dejavusans, NimbusSansNarrow-Bold -> nimbussans, LinLibertine_RB ->
    linlibertine)."""
    name = Path(path).stem.split("-")[0].split("_")[0].lower()
    changed = True
    while changed:
        changed = False
        for w in _STYLE_WORDS:
            if name.endswith(w) and len(name) > len(w) + 2:
                name = name[: -len(w)]
                changed = True
    return _CLONES.get(name, name)


def _digit_fonts(dirs: list[str]) -> tuple[str, ...]:
    """TTF/OTF files under ``dirs`` (searched recursively) that print ten distinct, visible digits, sorted."""
    found: set[str] = set()
    for d in dirs:
        root = Path(os.path.expanduser(d))
        if not root.is_dir():
            continue
        for p in root.rglob("*"):
            if p.suffix.lower() in (".ttf", ".otf") and not any(w in p.name.lower() for w in _SKIP_FONT_WORDS):
                found.add(str(p))
    good = []
    for p in sorted(found):
        try:
            f = ImageFont.truetype(p, 40)
            glyphs = set()
            for c in "0123456789":
                m = f.getmask(c)
                bb = m.getbbox()
                if not bb or bb[2] - bb[0] < 3 or bb[3] - bb[1] < 15:
                    break
                glyphs.add(bytes(m))
            else:
                if len(glyphs) == 10:  # ten different, visible digits
                    good.append(p)
        except Exception:  # unreadable font file: skip
            continue
    return tuple(good)


@lru_cache(maxsize=1)
def all_fonts() -> tuple[str, ...]:
    """TTF/OTF fonts on this system that print the ten digits, sorted; may be empty."""
    extra = os.environ.get("PI_TABLE_FONT_DIRS", "")
    return _digit_fonts([d for d in extra.split(os.pathsep) if d] + list(FONT_DIRS))


@lru_cache(maxsize=8)
def extra_train_fonts(dirs: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Fonts for the ``train`` split only, from folders outside the system's (``render --extra-fonts``):
    more designs for the numeral model to learn digits from, while ``valid``'s held-out families and
    the split itself (:func:`fonts_for`, :func:`font_set`) stay as they are.

    A file is dropped when its family (:func:`_family`, clones joined) is one of ``valid``'s, or is
    already a system family, or its name is a system font's; each family keeps at most
    :data:`MAX_EXTRA_PER_FAMILY` files, evenly spaced in name order.

    Returns:
        (kept, dropped): absolute paths, sorted.
    Raises:
        ValueError: a folder that does not exist."""
    for d in dirs:
        if not d or not Path(os.path.expanduser(d)).is_dir():
            raise ValueError(f"--extra-fonts folder {d!r} does not exist")
    system = all_fonts()
    system_names = {Path(p).name for p in system}
    system_fams = {_family(p) for p in system}
    kept: dict[str, list[str]] = {}
    dropped = []
    for p in _digit_fonts(list(dirs)):
        fam = _family(p)
        if fam in system_fams or Path(p).name in system_names:
            dropped.append(p)
        else:
            kept.setdefault(fam, []).append(p)
    out = []
    for fam, files in kept.items():
        pick = set(np.linspace(0, len(files) - 1, min(len(files), MAX_EXTRA_PER_FAMILY)).round().astype(int).tolist())
        out += [f for i, f in enumerate(files) if i in pick]
        dropped += [f for i, f in enumerate(files) if i not in pick]
    return tuple(sorted(out)), tuple(sorted(dropped))


def extra_fonts_line(fonts: tuple[str, ...]) -> str:
    """One line naming ``--extra-fonts``' kept files, e.g. ``extra train fonts: 124 files, 35 families,
    set 0a1b2c3d`` (the set id as :func:`font_set`'s, over the file names)."""
    digest = format(md5_int("\n".join(sorted(Path(p).name for p in fonts))), "032x")[:8]
    return f"extra train fonts: {len(fonts)} files, {len({_family(p) for p in fonts})} families, set {digest}"


@lru_cache(maxsize=4)
def fonts_for(split: str) -> tuple[str, ...]:
    """Fonts of a split.  Families are ordered by md5 and about a quarter (at least one) go to
    ``valid``; the rest to ``train``.  With one family or none, both splits share what exists
    (Pillow's default font when nothing is installed)."""
    fonts = all_fonts()
    if not fonts:
        return (DEFAULT_FONT,)
    fams = sorted({_family(p) for p in fonts}, key=md5_int)
    if len(fams) < 2:
        return fonts
    n_valid = max(1, round(len(fams) / 4))
    valid_fams = set(fams[:n_valid])
    chosen = tuple(p for p in fonts if (_family(p) in valid_fams) == (split == "valid"))
    return chosen


def font_set() -> str:
    """One line naming the fonts the renderer draws numerals with, e.g. ``fonts: 137 files, 16 families
    (train 109, valid 28), set 1f0c2a9e``. The set id is the first 8 hex digits of the md5 of the
    sorted file names (not their folders) with each file's split: two machines whose lines match
    render the same numerals from the same seed. Extra font packages change the renders (Debian's
    chromium recommends ``fonts-liberation``, 16 more files); docs/renders.md gives the line for the
    packages it lists."""
    fonts = all_fonts()
    valid = set(fonts_for("valid"))
    if not fonts:
        return f"fonts: none installed, Pillow's default font in both splits, set {DEFAULT_FONT}"
    names = sorted(f"{Path(p).name}:{'valid' if p in valid else 'train'}" for p in fonts)
    digest = format(md5_int("\n".join(names)), "032x")[:8]
    n_valid = sum(1 for p in fonts if p in valid)
    families = len({_family(p) for p in fonts})
    return (f"fonts: {len(fonts)} files, {families} families (train {len(fonts) - n_valid}, valid {n_valid}), "
            f"set {digest}")


@lru_cache(maxsize=256)
def load_font(path: str, size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    if path == DEFAULT_FONT:
        try:
            return ImageFont.load_default(size)
        except TypeError:  # old Pillow: bitmap font only
            return ImageFont.load_default()
    return ImageFont.truetype(path, size)


# Colour palettes: (name, body RGB, ink RGB, second colour for marbled bodies). 0..255 sRGB.
PALETTES: tuple[tuple[str, tuple[int, int, int], tuple[int, int, int], tuple[int, int, int]], ...] = (
    ("ivory-black", (236, 230, 214), (25, 25, 25), (200, 190, 170)),
    ("white-black", (242, 242, 240), (20, 20, 22), (210, 210, 215)),
    ("white-red", (240, 238, 232), (190, 25, 30), (215, 210, 205)),
    ("white-blue", (238, 240, 242), (30, 60, 170), (200, 210, 230)),
    ("black-white", (28, 28, 30), (235, 235, 235), (70, 70, 75)),
    ("black-gold", (22, 20, 20), (215, 170, 60), (60, 50, 40)),
    ("black-red", (25, 24, 26), (200, 30, 30), (70, 30, 30)),
    ("red-white", (185, 25, 30), (240, 240, 240), (120, 10, 20)),
    ("red-black", (200, 40, 35), (20, 20, 20), (240, 120, 90)),
    ("blue-white", (30, 70, 170), (240, 240, 240), (120, 170, 230)),
    ("navy-gold", (20, 30, 80), (220, 180, 70), (50, 80, 150)),
    ("green-white", (30, 140, 60), (240, 240, 240), (10, 70, 30)),
    ("green-gold", (15, 80, 40), (220, 180, 60), (60, 140, 80)),
    ("yellow-black", (240, 205, 40), (25, 25, 25), (250, 150, 30)),
    ("orange-black", (240, 120, 30), (20, 20, 20), (200, 60, 20)),
    ("purple-white", (100, 40, 140), (240, 240, 240), (40, 20, 70)),
    ("purple-gold", (70, 25, 100), (225, 185, 70), (150, 90, 180)),
    ("pink-black", (240, 130, 170), (25, 25, 25), (250, 200, 220)),
    ("teal-white", (20, 140, 140), (240, 240, 240), (10, 80, 90)),
    ("grey-red", (130, 130, 135), (190, 30, 30), (80, 80, 85)),
    ("brown-white", (110, 70, 40), (235, 225, 210), (170, 120, 70)),
    ("cyan-black", (90, 200, 230), (20, 20, 30), (40, 120, 200)),
    ("lime-black", (170, 220, 50), (20, 30, 20), (90, 160, 40)),
    ("maroon-white", (110, 20, 35), (240, 230, 220), (60, 10, 20)),
    ("skyblue-black", (150, 190, 235), (20, 20, 30), (220, 230, 250)),
    ("olive-white", (110, 110, 50), (235, 235, 220), (70, 70, 30)),
    ("magenta-white", (200, 30, 140), (245, 245, 245), (120, 20, 90)),
    ("silver-black", (190, 195, 200), (20, 20, 25), (150, 150, 160)),
)


#: Palettes whose pips are about as bright as the die's body, or coloured on a dark body (smoky dice with red pips,
#: as nellbyler's photos show; pips a shade off the body): the training palettes print pips at least 120 grey levels
#: from the body but for two (models/history/classifier.md, "Rendered d6 read wrong at `ok`"). Drawn only by
#: ``render --faint-pips`` for the train split; never in :func:`palettes_for`, so the valid split stays as it was.
FAINT_PALETTES: tuple[tuple[str, tuple[int, int, int], tuple[int, int, int], tuple[int, int, int]], ...] = (
    ("smoke-red", (45, 40, 42), (170, 35, 40), (80, 70, 75)),
    ("black-green", (25, 25, 28), (40, 150, 60), (60, 60, 65)),
    ("navy-red", (25, 30, 75), (190, 40, 40), (50, 60, 120)),
    ("smoke-blue", (50, 50, 55), (60, 110, 210), (90, 90, 100)),
    ("maroon-black", (120, 25, 35), (20, 20, 20), (170, 60, 70)),
    ("purple-black", (90, 40, 130), (15, 15, 20), (140, 90, 180)),
    ("blue-black", (40, 70, 160), (15, 15, 25), (90, 120, 210)),
    ("green-black", (40, 120, 60), (15, 25, 15), (80, 170, 100)),
    ("grey-white", (150, 150, 155), (235, 235, 235), (110, 110, 115)),
    ("white-silver", (240, 240, 238), (160, 160, 165), (210, 210, 212)),
    ("yellow-grey", (235, 210, 60), (120, 120, 120), (250, 170, 40)),
    ("pink-red", (240, 150, 180), (190, 30, 50), (250, 200, 215)),
    ("orange-red", (240, 130, 40), (160, 20, 20), (250, 180, 90)),
)


@lru_cache(maxsize=4)
def palettes_for(split: str) -> tuple[tuple, ...]:
    """Palettes of a split: those whose md5(name) % 5 == 0 are held out for ``valid``."""
    return of_split(PALETTES, lambda p: p[0], split)


#: A body or surface this dark (its grey, 0..255 sRGB, ITU-R BT.601 luma) is "dark" for ``--dark`` scenes.
DARK_GREY = 60.0


def grey_of(rgb) -> float:
    """The grey (0..255, BT.601 luma) of an sRGB colour (R, G, B) in 0..255."""
    return 0.299 * float(rgb[0]) + 0.587 * float(rgb[1]) + 0.114 * float(rgb[2])


def dark_bodied(palettes) -> tuple[tuple, ...]:
    """The ``palettes`` whose body is dark (:data:`DARK_GREY`)."""
    return tuple(p for p in palettes if grey_of(p[1]) < DARK_GREY)


@lru_cache(maxsize=4)
def dark_palettes_for(split: str) -> tuple[tuple, ...]:
    """The palettes of a split whose body is dark (:data:`DARK_GREY`): black, navy, maroon dice.
    Dark dice on dark ground are the detector's weak case (models/history/detector.md, "Dark dice on dark
    ground")."""
    return dark_bodied(palettes_for(split))


@lru_cache(maxsize=2)
def faint_palettes(dark: bool = False) -> tuple[tuple, ...]:
    """:data:`FAINT_PALETTES`, with ``dark`` their dark-bodied ones only (``render --faint-pips --dark``)."""
    return dark_bodied(FAINT_PALETTES) if dark else FAINT_PALETTES


# ---------------------------------------------------------------------------------------------
# Ink masks.  A mask is a float32 TEX x TEX array in 0..1, the square texture laid on a face with
# its centre on the face's numeral centre, rows going down the numeral, columns to its right.


def _draw_text(draw: ImageDraw.ImageDraw, text: str, font, cx: float, cy: float, height_px: float,
               mark: str, fill: int = 255, stroke: int = 0) -> None:
    """Draw ``text`` with its ink box centred at (cx, cy) and cap height about ``height_px``.
    ``mark``: "" | "underline" | "dot" (a full stop after the numeral)."""
    l, t, r, b = font.getbbox(text)
    w, h = r - l, b - t
    x0 = cx - w / 2 - l
    y0 = cy - h / 2 - t
    draw.text((x0, y0), text, font=font, fill=fill, stroke_width=stroke, stroke_fill=fill)
    if mark == "underline":
        th = max(1.0, 0.09 * h)
        uw = 0.85 * w if len(text) == 1 else 0.6 * w
        y = cy + h / 2 + 0.12 * h
        draw.rectangle([cx - uw / 2, y, cx + uw / 2, y + th], fill=fill)
    elif mark == "dot":
        rad = max(1.0, 0.075 * h)
        x = cx + w / 2 + 0.16 * h
        y = cy + h / 2 - rad
        draw.ellipse([x - rad, y - rad, x + rad, y + rad], fill=fill)


@lru_cache(maxsize=1024)
def _sized_font(font_path: str, cap_px: int):
    """The font at the size whose digit "8" is ``cap_px`` pixels tall."""
    probe = load_font(font_path, 100)
    l, t, r, b = probe.getbbox("8")
    size = max(6, int(round(100 * cap_px / max(1, b - t)))) if hasattr(probe, "size") else 10
    return load_font(font_path, size)


@lru_cache(maxsize=8192)
def numeral_mask(text: str, font_path: str, height_frac: float, mark: str, stroke: int = 0,
                 rotate: int = 0, dy: float = 0.0) -> np.ndarray:
    """Mask of a numeral whose cap height is ``height_frac`` of the texture side; wide texts
    ("10", "00".."90") shrink to fit 86 % of the side."""
    ss = 1
    side = TEX * ss
    img = Image.new("L", (side, side), 0)
    draw = ImageDraw.Draw(img)
    target = height_frac * side
    font = _sized_font(font_path, int(round(target)))
    l, t, r, b = font.getbbox(text)
    maxw = 0.86 * side
    if r - l > maxw and hasattr(font, "size"):
        font = load_font(font_path, max(6, int(font.size * maxw / (r - l))))
    _draw_text(draw, text, font, side / 2, side / 2 + dy * side, target, mark, stroke=stroke * ss * 2)
    if rotate:
        img = img.rotate(rotate, resample=Image.BILINEAR)
    if ss > 1:
        img = img.resize((TEX, TEX), Image.BOX)
    return _clear_border(np.asarray(img, np.float32) / 255.0)


def _clear_border(m: np.ndarray) -> np.ndarray:
    """Texels on the border are blank, so that lookups clamped to the border print nothing."""
    m = m.copy()
    m[0, :] = m[-1, :] = 0.0
    m[:, 0] = m[:, -1] = 0.0
    return m


PIP_LAYOUT = {
    1: [(0, 0)],
    2: [(-1, -1), (1, 1)],
    3: [(-1, -1), (0, 0), (1, 1)],
    4: [(-1, -1), (1, -1), (-1, 1), (1, 1)],
    5: [(-1, -1), (1, -1), (0, 0), (-1, 1), (1, 1)],
    6: [(-1, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (1, 1)],
}


#: The logos :func:`logo_mask` draws on a d6's "1" (render ``--logo-ones``).
LOGOS = ("swirl", "ring", "star", "mark")


@lru_cache(maxsize=64)
def logo_mask(style: str, size: float) -> np.ndarray:
    """Mask of a maker's logo printed on a d6's "1" in place of its pip, as many real dice carry one
    (a swirl with a dot, a ring with a dot, a five-pointed star, a diamond mark): one of :data:`LOGOS`,
    ``size`` its width as a fraction of the face (texture = whole face). TEXxTEX float32 0..1.

    Raises:
        ValueError: an unknown ``style``."""
    if style not in LOGOS:
        raise ValueError(f"logo must be one of {', '.join(LOGOS)}, not {style!r}")
    ss = 3
    side = TEX * ss
    img = Image.new("L", (side, side), 0)
    draw = ImageDraw.Draw(img)
    c, r = side / 2, size * side / 2
    width = max(2, int(round(r * 0.22)))
    dot = r * 0.28
    if style == "swirl":  # two arcs turning about a dot
        draw.arc([c - r, c - r, c + r, c + r], 200, 340, fill=255, width=width)
        draw.arc([c - r, c - r, c + r, c + r], 20, 160, fill=255, width=width)
        draw.arc([c - r * 0.6, c - r * 0.6, c + r * 0.6, c + r * 0.6], 110, 250, fill=255, width=width)
        draw.ellipse([c - dot, c - dot, c + dot, c + dot], fill=255)
    elif style == "ring":
        draw.ellipse([c - r, c - r, c + r, c + r], outline=255, width=width)
        draw.ellipse([c - dot, c - dot, c + dot, c + dot], fill=255)
    elif style == "star":
        angles = np.deg2rad(np.arange(10) * 36.0 - 90.0)
        radii = np.where(np.arange(10) % 2 == 0, r, r * 0.45)
        draw.polygon([(float(c + q * np.cos(a)), float(c + q * np.sin(a))) for q, a in zip(radii, angles)], fill=255)
    else:  # "mark": a diamond with a hollow centre
        draw.polygon([(c, c - r), (c + r * 0.7, c), (c, c + r), (c - r * 0.7, c)], fill=255)
        draw.polygon([(c, c - r * 0.4), (c + r * 0.28, c), (c, c + r * 0.4), (c - r * 0.28, c)], fill=0)
    img = img.resize((TEX, TEX), Image.BOX)
    return _clear_border(np.asarray(img, np.float32) / 255.0)


@lru_cache(maxsize=512)
def pip_mask(value: int, radius: float, spread: float, turn: bool, big_one: float = 1.0) -> np.ndarray:
    """Mask of ``value`` pips on a d6 face (texture = whole face).  ``radius`` and ``spread``
    are fractions of the texture side; ``turn`` mirrors the diagonal of 2, 3 and 6."""
    ss = 3
    side = TEX * ss
    img = Image.new("L", (side, side), 0)
    draw = ImageDraw.Draw(img)
    for x, y in PIP_LAYOUT[value]:
        if turn:
            x, y = -y, x
        cx = side / 2 + x * spread * side
        cy = side / 2 + y * spread * side
        rad = radius * side * (big_one if value == 1 else 1.0)
        draw.ellipse([cx - rad, cy - rad, cx + rad, cy + rad], fill=255)
    img = img.resize((TEX, TEX), Image.BOX)
    return _clear_border(np.asarray(img, np.float32) / 255.0)
