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

import re
from dataclasses import dataclass
from pathlib import Path

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp")


@dataclass(frozen=True)
class LabelledDie:
    """One labelled die: ``kind`` ("d6"), ``face`` ("4"), ``box`` (x0, y0, x1, y1) in pixels."""

    kind: str
    face: str
    box: tuple[float, float, float, float]


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
    import cv2

    image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise ValueError(f"not an image: {path}")
    return image.shape[1], image.shape[0]


def load_yolo(root: Path, folder_name: str | None = None) -> list[LabelledImage]:
    """All labelled images at or under ``root``, sorted by path.

    ``folder`` of each image is the data folder's name relative to ``root``'s parent
    (e.g. ``matteop65-d6-desk/Valid``), or ``folder_name`` when given.

    Raises:
        FileNotFoundError / ValueError: see :func:`yolo_folders`; ValueError for a malformed
        label line (naming the file and line).
    """
    root = Path(root)
    out: list[LabelledImage] = []
    for folder in yolo_folders(root):
        classes = read_classes(folder)
        name = folder_name or folder_label(folder)
        for image_path in sorted((folder / "images").iterdir()):
            if image_path.suffix.lower() not in IMAGE_SUFFIXES:
                continue
            label_path = folder / "labels" / (image_path.stem + ".txt")
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
                except (ValueError, IndexError):
                    raise ValueError(f"malformed label line {n} in {label_path}: {line!r}") from None
                if classes is not None:
                    kind, face = classes[cls].split(":")
                else:
                    kind, face = "d6", str(cls + 1)
                box = ((cx - w / 2) * width, (cy - h / 2) * height, (cx + w / 2) * width, (cy + h / 2) * height)
                dice.append(LabelledDie(kind, face, box))
            out.append(LabelledImage(image_path, width, height, tuple(dice), name))
    return out


_CROP_NAME = re.compile(r"^(?:(d\d+(?:-tens)?)[_:])?(\d+)(?:[_\-. ].*)?$")


def parse_crop_label(name: str, default_kind: str = "d6") -> tuple[str, str] | None:
    """``(kind, face)`` from a crop's folder or file-name token ("4", "d8_7", "d10-tens_70"); None if none."""
    match = _CROP_NAME.match(name)
    if not match:
        return None
    return (match.group(1) or default_kind), match.group(2)


def load_crops(root: Path, default_kind: str = "d6") -> list[tuple[Path, str, str]]:
    """``(path, kind, face)`` for every crop image under ``root`` (sorted).

    Raises:
        FileNotFoundError: ``root`` does not exist.
        ValueError: no crop whose face can be told from its folder or file name.
    """
    root = Path(root)
    if not root.exists():
        raise FileNotFoundError(f"no such folder: {root}")
    out = []
    for path in sorted(root.rglob("*")):
        if path.suffix.lower() not in IMAGE_SUFFIXES or not path.is_file():
            continue
        label = parse_crop_label(path.parent.name, default_kind) if path.parent != root else None
        label = label or parse_crop_label(path.stem, default_kind)
        if label:
            out.append((path, *label))
    if not out:
        raise ValueError(f"no crops named by face value under {root}")
    return out
