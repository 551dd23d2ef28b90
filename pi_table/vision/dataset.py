"""Labelled dice images on disk, in the formats of ../shared/data/real/README.md.

Two layouts are read:

* **YOLO folders**: ``DIR/images/NAME.jpg`` with ``DIR/labels/NAME.txt`` beside it, one line
  per die ``CLASS CX CY W H`` with ``CLASS`` = face value - 1 (d6) and the box normalised to
  0..1 by image width and height. ``DIR`` may also be a parent of such folders
  (``matteop65-d6-desk`` holds ``Train`` and ``Valid``). A rendered folder (see
  ``pi_table.train.render``) has the same layout with ``CLASS`` an index into its
  ``classes.txt`` ("d8:7", "d10-tens:70").
* **Crop folders** (``--crop``): one die per image, the face given by the sub-folder name
  (``DIR/4/x.jpg``, ``DIR/d8_7/x.jpg``) or by the file name's first token (``4_x.jpg``).

Used by ``pi-table eval`` and by the training code; OpenCV and NumPy only.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from pi_table.vision.dice import face_value

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")


@dataclass(frozen=True)
class LabelledDie:
    """One labelled die: ``kind`` ("d6"), ``face`` ("4"), ``box`` (x0, y0, x1, y1) in pixels;
    ``cocked``: True when it does not lie flat, False when it does, None when the labels do not
    say (photos; renders say it in ``meta/NAME.json``, see docs/renders.md). ``material``: a
    render's die material (``opaque``, ``translucent``, ``marbled``, ``metallic``: the part of its
    meta's ``material`` after the ``/``), None for photos. ``printing``: how a render's die is
    printed (its meta's ``printing.print``: ``pips`` or ``numerals``), None for photos."""

    kind: str
    face: str
    box: tuple[float, float, float, float]
    cocked: bool | None = None
    material: str | None = None
    printing: str | None = None


@dataclass(frozen=True)
class LabelledImage:
    """One labelled image: its path, size in pixels, dice and the data folder it belongs to."""

    path: Path
    width: int
    height: int
    dice: tuple[LabelledDie, ...]
    folder: str


def yolo_folders(root: Path) -> list[Path]:
    """Every folder at or under ``root`` that has ``images/`` and ``labels/`` (sorted).

    Raises:
        FileNotFoundError: ``root`` does not exist.
        ValueError: no labelled folder under ``root``.
    """
    root = Path(root)
    if not root.exists():
        raise FileNotFoundError(f"no such folder: {root}")
    if not root.is_dir():
        raise ValueError(f"not a folder: {root}")
    found = sorted({p.parent for p in root.rglob("images") if p.is_dir() and (p.parent / "labels").is_dir()})
    if not found:
        raise ValueError(f"no images/ and labels/ folders under {root}")
    return found


def folder_label(folder: Path) -> str:
    """A data folder's name for reports and splits: ``nellbyler-d6-tray``, ``matteop65-d6-desk/Valid``."""
    folder = Path(folder).resolve()
    if folder.name.lower() in ("train", "valid", "val", "validation", "test"):
        return f"{folder.parent.name}/{folder.name}"
    return folder.name


def read_classes(folder: Path) -> list[str] | None:
    """``KIND:FACE`` class names from ``classes.txt`` at or above ``folder`` (renders), else None."""
    for parent in (folder, *folder.parents[:2]):
        path = parent / "classes.txt"
        if path.is_file():
            return [line.strip() for line in path.read_text().splitlines() if line.strip()]
    return None


def _image_size(path: Path) -> tuple[int, int]:
    """Width and height as the reader sees the image: turned upright by its EXIF orientation, as
    ``read`` turns it (the stored size of a phone photo taken on its side is the other way round)."""
    from pi_table.vision.reader import load_image

    image = load_image(path)
    return image.shape[1], image.shape[0]


def _class_label(name: str, where: Path) -> tuple[str, str]:
    """``(kind, face)`` of a ``classes.txt`` name: ``d8:3`` (the renders'), or a face value as crops
    are named (``3``, ``d8_3``: :func:`parse_crop_label`); ValueError naming ``where`` otherwise."""
    label = tuple(name.split(":")) if ":" in name else parse_crop_label(name)
    if label is None or len(label) != 2:
        raise ValueError(f"class {name!r} in the classes.txt of {where} is not a die face (e.g. d8:3, or 3 for a d6)")
    try:
        face_value(*label)
    except ValueError as exc:
        raise ValueError(f"class {name!r} in the classes.txt of {where}: {exc}") from None
    return label


#: Each kind's faces in YOLO class order for a folder without a ``classes.txt``: CLASS = face value - 1
#: (``../shared/data/real/README.md``), the value by the kit's default convention (INTERFACES.md), so a
#: d10's "0" (value 10) is class 9; a percentile tens die, whose values are 0, 10, ... 90, is CLASS = value / 10.
YOLO_FACES = {
    "d6": [str(v) for v in range(1, 7)],
    "d8": [str(v) for v in range(1, 9)],
    "d10": [str(v) for v in range(1, 10)] + ["0"],
    "d10-tens": [f"{v}0" for v in range(10)],
}

_KIND_IN_NAME = re.compile(r"(?<![a-z0-9])d(6|8|10)(-tens)?(?![0-9])")


def kind_of_folder(folder: Path) -> str | None:
    """The one die kind a data folder's name gives (``nellbyler-d6-tray`` d6, ``my-d10-tray`` d10,
    ``d10-tens`` d10-tens; the folder or, for ``Train``/``Valid``, its parent); None if none or several."""
    folder = Path(folder)
    names = [folder.name] + ([folder.parent.name] if folder.name.lower() in ("train", "valid", "val", "validation",
                                                                           "test") else [])
    kinds = {f"d{m.group(1)}{m.group(2) or ''}" for name in names for m in _KIND_IN_NAME.finditer(name.lower())}
    return kinds.pop() if len(kinds) == 1 and next(iter(kinds)) in YOLO_FACES else None


def label_file(image_path: Path) -> Path:
    """The YOLO label file of ``image_path``: ``DIR/images/NAME.jpg`` -> ``DIR/labels/NAME.txt``."""
    return image_path.parent.parent / "labels" / (image_path.stem + ".txt")


def load_yolo(root: Path, folder_name: str | None = None, default_kind: str | None = None) -> list[LabelledImage]:
    """All labelled images at or under ``root``, sorted by path.

    ``folder`` of each image is the data folder's name relative to ``root``'s parent
    (e.g. ``matteop65-d6-desk/Valid``), or ``folder_name`` when given.

    A folder's ``classes.txt`` names its classes (the renders': ``d8:3``). Without one, CLASS is
    face value - 1 (:data:`YOLO_FACES`) of one kind of die: ``default_kind`` (``eval --kinds d8``),
    else the kind its name gives (:func:`kind_of_folder`: ``someone-d10-tray``), else d6.

    Raises:
        FileNotFoundError / ValueError: see :func:`yolo_folders`; ValueError for a malformed
        label line (naming the file and line).
    """
    root = Path(root)
    out: list[LabelledImage] = []
    for folder in yolo_folders(root):
        classes = read_classes(folder)
        if classes is not None:
            labels = [_class_label(c, folder) for c in classes]
        else:
            kind = default_kind or kind_of_folder(folder) or "d6"
            labels = [(kind, face) for face in YOLO_FACES[kind]]
        name = folder_name or folder_label(folder)
        for image_path in sorted((folder / "images").iterdir()):
            if image_path.suffix.lower() not in IMAGE_SUFFIXES:
                continue
            label_path = label_file(image_path)
            if not label_path.is_file():
                continue
            width, height = _image_size(image_path)
            dice = []
            for n, line in enumerate(label_path.read_text().splitlines(), 1):
                parts = line.split()
                if not parts:
                    continue
                try:
                    cls = int(parts[0])
                    cx, cy, w, h = (float(v) for v in parts[1:5])
                    if len(parts) != 5 or not all(math.isfinite(v) for v in (cx, cy, w, h)):
                        raise ValueError
                except (ValueError, IndexError):
                    raise ValueError(f"malformed label line {n} in {label_path}: {line!r} "
                                     "(expected CLASS CX CY W H)") from None
                count = len(labels)
                if not 0 <= cls < count:
                    raise ValueError(f"class {cls} on label line {n} in {label_path} is not one of the "
                                     + (f"{count} in classes.txt" if classes is not None else
                                        f"{kind} faces 0..{count - 1} (face value - 1; --kinds or a folder "
                                        "name such as my-d8-tray gives another kind, a classes.txt names several)"))
                kind_face = labels[cls]
                box = ((cx - w / 2) * width, (cy - h / 2) * height, (cx + w / 2) * width, (cy + h / 2) * height)
                dice.append(LabelledDie(*kind_face, box))
            meta = _meta_dice(folder / "meta" / (image_path.stem + ".json"))  # a render's: read once
            flags = _per_die(meta, len(dice), _cocked)
            if flags is not None:
                materials = _per_die(meta, len(dice), _material) or [None] * len(dice)
                printings = _per_die(meta, len(dice), _printing) or [None] * len(dice)
                dice = [LabelledDie(d.kind, d.face, d.box, c, m, pr)
                        for d, c, m, pr in zip(dice, flags, materials, printings)]
            out.append(LabelledImage(image_path, width, height, tuple(dice), name))
    return out


def _meta_dice(meta_path: Path) -> list | None:
    """The ``dice`` list of a render's ``meta/NAME.json``; None when there is no such file or it cannot be read."""
    if not meta_path.is_file():
        return None
    try:
        return json.loads(meta_path.read_text())["dice"]
    except (ValueError, KeyError, TypeError):
        return None


def _per_die(dice: list | None, count: int, value) -> list | None:
    """``value(d)`` for each of a meta's ``dice``; None without them, when one lacks the field or
    they are not ``count``."""
    try:
        values = [value(d) for d in dice]
    except (KeyError, TypeError):
        return None
    return values if len(values) == count else None


def _cocked(d: dict) -> bool:
    return bool(d["cocked"])


def _material(d: dict) -> str:
    return str(d["material"]).split("/")[-1]


def _printing(d: dict) -> str:
    return str(d["printing"]["print"])


def cocked_flags(meta_path: Path, count: int) -> list[bool] | None:
    """Per die, whether it is cocked, from a render's ``meta/NAME.json`` (its ``dice`` in label
    order, each with ``cocked``); None when there is no such file or it does not list ``count``
    dice with that flag."""
    return _per_die(_meta_dice(meta_path), count, _cocked)


def die_materials(meta_path: Path, count: int) -> list[str] | None:
    """Per die, its material (``marbled`` of ``"teal-white/marbled"``) from a render's
    ``meta/NAME.json``; None when there is no such file or it does not list ``count`` dice with one."""
    return _per_die(_meta_dice(meta_path), count, _material)


_CROP_NAME = re.compile(r"^(?:(d\d+(?:-tens)?)[_:])?(\d+)(?:[_\-. ].*)?$")


def parse_crop_label(name: str, default_kind: str = "d6") -> tuple[str, str] | None:
    """``(kind, face)`` from a crop's folder or file-name token ("4", "d8_7", "d10-tens_70"); None if none."""
    match = _CROP_NAME.match(name)
    if not match:
        return None
    return (match.group(1) or default_kind), match.group(2)


#: Folder names that give the kind of the crops under them (``d8/3/x.png``), lower case.
_KIND_FOLDERS = ("d6", "d8", "d10", "d10-tens")


def load_crops(root: Path, default_kind: str = "d6") -> list[tuple[Path, str, str]]:
    """``(path, kind, face)`` for every crop image under ``root`` (sorted).

    The face comes from the crop's folder ("4/x.png") or its file name ("4_x.png", "d8_7.png");
    the kind from that name ("d8_7"), else from a folder above it named by a kind
    ("d8/7/x.png", also ``root`` itself: ``eval crops/d8 --crop``), else ``default_kind``
    (``eval --crop --kinds d8`` makes it d8).

    Raises:
        FileNotFoundError: ``root`` does not exist.
        ValueError: no crop whose face can be told from its folder or file name, or a face
            that is not on its kind of die (named with its path).
    """
    root = Path(root)
    if not root.exists():
        raise FileNotFoundError(f"no such folder: {root}")
    out = []
    for path in sorted(root.rglob("*")):
        if path.suffix.lower() not in IMAGE_SUFFIXES or not path.is_file():
            continue
        folders = [root, *reversed(path.relative_to(root).parents[:-1])]  # root first, then down to the crop's
        kind = default_kind
        for folder in folders:
            kind = folder.name.lower() if folder.name.lower() in _KIND_FOLDERS else kind
        label = parse_crop_label(path.parent.name, kind) if path.parent != root else None
        label = label or parse_crop_label(path.stem, kind)
        if label:
            try:
                face_value(*label)
            except ValueError as exc:
                raise ValueError(f"crop {path}: {exc} (the face is told by its folder or file name)") from None
            out.append((path, *label))
    if not out:
        raise ValueError(f"no crops named by face value under {root}")
    return out


# ---------------------------------------------------------------- pip boxes grown to whole dice
#
# ``matteop65-d6-desk`` boxes a die's pips, not the die (a one's box is its single pip), while
# every other source (nellbyler's photos, the renders, a detector's output) boxes the whole
# visible die. Trained on pip boxes, a detector learns to find single pips as dice and a
# classifier learns that a zoomed-in pip is a one. ``grow_pip_box`` turns a pip box into the
# die's box by segmenting the die around it (GrabCut, Rother et al. 2004).

#: Data folders whose labels box a die's pips rather than the die.
PIP_BOX_FOLDERS: tuple[str, ...] = ("matteop65-d6-desk",)

# A die's outline across per pip-box long side, as grown on matteop65 (medians over its 1206
# dice): 1.5 to 1.8 for faces 2 to 6, whose pips span about two thirds of the top face (the
# oblique webcam adds the sides); 4.6 for a one, whose box is its single pip (the median, over
# the images holding a one, of the other dice's grown outline per that pip's side). GrabCut
# searches 1.1 times this.
_TYPICAL = {"1": 4.6}
_TYPICAL_OTHER = 1.65
# A one's die outline across per its pip's diameter, for a one with no other die in its image to
# take a size from: 7.6 on matteop65 (the median over its 40 ones that share an image with dice
# of other faces; 7.2 to 9.2 from the 10th to the 90th percentile). A one's box there holds its
# pip but is drawn loosely in the images of ones alone (1.7 to 4.5 times the pip across), so
# 4.6 times the box made their dice up to twice too big; the pip itself is measured instead.
_ONE_PER_PIP = 7.6


# A grown die over this many times its expected size (1.1 times typical) has leaked into what
# touches it: over matteop65's 1008 grown dice of faces 2 to 6 the ratio's median is 0.93 and
# its 99th percentile 1.33; the three above 1.5 (1.54 to 1.59, all in Valid) took in the black
# cable beside the die, whose dark matches the pips the foreground was seeded with. Such a die
# gets its typical box instead (:func:`typical_die_box`).
_MOST = 1.5


def pip_diameter(image, box) -> float | None:
    """Diameter in pixels (the long side of its bounding box) of the dark pip in ``box``.

    The box (x0, y0, x1, y1 pixels, a one's label) is split into dark and light by Otsu's
    threshold on grey (Otsu 1979); the pip is the dark part holding the box's centre, else
    the one nearest it. ``image`` is ``HxWx3 uint8 BGR``. None when the box holds no dark part.
    """
    import cv2
    import numpy as np

    h, w = image.shape[:2]
    x0, y0 = int(max(0, np.floor(box[0]))), int(max(0, np.floor(box[1])))
    x1, y1 = int(min(w, np.ceil(box[2]))), int(min(h, np.ceil(box[3])))
    if x1 - x0 < 3 or y1 - y0 < 3:
        return None
    grey = cv2.cvtColor(np.ascontiguousarray(image[y0:y1, x0:x1]), cv2.COLOR_BGR2GRAY)
    _, dark = cv2.threshold(grey, 0, 1, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    n, labels, stats, centres = cv2.connectedComponentsWithStats(dark)
    if n < 2:
        return None
    cx, cy = (x1 - x0) / 2, (y1 - y0) / 2
    k = int(labels[min(y1 - y0 - 1, int(cy)), min(x1 - x0 - 1, int(cx))])
    if k == 0:
        k = 1 + int(np.argmin(np.hypot(centres[1:, 0] - cx, centres[1:, 1] - cy)))
    return float(max(stats[k, 2], stats[k, 3]))


def one_size(image, die: LabelledDie) -> float | None:
    """A one's die outline across in pixels from its pip: :data:`_ONE_PER_PIP` times the
    pip's diameter (:func:`pip_diameter`, in the one's label box); None when no pip is found."""
    pip = pip_diameter(image, die.box)
    return _ONE_PER_PIP * pip if pip else None


def typical_die_box(die: LabelledDie, size: float | None = None) -> tuple[float, float, float, float]:
    """The square a die labelled by its pips typically fills, centred on its pip box: ``size``
    pixels across when given (the image's other dice or a one's pip, :func:`with_die_boxes`),
    else :data:`_TYPICAL` times the pip box's long side."""
    x0, y0, x1, y1 = die.box
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    half = (size or max(x1 - x0, y1 - y0, 2.0) * _TYPICAL.get(die.face, _TYPICAL_OTHER)) / 2
    return (cx - half, cy - half, cx + half, cy + half)


def grow_pip_box(image, die: LabelledDie, others=(), size: float | None = None) -> tuple[float, float, float, float] | None:
    """The whole die's box (x0, y0, x1, y1 pixels) round a die labelled by its pips.

    GrabCut segments the die in a square of 1.1 times its typical size around it, the pip box
    (grown by 15% of its side) marked foreground and the pip boxes of ``others`` (the image's
    other labelled dice) background; the die is the segment's part that holds the pip box's
    centre. A one's box holds only its dark pip, so for a one the square of 0.4 times the
    typical size round the pip (inside its top face) is marked foreground too: seeded by the
    pip alone, GrabCut kept the top face and left the sides (a box 0.7 times the die's).

    Args:
        image: ``HxWx3 uint8 BGR``.
        die: the labelled die (``box`` boxes its pips).
        others: the other labelled dice of the image.
        size: the die's typical outline across in pixels when known (the median of the image's
            other grown dice); else, for a one, sized by its pip (:func:`one_size`), and
            otherwise :data:`_TYPICAL` times the pip box's long side.

    Returns:
        The die's box, or None when the segment is not a plausible die (empty, not holding
        the pip box, under 0.65 times its typical size: stuck on the pips, or over
        :data:`_MOST` times the expected size: leaked into a die touching it or a dark cable).
    """
    import cv2
    import numpy as np

    x0, y0, x1, y1 = die.box
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    side = max(x1 - x0, y1 - y0, 2.0)
    typical = size or (one_size(image, die) if die.face == "1" else None) or side * _TYPICAL.get(die.face, _TYPICAL_OTHER)
    expected = 1.1 * typical
    # GrabCut works on the square round the die (plus a band of background to learn from).
    h, w = image.shape[:2]
    r, band = expected, 0.5 * expected
    ox, oy = int(max(0, cx - r - band)), int(max(0, cy - r - band))
    roi = np.ascontiguousarray(image[oy:int(min(h, cy + r + band + 1)), ox:int(min(w, cx + r + band + 1))])
    rh, rw = roi.shape[:2]
    x0, y0, x1, y1, cx, cy = x0 - ox, y0 - oy, x1 - ox, y1 - oy, cx - ox, cy - oy
    mask = np.full((rh, rw), cv2.GC_BGD, np.uint8)
    mask[int(max(0, cy - r)):int(min(rh, cy + r + 1)), int(max(0, cx - r)):int(min(rw, cx + r + 1))] = cv2.GC_PR_BGD
    q = 0.3 * expected
    mask[int(max(0, cy - q)):int(cy + q + 1), int(max(0, cx - q)):int(cx + q + 1)] = cv2.GC_PR_FGD
    for other in others:
        a0, b0, a1, b1 = (int(round(v)) for v in other.box)
        mask[max(0, b0 - oy):max(0, b1 - oy + 1), max(0, a0 - ox):max(0, a1 - ox + 1)] = cv2.GC_BGD
    # Foreground: the pip box and a little round it, so that the die's colour (not only its
    # pips') seeds the foreground model; a one's pip sits in the middle of its top face.
    g = 0.15 * side
    mask[int(max(0, y0 - g)):int(y1 + g) + 1, int(max(0, x0 - g)):int(x1 + g) + 1] = cv2.GC_FGD
    if die.face == "1":
        f = 0.2 * typical
        mask[int(max(0, cy - f)):int(cy + f) + 1, int(max(0, cx - f)):int(cx + f) + 1] = cv2.GC_FGD
    bgd, fgd = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
    cv2.setRNGSeed(0)
    cv2.grabCut(roi, mask, None, bgd, fgd, 4, cv2.GC_INIT_WITH_MASK)
    fg = ((mask == cv2.GC_FGD) | (mask == cv2.GC_PR_FGD)).astype(np.uint8)
    fg = cv2.morphologyEx(fg, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    _, lab, stats, _ = cv2.connectedComponentsWithStats(fg)
    k = lab[min(rh - 1, int(cy)), min(rw - 1, int(cx))]
    if k == 0:
        return None
    bx, by, bw, bh, _ = (int(v) for v in stats[k])
    holds = bx <= x0 + 1 and by <= y0 + 1 and bx + bw >= x1 - 1 and by + bh >= y1 - 1
    if not holds or max(bw, bh) > _MOST * expected or max(bw, bh) < max(1.05 * side, 0.65 * typical):
        return None
    return (float(bx + ox), float(by + oy), float(bx + bw + ox), float(by + bh + oy))


def boxes_pips(folder: str) -> bool:
    """True when the data folder ``folder`` ("matteop65-d6-desk/Train") labels pips, not dice
    (:data:`PIP_BOX_FOLDERS`)."""
    return any(folder == f or folder.startswith(f + "/") for f in PIP_BOX_FOLDERS)


def with_die_boxes(labelled: LabelledImage, image=None) -> LabelledImage:
    """``labelled`` with each pip box grown to its die's box (:func:`grow_pip_box`) when its
    folder labels pips (:func:`boxes_pips`); a box that cannot be grown becomes the square its
    die typically fills (:func:`typical_die_box`). A one (its box is its pip) is grown last,
    with the median outline of the image's grown dice of faces 2 to 6 as its typical size, or,
    in an image of ones alone, :data:`_ONE_PER_PIP` times its pip's diameter (:func:`pip_diameter`).

    Args:
        image: the image's ``HxWx3 uint8 BGR`` pixels when already loaded (else read from disk).
    """
    from dataclasses import replace

    import numpy as np

    if not boxes_pips(labelled.folder) or not labelled.dice:
        return labelled
    if image is None:
        import cv2

        image = cv2.imread(str(labelled.path), cv2.IMREAD_COLOR)
        if image is None:
            raise ValueError(f"not an image: {labelled.path}")
    grown: dict[int, tuple] = {}
    sizes = []  # outlines across (pixels) of the faces 2 to 6 grown
    # Faces 2 to 6 first: their pips span the top face, so they grow surely and give the
    # image's die size to the ones, whose box is a single pip.
    for i in sorted(range(len(labelled.dice)), key=lambda i: labelled.dice[i].face == "1"):
        die = labelled.dice[i]
        size = None
        if die.face == "1":
            size = float(np.median(sizes)) if sizes else one_size(image, die)
        box = grow_pip_box(image, die, [d for d in labelled.dice if d is not die], size)
        if box and die.face != "1":
            sizes.append(max(box[2] - box[0], box[3] - box[1]))
        grown[i] = box or typical_die_box(die, size)
    return replace(labelled, dice=tuple(replace(d, box=grown[i]) for i, d in enumerate(labelled.dice)))


#: Corrections to the published labels of ../shared/data/real, each checked by eye on its photo
#: (``pi-table eval --fixed-labels``; the file says how they were found).
LABEL_FIXES = Path(__file__).with_name("label_fixes.json")


@dataclass(frozen=True)
class LabelFix:
    """One correction to a published label (:data:`LABEL_FIXES`).

    In data folder ``folder`` ("nellbyler-d6-tray", as :func:`folder_label` names it), photo
    ``image`` ("IMG_1.jpg"): the die on label line ``line`` (1-based) whose published text is
    ``was`` gets ``face`` ("3"; None keeps it) and ``box`` (x0, y0, x1, y1, pixels, the whole die;
    None keeps it); with ``line`` None, a die the labels leave out is added (``face`` and ``box``
    both given). ``why``: what the photo shows.
    """

    folder: str
    image: str
    line: int | None
    was: str | None
    face: str | None
    box: tuple[float, float, float, float] | None
    why: str


def load_label_fixes(path: Path = LABEL_FIXES) -> list[LabelFix]:
    """The label fixes in ``path`` (JSON ``{"fixes": [...]}``, see :class:`LabelFix`).

    Raises:
        FileNotFoundError: no such file. ValueError: a malformed entry (naming the file and its index).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no label fixes file {path}")
    fixes = []
    for i, e in enumerate(json.loads(path.read_text()).get("fixes", [])):
        try:
            line = None if e.get("line") is None else int(e["line"])
            box = None if e.get("box") is None else tuple(float(v) for v in e["box"])
            fix = LabelFix(str(e["folder"]), str(e["image"]), line, e.get("was"),
                           None if e.get("face") is None else str(e["face"]), box, str(e.get("why", "")))
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"malformed label fix {i} in {path}: {e!r}") from None
        if (box is not None and (len(box) != 4 or box[2] <= box[0] or box[3] <= box[1])) \
                or (line is None and (box is None or fix.face is None)) \
                or (line is not None and (line < 1 or fix.was is None or (box is None and fix.face is None))):
            raise ValueError(f"malformed label fix {i} in {path}: {e!r}")
        fixes.append(fix)
    return fixes


def with_label_fixes(labelled: LabelledImage, fixes: list[LabelFix]) -> tuple[LabelledImage, int]:
    """``labelled`` with the ``fixes`` for its photo applied (after :func:`with_die_boxes`: a
    fix's box is the whole die's), and how many applied.

    Raises:
        ValueError: a fix names a label line that does not hold its ``was`` text (the labels
            changed since the fix was checked), naming the file and line.
    """
    from dataclasses import replace

    mine = [f for f in fixes if f.folder == labelled.folder and f.image == labelled.path.name]
    if not mine:
        return labelled, 0
    label_path = label_file(labelled.path)
    lines = label_path.read_text().splitlines() if label_path.is_file() else []
    die_of_line = {}  # 1-based line -> index in labelled.dice (load_yolo skips blank lines)
    for n, line in enumerate(lines, 1):
        if line.split():
            die_of_line[n] = len(die_of_line)
    dice = list(labelled.dice)
    for f in mine:
        if f.line is None:
            dice.append(LabelledDie(dice[0].kind if dice else "d6", f.face, f.box))
            continue
        if f.line not in die_of_line or lines[f.line - 1].split() != f.was.split():
            raise ValueError(f"label fix for {label_path} line {f.line}: expected {f.was!r}, "
                             f"found {lines[f.line - 1] if f.line <= len(lines) else 'no such line'!r}")
        i = die_of_line[f.line]
        dice[i] = replace(dice[i], face=f.face or dice[i].face, box=f.box or dice[i].box)
    return replace(labelled, dice=tuple(dice)), len(mine)


def is_calib_render(name: str) -> bool:
    """True for the one render in 20 (by md5 of its file ``name``) that training keeps out of
    every rendered folder it reads: the temperatures and thresholds are fitted on these."""
    return int(hashlib.md5(name.encode()).hexdigest(), 16) % 20 == 0


def is_rendered(image: "LabelledImage") -> bool:
    """True when ``image`` lies in a rendered folder (one with a ``classes.txt``)."""
    return (image.path.parent.parent / "classes.txt").is_file()
