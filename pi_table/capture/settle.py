"""Roll settling: motion in the tray starts a roll; a read happens once the tray is still.

The settler compares small, blurred colour versions of consecutive frames. A roll is
*armed* by motion; once the frame has been still for ``settle_s`` seconds it is compared
with the last settled frame (the *baseline*): if the tray changed, that frame is emitted
as one :class:`SettledRoll`; if it did not (a hand passed over), nothing is emitted. A
change that covers more than ``max_change`` of the tray is taken to be a hand or arm still
in view and is never read. One physical roll therefore gives exactly one settled roll.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from pi_table.capture.sources import Frame


@dataclass(frozen=True)
class SettledRoll:
    """A frame to read: the tray has been still for ``still_s`` seconds after motion.

    Attributes:
        frame: the still frame (its image is HxWx3 uint8 BGR).
        still_s: seconds of stillness before it (0 for pre-settled photo sources).
        change: fraction 0..1 of the tray that differs from the previous settled frame.
    """

    frame: Frame
    still_s: float
    change: float


class RollSettler:
    """Turn a stream of frames into settled rolls.

    Args:
        settle_s: seconds the tray must be still before a read.
        motion_threshold: fraction of pixels that must change between consecutive
            frames to count as motion.
        change_threshold: fraction of pixels that must differ from the last settled
            frame for a still tray to be a new roll.
        max_change: a still frame that differs from the baseline on more than this
            fraction of pixels (a hand resting in the tray) is not read, until it has been
            still for ``give_up_s`` (then the scene itself has changed: the tray moved).
        width: frames are downscaled to this width (pixels) before comparison.
        pixel_delta: grey levels (0..255) a pixel must move to count as changed.
        give_up_s: seconds a still frame that differs from the baseline on more than
            ``max_change`` waits before it is taken as the new scene anyway.

    A still frame is compared with the baseline after the baseline is scaled to the frame's
    overall brightness (median grey level), so a lamp switched on or the camera's exposure
    drifting is not a roll, and does not leave the tray "changed" for good.

    Raises:
        ValueError: a threshold outside 0..1 or a non-positive time or width.
    """

    def __init__(
        self,
        settle_s: float = 0.8,
        motion_threshold: float = 0.0003,
        change_threshold: float = 0.0003,
        max_change: float = 0.35,
        width: int = 240,
        pixel_delta: int = 14,
        give_up_s: float = 5.0,
    ):
        for name, value in (("motion_threshold", motion_threshold), ("change_threshold", change_threshold), ("max_change", max_change)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in 0..1, got {value!r}")
        for name, value in (("settle_s", settle_s), ("give_up_s", give_up_s)):
            if value < 0:
                raise ValueError(f"{name} must be >= 0, got {value!r}")
        if width < 8:
            raise ValueError(f"width must be >= 8 pixels, got {width!r}")
        self.settle_s = settle_s
        self.motion_threshold = motion_threshold
        self.change_threshold = change_threshold
        self.max_change = max_change
        self.width = width
        self.pixel_delta = pixel_delta
        self.give_up_s = give_up_s
        self.reset()

    def reset(self) -> None:
        """Forget the baseline (after the camera was lost, say)."""
        self._previous: np.ndarray | None = None
        self._baseline: np.ndarray | None = None
        self._still_since: float | None = None
        self._armed = False

    @property
    def moving(self) -> bool:
        """True while the tray is in motion or not yet still for ``settle_s``."""
        return self._armed

    def _small(self, image: np.ndarray) -> np.ndarray:
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
            raise ValueError(f"frame must be HxWx3 uint8 BGR, got shape {image.shape} dtype {image.dtype}")
        h, w = image.shape[:2]
        height = max(8, round(h * self.width / w))
        small = cv2.resize(image, (self.width, height), interpolation=cv2.INTER_AREA)
        return cv2.GaussianBlur(small, (5, 5), 0)

    def _changed(self, a: np.ndarray, b: np.ndarray) -> float:
        # colour difference (the largest over B, G, R): a hand can be as bright as the tray; taken
        # with OpenCV, which is ~30x faster than numpy's max over the last axis (done for every frame)
        blue, green, red = cv2.split(cv2.absdiff(a, b))
        diff = cv2.max(cv2.max(blue, green), red)
        return float(np.count_nonzero(diff > self.pixel_delta)) / diff.size

    def _changed_from_baseline(self, small: np.ndarray) -> float:
        """:meth:`_changed` against the baseline scaled to ``small``'s overall brightness (a lamp,
        the camera's exposure): the ratio of the two frames' median grey levels."""
        base = self._baseline
        now_level = float(np.median(small)) + 1.0
        base_level = float(np.median(base)) + 1.0
        gain = now_level / base_level
        if abs(gain - 1.0) > 0.01:
            base = cv2.convertScaleAbs(base, alpha=gain)
        return self._changed(base, small)

    def push(self, frame: Frame) -> SettledRoll | None:
        """Feed one frame; returns a :class:`SettledRoll` when a roll has just settled."""
        if frame.settled:
            self.reset()
            return SettledRoll(frame=frame, still_s=0.0, change=1.0)
        small = self._small(frame.image)
        previous, self._previous = self._previous, small
        if previous is None or previous.shape != small.shape:
            self._baseline = small
            self._still_since = frame.t
            return None
        if self._changed(previous, small) > self.motion_threshold:
            self._armed = True
            self._still_since = None
            return None
        if self._still_since is None:
            self._still_since = frame.t
        still_s = frame.t - self._still_since
        if not self._armed or still_s < self.settle_s:
            return None
        change = self._changed_from_baseline(small) if self._baseline is not None else 1.0
        if change > self.max_change and still_s < self.settle_s + self.give_up_s:
            return None  # something big (a hand) rests in the tray: wait for it to leave
        self._armed = False
        self._baseline = small
        if change < self.change_threshold:
            return None  # motion came and went but the tray is as before
        return SettledRoll(frame=frame, still_s=still_s, change=change)
