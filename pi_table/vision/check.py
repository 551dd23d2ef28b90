"""Camera set-up check: ``pi-table check``.

Reads one frame (a photo, or the first frame of a source such as the Pi camera) as the table
would, and says for each die how many pixels across it shows and whether that is enough for
its kind, then what to change: the camera's height, the light, or nothing. A GM runs it while
mounting the camera (hardware.md, "Camera mount and lens").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pi_table.vision.dice import Die

#: The smallest die, in pixels across (the long side of its box in the frame the kit reads),
#: that each kind reads well at (hardware.md, "Camera mount and lens"): d6 pips down to 30 px
#: (smaller ones are found by the detector's enlarged look, and not below that); numerals need
#: 55 px (``pi-table eval renders/valid``'s table "read right by die size", 2026-12-01: d10 72% right
#: at 30-40 px, 89% at 55-70 px, 93% at 70-100 px; tens 44%, 72% and 84%). From 70 px the numeral
#: model sees a die whole and the reader takes it from a lower threshold (reader.py
#: ``BIG_NUMBERED_THRESHOLD``): more pixels still help, 55 is the least.
MIN_DIE_PX: dict[str, int] = {"d6": 30, "d8": 55, "d10": 55, "d10-tens": 55}


def die_px(box) -> float:
    """A die's size in pixels: the long side of its ``box`` (x0, y0, x1, y1 pixels)."""
    return float(max(box[2] - box[0], box[3] - box[1]))


def needed_px(kind: str, kinds=None) -> int:
    """Pixels across a die of ``kind`` needs (:data:`MIN_DIE_PX`). With ``kinds`` (the kinds in
    play, e.g. ``("d6", "d10")``), the most any of them needs: the dice of a tray lie at one
    distance from the camera and are about one size, so a d6 that shows 40 px says a d10 rolled
    beside it would too (kinds the kit does not read, d4 or d20, count for nothing). Raises KeyError
    for a ``kind`` the kit does not read."""
    in_play = [MIN_DIE_PX[k] for k in kinds or () if k in MIN_DIE_PX]
    return max(in_play) if in_play else MIN_DIE_PX[kind]


@dataclass(frozen=True)
class DieCheck:
    """One die of a checked frame.

    Attributes:
        die: the die as the reader reports it.
        px: its size, pixels across (:func:`die_px`).
        needed_px: pixels across it needs (:func:`needed_px`).
    """

    die: Die
    px: float
    needed_px: int

    @property
    def big_enough(self) -> bool:
        """True when the die shows at least :attr:`needed_px` pixels across."""
        return self.px >= self.needed_px

    def to_json(self) -> dict:
        """The die's ``read --json`` entry with ``px``, ``needed_px`` and ``big_enough``."""
        return {**self.die.to_json(), "px": round(self.px, 1), "needed_px": self.needed_px, "big_enough": self.big_enough}


@dataclass(frozen=True)
class FrameCheck:
    """A checked frame: its dice and what to change.

    Attributes:
        name: where the frame came from (file name, ``picamera#0``).
        width, height: the frame's size in pixels.
        dice: one :class:`DieCheck` per die the reader reports, in reading order.
        advice: one line per thing to change, or one saying the set-up is good.
    """

    name: str
    width: int
    height: int
    dice: tuple[DieCheck, ...]
    advice: tuple[str, ...]

    def to_json(self) -> dict:
        """``{"image", "width", "height", "dice": [...], "advice": [...]}``."""
        return {"image": self.name, "width": self.width, "height": self.height,
                "dice": [d.to_json() for d in self.dice], "advice": list(self.advice)}


def advise(dice: tuple[DieCheck, ...]) -> tuple[str, ...]:
    """What to change, from the checked dice: the camera's height when dice are too small for
    their kind, the light when dice are found but not read; else that the set-up reads well."""
    if not dice:
        return ("no dice found: roll a few dice into the tray, check that the tray floor fills the frame and is lit, "
                "and run the check again",)
    out = []
    small = [d for d in dice if not d.big_enough]
    if small:
        worst = min(small, key=lambda d: d.px / d.needed_px)
        out.append(f"{len(small)} of {len(dice)} dice show fewer pixels than they read well at (smallest: a "
                   f"{worst.die.kind} {worst.px:.0f} px across, needs {worst.needed_px}): lower the camera or zoom in "
                   f"until dice show about {worst.needed_px / max(worst.px, 1.0):.1f} times as many pixels across, the "
                   "tray still in the frame")
    unsure = [d for d in dice if d.die.status != "ok"]
    if unsure:
        cocked = sum(d.die.status == "cocked" for d in unsure)
        out.append(f"{len(unsure)} of {len(dice)} dice not read ({cocked} cocked): if this repeats with dice lying "
                   "flat, light the tray evenly and focus on its floor (hardware.md, 'Lighting and tray')")
    if not out:
        out.append(f"all {len(dice)} dice read and big enough ({min(d.px for d in dice):.0f}-"
                   f"{max(d.px for d in dice):.0f} px across): the camera is set up well")
    return tuple(out)


def check_frame(reader, image: np.ndarray, name: str = "", kinds=None) -> FrameCheck:
    """Read ``image`` (``HxWx3 uint8 BGR``, the frame the kit reads) with ``reader`` (a
    :class:`~pi_table.vision.reader.DiceReader`) and check each die's size against
    :func:`needed_px` for ``kinds`` (the kinds in play; None: each die's own kind).

    Raises:
        ValueError: ``image`` is not an HxWx3 uint8 array, or ``kinds`` names a kind the reader
            does not read (as :meth:`DiceReader.read`).
    """
    reading = reader.read(image, name=name, kinds=kinds)
    dice = tuple(DieCheck(d, die_px(d.box), needed_px(d.kind, kinds)) for d in reading.dice)
    return FrameCheck(name, reading.width, reading.height, dice, advise(dice))


def format_check(check: FrameCheck) -> str:
    """The check as text: a line for the frame, one per die, then the advice."""
    lines = [f"{check.name}: {check.width}x{check.height}, {len(check.dice)} dice"]
    for d in check.dice:
        mark = "" if d.big_enough else f"  < {d.needed_px} px"
        lines.append(f"  {d.die.kind:8} {d.die.face or '?':>3}  {d.die.status:10} {d.px:5.0f} px{mark}")
    lines += [f"- {line}" for line in check.advice]
    return "\n".join(lines)
