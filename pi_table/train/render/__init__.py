"""Synthetic labelled dice images (d6, d8, d10, d10-tens) from a small numpy ray caster.

Everything runs on a CPU with numpy, OpenCV and Pillow only. See docs/renders.md.

``CLASSES`` is the class list of the YOLO labels written by ``python3 -m pi_table.train.render``.
"""

from __future__ import annotations

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


__all__ = ["CLASSES", "CLASS_INDEX", "RENDER_KINDS", "class_id"]
