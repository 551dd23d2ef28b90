"""Recognition speed: ``pi-table bench``.

Reads 640x640 tray frames holding 1, 5 and 20 dice, single-threaded and with all cores,
model loading excluded, and reports the median and 90th-percentile ms per frame and frames
per second. Frames are made of real dice cut from the demo photos shipped in the package
(:func:`tray_frame`), so the detector and classifier see real dice, not noise.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import numpy as np


def tray_frame(dice: int, seed: int = 0) -> np.ndarray:
    """A 640x640x3 uint8 BGR tray frame holding ``dice`` real d6 (up to 25).

    The dice are cut, by their labelled boxes, from the demo photos shipped in the package
    (``pi_table/demo``, real nellbyler-d6-tray photos with ``labels/``) and pasted without
    overlap onto an empty tray made by blurring one of them.
    """
    import cv2

    from pi_table.capture.sources import DEMO_DIR

    rng = np.random.default_rng(seed)
    patches = []
    photos = sorted(DEMO_DIR.glob("*.jpg"))
    for photo in photos:
        image = cv2.imread(str(photo))
        h, w = image.shape[:2]
        for line in (DEMO_DIR / "labels" / (photo.stem + ".txt")).read_text().splitlines():
            _, cx, cy, bw, bh = (float(v) for v in line.split())
            x0, y0 = int((cx - bw / 2) * w) - 2, int((cy - bh / 2) * h) - 2
            x1, y1 = int((cx + bw / 2) * w) + 2, int((cy + bh / 2) * h) + 2
            patches.append(image[max(0, y0) : y1, max(0, x0) : x1])
    frame = cv2.GaussianBlur(cv2.resize(cv2.imread(str(photos[0])), (640, 640)), (0, 0), 40)
    cells = [(x, y) for y in range(10, 570, 112) for x in range(10, 570, 112)]
    for k, i in enumerate(rng.permutation(len(cells))[:dice]):
        x, y = cells[i]
        patch = patches[k % len(patches)]
        x += int(rng.integers(0, 100 - patch.shape[1] // 2))
        y += int(rng.integers(0, 100 - patch.shape[0] // 2))
        frame[y : y + patch.shape[0], x : x + patch.shape[1]] = patch
    return frame


def bench(reader_factory, dice_counts=(1, 5, 20), repeats: int = 30, thread_options=(1, 0)) -> list[dict]:
    """Time ``reader.read`` per frame.

    Args:
        reader_factory: ``threads -> DiceReader`` (0 = all cores).
        repeats: timed reads per case, after 3 warm-up reads.

    Returns:
        One dict per (threads, dice): threads, dice, found (dice the reader reported), unsure
        (of those, below the threshold: each read again when ``reader.json`` has a second
        look), all_unsure, median_ms, p90_ms, fps. With a second look, one more row per
        thread count times the largest frame with every die unsure (the threshold set above
        1), its worst case.
    """
    rows = []
    for threads in thread_options:
        reader = reader_factory(threads)
        cases = [(n, False) for n in dice_counts]
        if getattr(reader, "second_look", 1) > 1:
            cases.append((max(dice_counts), True))
        for n, all_unsure in cases:
            frame = tray_frame(n)
            threshold = reader.threshold
            if all_unsure:
                reader.threshold = 1.01  # the worst case: every die is unsure and looked at again
            for _ in range(3):
                reading = reader.read(frame)
            times = []
            for _ in range(repeats):
                t = time.perf_counter()
                reading = reader.read(frame)
                times.append((time.perf_counter() - t) * 1000)
            reader.threshold = threshold
            times.sort()
            med = statistics.median(times)
            rows.append({"threads": threads or os.cpu_count(), "dice": n, "found": len(reading.dice),
                         "unsure": sum(d.status == "unreadable" for d in reading.dice), "all_unsure": all_unsure,
                         "median_ms": round(med, 2), "p90_ms": round(times[int(0.9 * (len(times) - 1))], 2),
                         "fps": round(1000 / med, 1)})
    return rows


def format_rows(rows: list[dict]) -> str:
    """The bench table as text."""
    out = [f"{'threads':>7} {'dice':>5} {'found':>5} {'unsure':>6} {'median ms':>10} {'p90 ms':>8} {'fps':>7}"]
    out += [f"{r['threads']:>7} {r['dice']:>5} {r['found']:>5} {('all' if r.get('all_unsure') else r.get('unsure', 0)):>6} "
            f"{r['median_ms']:>10.2f} {r['p90_ms']:>8.2f} {r['fps']:>7.1f}" for r in rows]
    out.append("unsure: dice below the threshold, each read again (second look); 'all': the worst case, every die")
    return "\n".join(out)
