"""Typed values that leave the vision stage: one read die, one read image.

Conventions follow ../shared/INTERFACES.md (`read --json`) and RULES.md
("Dice faces as read by the camera").
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Die kinds the kit knows, in the order of INTERFACES.md.
KINDS: tuple[str, ...] = ("d4", "d6", "d8", "d10", "d10-tens", "d12", "d20")

#: Reader statuses. A die that is not ``ok`` is still reported, never guessed.
STATUSES: tuple[str, ...] = ("ok", "cocked", "unreadable")


def class_key(label: str) -> tuple[int, bool, int]:
    """Sort key of a class name ``KIND:FACE`` (or a shape class ``KIND:*``): by kind in
    :data:`KINDS` order, faces by number, a kind's shape class after its faces."""
    kind, _, face = label.partition(":")
    return (KINDS.index(kind), face == "*", int(face) if face.isdigit() else 0)


def face_value(kind: str, face: str) -> int:
    """Integer value of a printed face by the kit's default convention.

    d10 "0" -> 10, d10-tens "00" -> 0, "70" -> 70, and a d10-tens "100" -> 0 (seed 001
    "Percentile Dice": ignore the hundreds unit; RULES.md ``contingency-skill``); every other
    face is its number.

    Raises:
        ValueError: unknown kind, or a face that is not printed on that kind of die.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown die kind {kind!r} (expected one of {', '.join(KINDS)})")
    try:
        number = int(face)
    except (TypeError, ValueError):
        raise ValueError(f"face {face!r} is not a number") from None
    if kind == "d10-tens":
        if number % 10 or not 0 <= number <= 100:
            raise ValueError(f"face {face!r} is not on a d10-tens (00..90, or 100 counted 0)")
        return number % 100
    sides = int(kind[1:])
    if kind == "d10":
        if number == 0:
            return 10
        if 1 <= number <= 10:
            return number
        raise ValueError(f"face {face!r} is not on a d10 (0..9 or 1..10)")
    if not 1 <= number <= sides:
        raise ValueError(f"face {face!r} is not on a {kind} (1..{sides})")
    return number


def parse_face(kind: str, face: str) -> tuple[str, int]:
    """A face typed by hand (the GM page's correction), written as the reader writes faces.

    Outer spaces and leading zeros are dropped ("06" -> "6"); a d10-tens face is written with
    two digits ("0" -> "00", RULES.md "Dice faces as read by the camera": printed 00..90).

    Returns:
        ``(face, value)``: the face as printed, and its value by :func:`face_value`.

    Raises:
        ValueError: ``face`` is not plain ASCII digits (a sign, ``_``, other scripts' digits,
            which ``int`` would take) or not on that kind of die; the message names it.
    """
    text = face.strip() if isinstance(face, str) else face
    if not isinstance(text, str) or not text.isascii() or not text.isdigit():
        raise ValueError(f"face {face!r} is not a number (digits 0-9)")
    value = face_value(kind, text)
    number = int(text)
    return (f"{number:02d}" if kind == "d10-tens" else str(number)), value


@dataclass(frozen=True)
class Die:
    """One die found in an image.

    Attributes:
        kind: one of :data:`KINDS`.
        face: the printed face as read ("4", "0", "70"); "" when unreadable.
        value: integer value by :func:`face_value`; 0 when unreadable.
        box: (x0, y0, x1, y1) in pixels of the input image, x right, y down.
        confidence: 0..1, calibrated probability that ``face`` is right.
        status: one of :data:`STATUSES`.
        face_confidence: 0..1, the probability that ``face`` is right given that the box holds
            a die (``confidence`` is this times the chance that it is a die at all); None when
            not known (a die read back from JSON). Not in the JSON; used to choose thresholds.
    """

    kind: str
    face: str
    value: int
    box: tuple[float, float, float, float]
    confidence: float
    status: str = "ok"
    face_confidence: float | None = field(default=None, compare=False)

    def to_json(self) -> dict:
        """The ``dice`` entry of INTERFACES.md ``read --json``."""
        return {
            "kind": self.kind,
            "face": self.face,
            "value": self.value,
            "box": [round(float(v), 1) for v in self.box],
            "confidence": round(float(self.confidence), 4),
            "status": self.status,
        }

    @classmethod
    def from_json(cls, data: dict) -> "Die":
        """Inverse of :meth:`to_json`. Raises KeyError/ValueError on a malformed entry."""
        return cls(
            kind=str(data["kind"]),
            face=str(data["face"]),
            value=int(data["value"]),
            box=tuple(float(v) for v in data["box"]),  # type: ignore[arg-type]
            confidence=float(data["confidence"]),
            status=str(data.get("status", "ok")),
        )


@dataclass(frozen=True)
class Reading:
    """Everything read from one image.

    Attributes:
        image: the image's name or path, as given.
        width, height: image size in pixels.
        ms: milliseconds spent reading it (model loading excluded).
        dice: the dice found, in reading order (top to bottom, left to right).
    """

    image: str
    width: int
    height: int
    ms: float
    dice: tuple[Die, ...] = field(default_factory=tuple)

    def to_json(self) -> dict:
        """One line of INTERFACES.md ``read --json``."""
        return {
            "image": self.image,
            "width": self.width,
            "height": self.height,
            "ms": round(self.ms, 2),
            "dice": [d.to_json() for d in self.dice],
        }
