"""Command-line errors: one line on stderr, exit status 2, no traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pi_table.cli import main
from tests.conftest import REPO


def run_cli(*args: str, tmp_path=None) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "GPIOZERO_PIN_FACTORY": "mock"}
    if tmp_path is not None:
        env["XDG_STATE_HOME"] = str(tmp_path)
    return subprocess.run([sys.executable, "-m", "pi_table", *args], capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize(
    "args, needle",
    [
        (("serve", "--source", "floppy:1"), "floppy:1"),
        (("serve", "--source", "folder:/no/such/dir"), "/no/such/dir"),
        (("serve", "--port", "70000"), "70000"),
        (("serve", "--port", "eighty"), "eighty"),
        (("serve", "--config", "/no/such.toml"), "/no/such.toml"),
        (("serve", "--host", "no.such.host.invalid"), "no.such.host.invalid"),
        (("serve", "--host", "999.1.1.1"), "999.1.1.1"),
        (("serve", "--source", "webcam:7", "--port", "8098"), "webcam 7"),  # OpenCV's own WARN lines kept off stderr
        (("check", "--source", "webcam:7"), "webcam 7"),
        (("serve", "--source", "webcam:-1"), "webcam:-1"),  # OpenCV's "any camera": a segmentation fault where none is
        (("check", "--source", "webcam:-1"), "webcam:-1"),
        (("serve", "--source", "webcam:one"), "webcam:one"),
        (('check', '--source', 'webcam:99999999999999999999'), 'webcam:99999999999999999999'),  # past a C int: a TypeError
        (("frobnicate",), "frobnicate"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, needle, tmp_path):
    result = run_cli(*args, tmp_path=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in result.stderr


def test_serve_on_a_port_in_use_is_one_line_and_exit_2_before_any_roll(tmp_path):
    """A port another program holds (a second serve, the systemd service): exit 2 and one line on
    stderr naming the address, before the pins (their warning), the camera or a new PIN (printed
    "once", so it must not be spent on a start that fails)."""
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        result = run_cli("serve", "--host", "127.0.0.1", "--port", str(port), "--source", "demo", tmp_path=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("pi-table: error: cannot listen on 127.0.0.1:") and str(port) in lines[0]
    assert "another pi-table serve" in lines[0]
    assert "GM PIN" not in result.stdout and not (tmp_path / "pi-table").exists()  # no PIN made, no table


def test_bad_config_key(tmp_path):
    config = tmp_path / "pi-table.toml"
    config.write_text('port = 8081\ncolour = "red"\n')
    result = run_cli("serve", "--config", str(config), tmp_path=tmp_path)
    assert result.returncode == 2 and "'colour'" in result.stderr


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for command in ("serve", "read", "eval", "resolve", "odds", "bench"):
        assert command in out


def huge_png(path, width: int = 60000, height: int = 60000):
    """A small PNG file whose header claims ``width x height`` pixels (more than OpenCV decodes)."""
    import struct
    import zlib

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 7))
                     + chunk(b"IEND", b""))
    return path


def test_read_an_image_too_large_to_decode_is_one_line_naming_it(tmp_path):
    """A picture whose header claims more pixels than OpenCV decodes (2^30) is bad input: exit 2
    and one line naming the file and why, after the other images are read; not a cv2.error
    traceback (INTERFACES.md: unreadable image, exit 2, never a traceback)."""
    import json

    demo = sorted((REPO / "pi_table" / "demo").glob("*.jpg"))[0]
    huge = huge_png(tmp_path / "huge.png")
    result = run_cli("read", "--json", str(huge), str(demo), tmp_path=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert str(huge) in result.stderr and "too large" in result.stderr
    assert [json.loads(line)["image"] for line in result.stdout.splitlines()] == [str(demo)]


def test_read_prints_each_image_as_it_goes_and_names_a_broken_one_at_the_end(tmp_path):
    """Images are decoded one at a time (a batch of phone photos never sits in memory at once): a
    file whose header is an image's and whose body is not costs only its own line; the rest are
    printed in order and the exit status (2, one line) names it. A missing file or one that is
    no image at all is still refused before any work. A JPEG cut off before its end marker
    (a copy that stopped short) is read as far as it goes."""
    import json

    demo = sorted((REPO / "pi_table" / "demo").glob("*.jpg"))[:2]
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"\xff\xd8\xff\xe0 not the rest of a jpeg")
    result = run_cli("read", "--json", str(demo[0]), str(broken), str(demo[1]), tmp_path=tmp_path)
    assert result.returncode == 2
    assert [json.loads(line)["image"] for line in result.stdout.splitlines()] == [str(demo[0]), str(demo[1])]
    assert result.stderr.strip().splitlines() == [f"pi-table: error: not an image: {broken}"]

    text = tmp_path / "notes.jpg"
    text.write_text("not an image")
    result = run_cli("read", "--json", str(demo[0]), str(text), tmp_path=tmp_path)
    assert result.returncode == 2 and result.stdout == "" and str(text) in result.stderr

    whole = demo[0].read_bytes()
    assert whole.endswith(b"\xff\xd9")
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(whole[:-2])  # the end marker lost
    result = run_cli("read", "--json", str(cut), tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["dice"]


@pytest.mark.parametrize("spec, needle", [
    ("video:{tmp}/fake.mp4", "fake.mp4"),  # FFmpeg's "moov atom not found" line was printed beside ours
    ("video:{tmp}", "not a video file: {tmp} (a folder)"),  # was "no such video file"
    ("folder:{tmp}/fake.mp4", "not a folder: {tmp}/fake.mp4"),
    ("video:", "'video:' names no file"),
    ("folder:", "'folder:' names no folder"),
])
def test_a_bad_video_or_folder_spec_is_one_line_naming_it(spec, needle, tmp_path):
    (tmp_path / "fake.mp4").write_text("this is no video")
    for command in (("serve", "--port", "8097"), ("check",)):
        result = run_cli(*command, "--source", spec.format(tmp=tmp_path), tmp_path=tmp_path / "state")
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and needle.format(tmp=tmp_path) in lines[0], lines


def _not_sqlite(state):
    (state / "table.db").write_text("my notes, not a database\n")


def _another_programs_database(state):
    import sqlite3

    db = sqlite3.connect(state / "table.db")
    db.execute("CREATE TABLE settings (a, b, c)")  # a name pi-table uses, another program's columns
    db.execute("CREATE TABLE notes (text)")
    db.commit()
    db.close()


def _corrupt_page(state):
    from pi_table.table import Table
    from tests.conftest import d6_reading

    table = Table(state / "table.db", "charge")
    for i in range(40):
        table.record(d6_reading(1, 2, 3, 4, 5, 6, name=f"roll{i}.jpg"))
    table._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    table.close()
    with open(state / "table.db", "r+b") as f:  # one b-tree page overwritten: a bad block, a torn write
        f.seek(4096 * 3)
        f.write(b"\xa5" * 4096)


def _rolls_folder_is_a_file(state):
    (state / "rolls").write_text("not a folder")


@pytest.mark.parametrize("spoil, needle", [(_not_sqlite, "table.db: file is not a database (not an SQLite file)"),
                                           (_another_programs_database, "table.db is another program's SQLite database"),
                                           (_corrupt_page, "table.db is corrupt"),
                                           (_rolls_folder_is_a_file, "rolls: File exists")])
def test_serve_on_a_state_folder_it_cannot_use_is_one_line_and_exit_2_and_leaves_the_files(spoil, needle, tmp_path):
    """A table.db that is not SQLite, another program's database or corrupt, or a state folder
    it cannot write: one line naming the file, exit 2, and the file as it was. A non-SQLite or
    corrupt file was a traceback (exit 1); another program's database had pi-table's tables
    added to it and switched to WAL, and served; a corrupt one served 500s and took new rolls."""
    state = tmp_path / "pi-table"
    state.mkdir()
    spoil(state)
    before = {p.name: p.read_bytes() for p in state.iterdir() if p.is_file()}
    from tests.test_service import free_port

    result = run_cli("serve", "--host", "127.0.0.1", "--port", str(free_port()), "--source", f"folder:{REPO / 'pi_table' / 'demo'}",
                     tmp_path=tmp_path)  # the demo plays on a table in memory
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pi-table: error: ") and needle in lines[0], lines
    assert {p.name: p.read_bytes() for p in state.iterdir() if p.is_file()} == before
