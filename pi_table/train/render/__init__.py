"""Synthetic labelled dice images (d6, d8, d10, d10-tens) from a small numpy ray caster.

Everything runs on a CPU with numpy, OpenCV and Pillow only. See docs/renders.md.

``CLASSES`` is the class list of the YOLO labels written by ``python3 -m pi_table.train.render``.
"""

from __future__ import annotations

import hashlib

#: Die kinds the generator can render.
RENDER_KINDS: tuple[str, ...] = ("d6", "d8", "d10", "d10-tens")

#: YOLO class names, ``KIND:FACE``; a label's CLASS is an index into this list (34 classes).
CLASSES = (
    [f"d6:{f}" for f in "123456"]
    + [f"d8:{f}" for f in "12345678"]
    + [f"d10:{f}" for f in "0123456789"]
    + [f"d10-tens:{f}" for f in ("00", "10", "20", "30", "40", "50", "60", "70", "80", "90")]
)

CLASS_INDEX: dict[str, int] = {name: i for i, name in enumerate(CLASSES)}


def class_id(kind: str, face: str) -> int:
    """Index into CLASSES of ``kind:face`` (KeyError for a face the kind does not print)."""
    return CLASS_INDEX[f"{kind}:{face}"]


def md5_int(text: str) -> int:
    """md5 of ``text`` as an integer: a fixed, machine-independent order and split key."""
    return int(hashlib.md5(text.encode()).hexdigest(), 16)


def held_out(name: str) -> bool:
    """True for the one name in five (by md5) held out for the ``valid`` split of renders:
    surfaces, palettes and real background photos are split this way."""
    return md5_int(name) % 5 == 0


def of_split(items, name_of, split: str) -> tuple:
    """``items`` of ``split``: those :func:`held_out` by ``name_of(item)`` for ``valid``, the rest for ``train``."""
    return tuple(item for item in items if held_out(name_of(item)) == (split == "valid"))


__all__ = ["CLASSES", "CLASS_INDEX", "RENDER_KINDS", "class_id", "held_out", "md5_int", "of_split"]
