"""Frame sources (../shared/INTERFACES.md, "Source specs").

Specs: ``picamera``, ``webcam:N``, ``video:PATH``, ``folder:DIR``, ``demo``.
``folder:`` and ``demo`` replay still photos, each photo one roll, so their frames are
already settled; camera and video sources stream frames that go through roll settling.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

log = logging.getLogger(__name__)

#: The file name endings ``folder:`` replays (compared in lower case): what OpenCV decodes.
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"}
DEMO_DIR = Path(__file__).resolve().parent.parent / "demo"


@dataclass(frozen=True)
class Frame:
    """One frame from a source.

    Attributes:
        image: HxWx3 uint8 BGR.
        t: seconds on the source's clock (monotonic for live sources, video time for files).
        index: frame number from the source's start, 0-based.
        name: where it came from (file name, ``video.mp4#123``, ``picamera#5``).
        settled: True when the source guarantees the frame is a still, finished roll
            (``folder:`` and ``demo``); such frames skip roll settling.
        full: for cameras with two streams (the Pi camera), a call that captures the
            full-resolution HxWx3 uint8 BGR image to read; ``image`` is then the small
            stream used only to watch for motion. None: read ``image`` itself.
    """

    image: np.ndarray
    t: float
    index: int
    name: str
    settled: bool = False
    full: Callable[[], np.ndarray] | None = None

    def image_to_read(self) -> np.ndarray:
        """The image the dice are read from: full resolution where the source has it."""
        return self.full() if self.full is not None else self.image


class Source:
    """Base class: an iterable of :class:`Frame`; ``close()`` releases the device.

    ``settled`` is True for sources whose every frame is one finished roll.
    """

    spec: str = ""
    settled: bool = False
    live: bool = False  # a camera: reopened when it fails, rather than ended

    def frames(self) -> Iterator[Frame]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Frame]:
        return self.frames()

    def close(self) -> None:
        """Release the camera or file. Safe to call twice."""


class FolderSource(Source):
    """Replay the images of a folder as rolls, one image per roll, in name order.

    Each file is decoded as ``pi-table read`` decodes it (:func:`pi_table.vision.load_image`:
    turned upright by its EXIF orientation, a 16-bit image scaled by its brightest value, a
    JPEG cut off before its end marker read as far as it goes). A file that turns out not to be
    an image (or cannot be read) is skipped with one warning naming it, and the replay goes on.
    Only the folder's own files are replayed, not its subfolders'.

    Args:
        folder: directory with images (:data:`IMAGE_SUFFIXES`, any case: ``.JPG`` too).
        interval_s: seconds between rolls (0 = as fast as the reader goes).
        loop: start again after the last image (a pass in which no file decodes ends it).

    Raises:
        FileNotFoundError: the folder does not exist.
        ValueError: it is not a folder, or holds no image files.
    """

    settled = True

    def __init__(self, folder: str | Path, interval_s: float = 0.0, loop: bool = False, spec: str = ""):
        self.folder = Path(folder)
        if not self.folder.exists():
            raise FileNotFoundError(f"no such folder: {self.folder}")
        if not self.folder.is_dir():
            raise ValueError(f"not a folder: {self.folder}")
        self.paths = sorted(p for p in self.folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
        if not self.paths:
            subfolders = any(p.is_dir() for p in self.folder.iterdir())
            raise ValueError(f"no images in folder: {self.folder}"
                             + (" (its subfolders are not searched: name one)" if subfolders else ""))
        self.interval_s = float(interval_s)
        self.loop = loop
        self.spec = spec or f"folder:{self.folder}"
        self._closed = False

    def frames(self) -> Iterator[Frame]:
        from pi_table.vision.reader import load_image

        index = 0
        while not self._closed:
            shown = index
            for path in self.paths:
                if self._closed:
                    return
                try:
                    image = load_image(path)
                except (ValueError, OSError) as exc:  # not an image after all, or gone, or unreadable
                    log.warning("%s: skipped: %s", self.spec, exc)
                    continue
                yield Frame(image=image, t=time.monotonic(), index=index, name=str(path), settled=True)
                index += 1
                if self.interval_s > 0:
                    _sleep_unless_closed(self, self.interval_s)
            if not self.loop:
                return
            if index == shown:
                log.warning("%s: none of its %d image files decodes: the replay ends", self.spec, len(self.paths))
                return

    def close(self) -> None:
        self._closed = True


def _sleep_unless_closed(source: Source, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end and not getattr(source, "_closed", False):
        time.sleep(min(0.1, max(0.0, end - time.monotonic())))


class OpenCVSource(Source):
    """Frames from OpenCV's VideoCapture: ``webcam:N`` (device N) or ``video:PATH`` (a file).

    For a file, ``t`` is the video time (frame index / fps) so roll settling behaves the same
    however fast the file is decoded; ``realtime=True`` paces it to the file's frame rate.

    Raises:
        FileNotFoundError: ``video:PATH`` names a missing file.
        ValueError: it names a folder; OpenCV cannot open the device or file, or the file's name is not UTF-8 text
            (bytes from an old camera card: OpenCV cannot take it).
    """

    def __init__(self, target: int | str, realtime: bool = False, spec: str = ""):
        import cv2

        from pi_table.vision.reader import quiet_opencv

        self.target = target
        self.is_file = isinstance(target, str)
        if self.is_file:
            if not Path(target).exists():
                raise FileNotFoundError(f"no such video file: {target}")
            if not Path(target).is_file():
                raise ValueError(f"not a video file: {target}" + (" (a folder)" if Path(target).is_dir() else ""))
            try:
                target.encode()
            except UnicodeEncodeError:  # OpenCV dies of a segmentation fault on such a name
                raise ValueError(f"cannot open video {target!r}: OpenCV takes only file names that are UTF-8 text "
                                 "(rename the file)") from None
            # FFmpeg's own error lines ("[mov,mp4,...] moov atom not found" for a file that is no
            # video) went to stderr beside ours; OpenCV reads this once, at its first FFmpeg use, and
            # a value set beforehand (16: errors) shows them again
            os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")
        with quiet_opencv():  # its backends' WARN lines: ours is the one line
            self.capture = cv2.VideoCapture(target)
        if not self.capture.isOpened():
            if self.is_file:
                raise ValueError(f"cannot open video {target!r}: not a video OpenCV can decode")
            raise ValueError(f"cannot open webcam {target!r}")
        fps = self.capture.get(cv2.CAP_PROP_FPS)
        self.fps = fps if fps and fps > 0 else 30.0
        self.realtime = realtime
        self.live = not self.is_file
        self.spec = spec or (f"video:{target}" if self.is_file else f"webcam:{target}")

    def frames(self) -> Iterator[Frame]:
        index = 0
        start = time.monotonic()
        while self.capture is not None:
            ok, image = self.capture.read()
            if not ok or image is None:
                return
            if self.is_file:
                t = index / self.fps
                if self.realtime:
                    delay = start + t - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
            else:
                t = time.monotonic()
            name = f"{Path(str(self.target)).name}#{index}" if self.is_file else f"webcam{self.target}#{index}"
            yield Frame(image=image, t=t, index=index, name=name)
            index += 1

    def close(self) -> None:
        if self.capture is not None:
            self.capture.release()
            self.capture = None


class PiCameraSource(Source):
    """The Raspberry Pi camera through picamera2 (imported only here, only when used).

    Two streams: a small ``lores`` stream (YUV420, ``lores_size``) is watched for motion at
    the camera's frame rate, and the ``main`` stream (``size``, BGR) is captured only when a
    roll has settled (:attr:`Frame.full`).

    Raises:
        ValueError: picamera2 is not installed or does not import (:func:`import_picamera2`), or
            no camera is attached.
    """

    spec = "picamera"
    live = True

    def __init__(self, size: tuple[int, int] = (1280, 960), lores_size: tuple[int, int] = (320, 240)):
        try:
            Picamera2 = import_picamera2()
        except ValueError as exc:
            raise ValueError(f"picamera: {exc}") from None
        try:
            self.camera = Picamera2()
            config = self.camera.create_video_configuration(
                main={"size": size, "format": "RGB888"}, lores={"size": lores_size, "format": "YUV420"})
            self.camera.configure(config)
            self.camera.start()
        except Exception as exc:  # picamera2 raises bare exceptions when no camera is attached
            raise ValueError(f"picamera: no camera available ({exc})") from None
        self.lores_size = lores_size

    def _full(self) -> np.ndarray:
        # picamera2's "RGB888" is BGR in memory order, which is what OpenCV expects.
        return np.ascontiguousarray(self.camera.capture_array("main")[:, :, :3])

    def frames(self) -> Iterator[Frame]:
        import cv2

        index = 0
        while self.camera is not None:
            yuv = self.camera.capture_array("lores")
            small = cv2.cvtColor(yuv, cv2.COLOR_YUV420p2BGR)
            yield Frame(image=small, t=time.monotonic(), index=index, name=f"picamera#{index}", full=self._full)
            index += 1

    def close(self) -> None:
        if self.camera is not None:
            try:
                self.camera.stop()
                self.camera.close()
            finally:
                self.camera = None


def import_picamera2():
    """picamera2's ``Picamera2`` class, imported only now (it is there on a Pi only).

    Raises:
        ValueError: why not, in one line: not installed (or not seen from a venv made without
            ``--system-site-packages``), or installed but failing to import: Raspberry Pi OS's
            picamera2 and simplejpeg are built for the system's numpy, and a venv holding another
            numpy makes them raise ``ValueError: numpy.dtype size changed`` (picamera2 issue #1088).
    """
    try:
        from picamera2 import Picamera2  # type: ignore[import-not-found]
    except ImportError:
        raise ValueError("picamera2 is not installed here (on a Pi: sudo apt install python3-picamera2, "
                         "and make the venv with --system-site-packages)") from None
    except Exception as exc:  # installed, but its import fails here
        why = str(exc).splitlines()[0] if str(exc) else ""
        hint = ("; the system's picamera2 is built for the system's numpy, and this venv has another"
                if "numpy" in why else "")
        raise ValueError(f"picamera2 is installed but does not import ({type(exc).__name__}: {why}){hint}") from None
    return Picamera2


def picamera_problem() -> str | None:
    """None when picamera2 imports and reports at least one camera, else why not (one line)."""
    try:
        Picamera2 = import_picamera2()
    except ValueError as exc:
        return str(exc)
    try:
        cameras = Picamera2.global_camera_info()
    except Exception as exc:  # libcamera errors come in many types
        return f"picamera2 could not list cameras ({exc})"
    return None if cameras else "picamera2 finds no camera (is the ribbon cable seated? rpicam-hello --list-cameras)"


def open_source(spec: str | None, interval_s: float = 6.0) -> Source:
    """Open a source from its spec; ``None`` means the Pi camera if present, else ``demo``.

    Args:
        spec: ``picamera``, ``webcam:N``, ``video:PATH``, ``folder:DIR`` or ``demo``; a PATH or DIR
            starting with ``~`` is under the home folder (``folder:~/rolls``; a shell leaves that ``~``).
        interval_s: seconds between rolls when replaying ``folder:`` or ``demo`` photos.

    Raises:
        ValueError: unknown spec or a malformed argument (``webcam:x``, ``webcam:-1``, ``folder:``), a
            folder that is a file, a file that is no video.
        FileNotFoundError: the folder or video file does not exist.
    """
    if spec is None:
        problem = picamera_problem()
        spec = "picamera" if problem is None else "demo"
        if problem is not None:
            log.warning("no Pi camera: %s; replaying the bundled demo photos instead (--source picks another)", problem)
    kind, _, arg = spec.partition(":")
    if kind in ("folder", "video") and not arg:
        raise ValueError(f"source {spec!r} names no {'folder' if kind == 'folder' else 'file'} "
                         f"(expected {kind}:{'DIR' if kind == 'folder' else 'PATH'})")
    if kind == "demo" and not arg:
        return FolderSource(DEMO_DIR, interval_s=interval_s, loop=True, spec="demo")
    if kind in ("folder", "video"):
        arg = os.path.expanduser(arg)  # "folder:~/rolls": no shell expands a ~ after the colon
    if kind == "folder" and arg:
        return FolderSource(arg, interval_s=interval_s, loop=False, spec=spec)
    if kind == "video" and arg:
        return OpenCVSource(arg, spec=spec)
    if kind == "webcam":
        try:
            device = int(arg or "0")
        except ValueError:
            device = -1
        if not 0 <= device < 2**31:  # OpenCV takes -1 for "any camera" (a segmentation fault where there is none); past a C int, a TypeError
            raise ValueError(f"bad webcam number in source {spec!r} (expected webcam:N, N = 0, 1, 2, ...)")
        return OpenCVSource(device, spec=spec)
    if kind == "picamera" and not arg:
        return PiCameraSource()
    raise ValueError(f"unknown source {spec!r} (expected picamera, webcam:N, video:PATH, folder:DIR or demo)")
