"""Roll settling on a video made from real tray photos: dice move, then lie still.

Each roll in the video: the previous photo still, then the next photo's dice tumbling in
(pasted at moving positions over the tray), then the next photo still. ``pi-table serve``'s
capture loop must give exactly one roll event per roll and none while dice move.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from pi_table.capture.sources import DEMO_DIR
from pi_table.service import Service, Settings
from tests.conftest import REPO, FakeReader, d6_reading

LABELS = REPO / "tests" / "fixtures" / "demo_labels"
FPS = 10.0


def boxes(photo: Path, shape) -> list[tuple[int, int, int, int]]:
    h, w = shape[:2]
    out = []
    for line in (LABELS / (photo.stem + ".txt")).read_text().splitlines():
        _, cx, cy, bw, bh = map(float, line.split())
        out.append((int((cx - bw / 2) * w) - 3, int((cy - bh / 2) * h) - 3, int((cx + bw / 2) * w) + 3, int((cy + bh / 2) * h) + 3))
    return out


def tumbling(photo: Path, steps: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Frames of the photo's dice moving into place over an empty tray, with motion blur."""
    still = cv2.imread(str(photo))
    empty = still.copy()
    patches = []
    for x0, y0, x1, y1 in boxes(photo, still.shape):
        patches.append((still[y0:y1, x0:x1].copy(), x0, y0))
        empty[y0:y1, x0:x1] = np.median(still[y1:y1 + 10, x0:x1].reshape(-1, 3), axis=0)
    starts = [(rng.uniform(-120, 120), rng.uniform(-120, 120)) for _ in patches]
    frames = []
    for k in range(steps):
        frame = empty.copy()
        left = 1 - (k + 1) / (steps + 1)
        for (patch, x0, y0), (dx, dy) in zip(patches, starts):
            x = int(np.clip(x0 + dx * left, 0, frame.shape[1] - patch.shape[1]))
            y = int(np.clip(y0 + dy * left, 0, frame.shape[0] - patch.shape[0]))
            frame[y:y + patch.shape[0], x:x + patch.shape[1]] = np.rot90(patch, k % 4) if patch.shape[0] == patch.shape[1] else patch
        frames.append(cv2.blur(frame, (7, 7)))
    return frames


def make_video(path: Path, photos: list[Path]) -> int:
    """Write the video; returns the number of rolls in it."""
    rng = np.random.default_rng(0)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), FPS, (640, 640))
    first = cv2.imread(str(photos[0]))
    for _ in range(int(1.5 * FPS)):
        writer.write(first)
    for photo in photos[1:]:
        for frame in tumbling(photo, 12, rng):
            writer.write(frame)
        still = cv2.imread(str(photo))
        for _ in range(int(2.0 * FPS)):
            writer.write(still)
    # a hand reaches into the tray, rests there for 1.5 s, and leaves: no roll
    last = cv2.imread(str(photos[-1]))
    for k in list(range(1, 9)) + [8] * int(1.5 * FPS) + list(range(8, 0, -1)):
        frame = last.copy()
        cv2.ellipse(frame, (640 - 40 * k, 330), (60 * k, 130), 0, 0, 360, (120, 150, 215), -1)
        writer.write(frame)
    for _ in range(int(2.0 * FPS)):
        writer.write(last)
    writer.release()
    return len(photos) - 1


def test_one_roll_event_per_roll_in_a_video_of_real_photos(tmp_path, mock_pins):
    photos = sorted(DEMO_DIR.glob("*.jpg"))[:4]
    video = tmp_path / "rolls.avi"
    rolls_in_video = make_video(video, photos)
    reader = FakeReader(d6_reading(4), d6_reading(2, 5), d6_reading(6, 1, 3))  # each throw's own dice
    service = Service(Settings(state_dir=tmp_path / "state", pin="1234"), reader=reader)
    q = service.hub.subscribe()
    service.run(f"video:{video}")
    names = []
    while not q.empty():
        event = q.get_nowait()
        if event.name == "roll":
            names.append(event.data["source"])
    assert len(names) == rolls_in_video
    # every read happened on a still frame: at least 0.8 s (8 frames) after the dice stopped
    first_still = int(1.5 * FPS) + 12
    for i, name in enumerate(names):
        frame_index = int(name.rsplit("#", 1)[1])
        roll_start = first_still + i * (12 + int(2.0 * FPS))
        assert roll_start + 8 <= frame_index < roll_start + int(2.0 * FPS), name
    service.close()
