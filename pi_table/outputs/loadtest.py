"""``pi-table loadtest``: a bounded load test of the live web service, measured.

It starts the real server (:func:`pi_table.outputs.web.make_server` on 127.0.0.1, a free
port) in a child process, with a :class:`pi_table.service.Service` whose dice reader is a
stand-in: a roll is injected every ``roll_interval`` seconds through
:meth:`Service.handle`, the same path a real settled roll takes (read -> resolve ->
SQLite -> LEDs -> viewers). The parent process then

- opens ``viewers`` concurrent ``/api/events`` streams (raw sockets, one thread, one
  ``selectors`` loop: cheap, so that the client does not steal the server's CPU),
- asks for ``/api/state`` at ``state_rps`` requests per second (open loop),
- checks that every viewer receives every roll (missing deliveries are counted), and the
  delivery latency of each roll to each viewer: client receive time minus the roll's
  ``time`` (stamped by the server when the roll is recorded, just before it is
  published), so it covers storing, fan-out, the socket and the client,
- samples the server's resident memory (VmRSS) every 10 s,
- opens ``over`` streams beyond the cap (``max_viewers``) and checks that they get
  ``503`` with ``Retry-After`` while the admitted viewers keep receiving.

Bars (INTERFACES issue "Reliability and security of the table service, measured"): with
100 viewers and 20 requests/s while a roll arrives every second, every viewer gets every
roll, p99 delivery < 250 ms, no /api/state error, and memory flat (the end sample within
``rss_slack_mb`` of the level after warm-up). Exit status 0 when every bar holds, 1 when
one does not, 2 for bad options.

Client and server share one machine's clock, so the latency needs no clock sync.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import random
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"
RSS_EVERY_S = 10.0


# ------------------------------------------------------------------------------------------
# The server side (runs in a child process, so that the load generator has its own GIL)
# ------------------------------------------------------------------------------------------
class _StubReader:
    """Stands in for the DiceReader: one to four d6 with random faces, instantly."""

    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)

    def read(self, image, name: str = "", kinds=None):
        from pi_table.vision.dice import Die, Reading

        faces = [self.rng.randint(1, 6) for _ in range(self.rng.randint(1, 4))]
        dice = tuple(Die("d6", str(f), f, (10.0 + 50 * i, 10.0, 50.0 + 50 * i, 50.0), 0.99, "ok")
                     for i, f in enumerate(faces))
        return Reading(image=name, width=image.shape[1], height=image.shape[0], ms=1.0, dice=dice)


def _child(cfg: dict) -> int:
    """Serve one table and inject rolls on command; protocol on stdin/stdout, one line each.

    stdin: ``start`` (begin injecting rolls), ``stop`` (stop; prints the rolls made),
    ``quit``. stdout: ``{"port", "pid"}`` once listening, then ``{"rolls": [[id, t], ...],
    "errors": n}`` after ``stop``.
    """
    import logging

    import numpy as np

    from pi_table.capture import Frame, SettledRoll
    from pi_table.outputs.web import make_server
    from pi_table.service import Service, Settings

    logging.basicConfig(level=logging.WARNING)
    settings = Settings(state_dir=Path(cfg["state_dir"]), pin=cfg["pin"], system="charge",
                        max_viewers=int(cfg["max_viewers"]), host=HOST, port=0)
    service = Service(settings, reader=_StubReader())
    server = make_server(service, HOST, 0)
    threading.Thread(target=server.run, name="waitress", daemon=True).start()
    print(json.dumps({"port": server.effective_port, "pid": os.getpid()}), flush=True)

    rolls: list[list] = []
    errors = [0]
    stop = threading.Event()

    def roller() -> None:
        interval = float(cfg["roll_interval"])
        image = np.full((48, 64, 3), 128, np.uint8)
        t0, n = time.monotonic(), 0
        while not stop.is_set():
            image[:, :, 0] = n % 256  # a different photo each time
            frame = Frame(image=image.copy(), t=time.monotonic(), index=n, name=f"loadtest#{n}", settled=True)
            try:
                roll = service.handle(SettledRoll(frame, 0.0, 1.0))
                rolls.append([roll.id, roll.t])
            except Exception as exc:  # counted and reported, never fatal to the run
                errors[0] += 1
                print(f"roll {n} failed: {exc!r}", file=sys.stderr, flush=True)
            n += 1
            stop.wait(max(0.0, t0 + n * interval - time.monotonic()))

    thread = None
    for line in sys.stdin:
        word = line.strip()
        if word == "start" and thread is None:
            thread = threading.Thread(target=roller, name="roller", daemon=True)
            thread.start()
        elif word == "stop":
            stop.set()
            if thread is not None:
                thread.join(timeout=30)
            print(json.dumps({"rolls": rolls, "errors": errors[0]}), flush=True)
        elif word == "quit":
            break
    stop.set()
    server.close()
    service.close()
    return 0


# ------------------------------------------------------------------------------------------
# The client side
# ------------------------------------------------------------------------------------------
@dataclass
class _Viewer:
    """One /api/events stream read by the selector loop."""

    sock: socket.socket
    raw: bytes = b""
    headers_done: bool = False
    status: int = 0
    retry_after: str | None = None
    chunked: bool = False
    chunk_left: int = -1  # bytes left in the current chunk; -1: a size line next, -2: its CRLF
    text: str = ""
    ready: bool = False  # first "state" event seen: subscribed
    closed: bool = False
    received: dict = field(default_factory=dict)  # roll id -> latency ms


def _parse_headers(viewer: _Viewer) -> bool:
    """Parse the response head if complete; True when done."""
    head, sep, rest = viewer.raw.partition(b"\r\n\r\n")
    if not sep:
        return False
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split()
    viewer.status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "retry-after":
            viewer.retry_after = value.strip()
        elif name == "transfer-encoding" and "chunked" in value.lower():
            viewer.chunked = True
    viewer.headers_done, viewer.raw = True, rest
    return True


def _dechunk(viewer: _Viewer) -> bytes:
    """Take the complete body bytes out of ``viewer.raw`` (chunked transfer or plain)."""
    if not viewer.chunked:
        body, viewer.raw = viewer.raw, b""
        return body
    out = []
    while True:
        if viewer.chunk_left == -1:  # a size line
            line, sep, rest = viewer.raw.partition(b"\r\n")
            if not sep:
                break
            size = int(line.split(b";")[0].strip() or b"0", 16)
            viewer.raw = rest
            if size == 0:
                viewer.closed = True
                break
            viewer.chunk_left = size
        if viewer.chunk_left > 0:  # chunk data
            take = min(viewer.chunk_left, len(viewer.raw))
            out.append(viewer.raw[:take])
            viewer.raw, viewer.chunk_left = viewer.raw[take:], viewer.chunk_left - take
            if viewer.chunk_left > 0:
                break
            viewer.chunk_left = -2
        if viewer.chunk_left == -2:  # the CRLF after the data
            if len(viewer.raw) < 2:
                break
            viewer.raw, viewer.chunk_left = viewer.raw[2:], -1
    return b"".join(out)


def _feed_events(viewer: _Viewer, body: bytes, t_recv: float) -> None:
    viewer.text += body.decode("utf-8", "replace")
    while "\n\n" in viewer.text:
        block, viewer.text = viewer.text.split("\n\n", 1)
        name, data = None, None
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
        if name == "state":
            viewer.ready = True
        elif name == "roll" and data is not None:
            roll = json.loads(data)
            if roll.get("id") is not None and roll["id"] not in viewer.received:
                viewer.received[roll["id"]] = (t_recv - float(roll["time"])) * 1000.0


def _request(path: str, port: int) -> bytes:
    return (f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nAccept: text/event-stream\r\n"
            "Cache-Control: no-cache\r\n\r\n").encode()


class _Viewers:
    """N event streams read by one thread with a selector."""

    def __init__(self, port: int):
        self.port = port
        self.viewers: list[_Viewer] = []
        self.selector = selectors.DefaultSelector()
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="viewers", daemon=True)
        self.thread.start()

    def open(self, n: int) -> list[_Viewer]:
        new = []
        for _ in range(n):
            sock = socket.create_connection((HOST, self.port), timeout=10)
            sock.sendall(_request("/api/events", self.port))
            sock.setblocking(False)
            viewer = _Viewer(sock)
            with self.lock:
                self.viewers.append(viewer)
                self.selector.register(sock, selectors.EVENT_READ, viewer)
            new.append(viewer)
        return new

    def _loop(self) -> None:
        while not self._stop.is_set():
            with self.lock:
                empty = not self.selector.get_map()
            if empty:
                time.sleep(0.01)
                continue
            for key, _ in self.selector.select(timeout=0.1):
                viewer: _Viewer = key.data
                try:
                    data = viewer.sock.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                t_recv = time.time()
                if not data:
                    self._close(viewer)
                    continue
                viewer.raw += data
                if not viewer.headers_done and not _parse_headers(viewer):
                    continue
                if viewer.status != 200:
                    self._close(viewer)
                    continue
                _feed_events(viewer, _dechunk(viewer), t_recv)
                if viewer.closed:
                    self._close(viewer)

    def _close(self, viewer: _Viewer) -> None:
        viewer.closed = True
        with self.lock:
            try:
                self.selector.unregister(viewer.sock)
            except (KeyError, ValueError):
                pass
        viewer.sock.close()

    def close(self) -> None:
        self._stop.set()
        self.thread.join(timeout=5)
        for viewer in self.viewers:
            if not viewer.sock._closed:  # type: ignore[attr-defined]
                viewer.sock.close()
        self.selector.close()


class _StateLoad:
    """GET /api/state at ``rps`` requests per second, open loop, over keep-alive connections."""

    def __init__(self, port: int, rps: float):
        self.port, self.rps = port, rps
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        workers = max(1, min(4, math.ceil(rps / 10))) if rps > 0 else 0
        self.threads = [threading.Thread(target=self._work, args=(i, workers), name=f"state{i}", daemon=True)
                        for i in range(workers)]

    def start(self) -> None:
        self.t0 = time.monotonic()
        for t in self.threads:
            t.start()

    def _work(self, i: int, workers: int) -> None:
        period = workers / self.rps
        conn = None
        k = 0
        while not self._stop.is_set():
            due = self.t0 + (k + i / workers) * period
            k += 1
            if self._stop.wait(max(0.0, due - time.monotonic())):
                break
            if conn is None:
                conn = http.client.HTTPConnection(HOST, self.port, timeout=10)
            t = time.perf_counter()
            try:
                conn.request("GET", "/api/state")
                resp = conn.getresponse()
                body = resp.read()
                ms = (time.perf_counter() - t) * 1000.0
                if resp.status != 200 or "system" not in json.loads(body):
                    self.errors.append(f"status {resp.status}")
                else:
                    self.latencies.append(ms)
                if resp.will_close:
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException, ValueError) as exc:
                self.errors.append(type(exc).__name__)
                conn.close()
                conn = None
        if conn is not None:
            conn.close()

    def stop(self) -> None:
        self._stop.set()
        for t in self.threads:
            t.join(timeout=15)


def _probe(port: int, n: int) -> dict:
    """Open ``n`` streams beyond the cap; each should get 503 with Retry-After."""
    statuses: dict[str, int] = {}
    with_retry = 0
    for _ in range(n):
        viewer = _Viewer(socket.create_connection((HOST, port), timeout=10))
        try:
            viewer.sock.sendall(_request("/api/events", port))
            deadline = time.monotonic() + 10
            while not _parse_headers(viewer) and time.monotonic() < deadline:
                data = viewer.sock.recv(65536)
                if not data:
                    break
                viewer.raw += data
        except OSError:
            pass
        finally:
            viewer.sock.close()
        statuses[str(viewer.status)] = statuses.get(str(viewer.status), 0) + 1
        with_retry += viewer.status == 503 and bool(viewer.retry_after)
    return {"attempts": n, "statuses": statuses, "503_with_retry_after": with_retry,
            "ok": n == 0 or with_retry == n}


def _rss_mb(pid: int) -> float | None:
    """Resident memory of a process in MiB (Linux /proc), or None where unavailable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        pass
    return None


def _pct(values: list[float], p: float) -> float | None:
    """Nearest-rank percentile of ``values`` (p in 0..100), None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))], 2)


def check_options(viewers: int, state_rps: float, roll_interval: float, duration: float,
                  max_viewers: int | None = None, over: int = 0, rss_slack_mb: float = 5.0) -> int:
    """Check the load test's options (see :func:`run_loadtest`); returns the stream cap.

    Raises:
        ValueError: an option out of range or not finite, naming it and its value.
    """
    if not isinstance(viewers, int) or viewers < 1:
        raise ValueError(f"--viewers must be an integer >= 1, got {viewers!r}")
    if not math.isfinite(state_rps) or state_rps < 0:
        raise ValueError(f"--state-rps must be a number >= 0, got {state_rps!r}")
    if not math.isfinite(roll_interval) or roll_interval <= 0:
        raise ValueError(f"--roll-interval must be a number of seconds > 0, got {roll_interval!r}")
    if not math.isfinite(duration) or duration <= 0:
        raise ValueError(f"--duration must be a number of seconds > 0, got {duration!r}")
    cap = viewers if max_viewers is None else max_viewers
    if not isinstance(cap, int) or cap < 1:
        raise ValueError(f"--max-viewers must be an integer >= 1, got {cap!r}")
    if not isinstance(over, int) or over < 0:
        raise ValueError(f"--over must be an integer >= 0, got {over!r}")
    if not math.isfinite(rss_slack_mb) or rss_slack_mb < 0:
        raise ValueError(f"--rss-slack must be a number of MiB >= 0, got {rss_slack_mb!r}")
    return cap


def run_loadtest(viewers: int = 100, state_rps: float = 20.0, roll_interval: float = 1.0,
                 duration: float = 600.0, max_viewers: int | None = None, over: int = 5,
                 warmup_s: float | None = None, rss_slack_mb: float = 5.0, p99_bar_ms: float = 250.0,
                 rss_every_s: float = RSS_EVERY_S, progress=None) -> dict:
    """Run the load test and return its measurements (see the module doc).

    Args:
        viewers: live ``/api/events`` streams to open (>= 1).
        state_rps: ``GET /api/state`` requests per second (>= 0).
        roll_interval: seconds between injected rolls (> 0).
        duration: seconds of load, counted from the first roll (> 0).
        max_viewers: the server's stream cap (default: ``viewers``); viewers beyond it
            are expected to get 503.
        over: extra streams opened beyond the cap to check 503 + Retry-After (only when
            the cap is reached).
        warmup_s: memory level is taken from the first sample at or after this many
            seconds (default: duration / 5, at most 60 s).
        rss_slack_mb: "flat" means the end sample is within this many MiB of that level.
        p99_bar_ms: the p99 delivery latency bar in milliseconds.
        rss_every_s: seconds between memory samples.
        progress: None, or a callable taking one line of text (progress reports).

    Returns:
        A JSON-able dict: ``rolls``, ``viewers`` (asked, admitted, rejected, dropped),
        ``delivery`` (expected, delivered, missing, p50/p99/max ms), ``state`` (requests,
        errors, p50/p99/max ms, rps), ``memory_mb`` (samples, start, warm, end, max,
        flat), ``cap`` (the 503 probe), ``bars`` (each bar: true/false) and ``ok``.

    Raises:
        ValueError: an argument out of range. RuntimeError: the server did not start.
    """
    cap = check_options(viewers, state_rps, roll_interval, duration, max_viewers, over, rss_slack_mb)
    warmup_s = min(60.0, duration / 5) if warmup_s is None else warmup_s
    say = progress or (lambda line: None)

    import pi_table

    with tempfile.TemporaryDirectory(prefix="pi-table-loadtest-") as tmp:
        cfg = {"state_dir": tmp, "pin": "loadtest-" + os.urandom(4).hex(), "max_viewers": cap,
               "roll_interval": roll_interval}
        env = dict(os.environ)
        root = str(Path(pi_table.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "") if env.get("PYTHONPATH") else root
        errlog = open(Path(tmp) / "server.log", "w+")
        child = subprocess.Popen([sys.executable, "-m", "pi_table.outputs.loadtest", "--child", json.dumps(cfg)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog, text=True, env=env)
        viewers_io = None
        load = None
        try:
            line = child.stdout.readline()
            if not line:
                errlog.seek(0)
                tail = errlog.read().strip().splitlines()[-1:] or ["no output"]
                raise RuntimeError(f"the server did not start: {tail[0]}")
            hello = json.loads(line)
            port, pid = hello["port"], hello["pid"]
            say(f"server pid {pid} on http://{HOST}:{port}/ (cap {cap} streams)")

            # -- viewers ---------------------------------------------------------------
            viewers_io = _Viewers(port)
            opened = viewers_io.open(viewers)
            deadline = time.monotonic() + 30 + viewers * 0.1
            while time.monotonic() < deadline and not all(v.ready or v.closed for v in opened):
                time.sleep(0.05)
            admitted = [v for v in opened if v.ready and not v.closed]
            rejected = [v for v in opened if v.status == 503]
            say(f"{len(admitted)} viewers streaming, {len(rejected)} refused with 503")

            # -- the cap -----------------------------------------------------------------
            probe = _probe(port, over) if len(admitted) >= cap else {"attempts": 0, "skipped": "cap not reached", "ok": True}
            if rejected:
                probe["viewers_refused"] = len(rejected)
                probe["viewers_refused_with_retry_after"] = sum(bool(v.retry_after) for v in rejected)
            expected_refused = max(0, viewers - cap)
            probe["ok"] = probe["ok"] and len(rejected) == expected_refused and all(v.retry_after for v in rejected)

            # -- load --------------------------------------------------------------------
            samples: list[tuple[float, float]] = []
            load = _StateLoad(port, state_rps)
            child.stdin.write("start\n")
            child.stdin.flush()
            t0 = time.monotonic()
            load.start()
            next_sample = t0
            while True:
                now = time.monotonic()
                if now >= next_sample:
                    rss = _rss_mb(pid)
                    if rss is not None:
                        samples.append((round(now - t0, 1), round(rss, 2)))
                    delivered = sum(len(v.received) for v in admitted)
                    say(f"t={now - t0:5.0f}s rss={rss if rss is None else round(rss, 1)} MiB "
                        f"state={len(load.latencies)} ok/{len(load.errors)} err deliveries={delivered}")
                    next_sample += rss_every_s
                if now - t0 >= duration:
                    break
                time.sleep(max(0.0, min(next_sample, t0 + duration) - time.monotonic()))
            rss = _rss_mb(pid)
            if rss is not None:
                samples.append((round(time.monotonic() - t0, 1), round(rss, 2)))
            load.stop()
            child.stdin.write("stop\n")
            child.stdin.flush()
            summary = json.loads(child.stdout.readline() or "{}")
            rolls = summary.get("rolls", [])
            ids = {r[0] for r in rolls if r[0] is not None}
            grace = time.monotonic() + max(2.0, 2 * roll_interval)
            while time.monotonic() < grace and not all(ids <= set(v.received) for v in admitted):
                time.sleep(0.05)
            elapsed = time.monotonic() - t0
        finally:
            if load is not None:
                load.stop()
            if viewers_io is not None:
                viewers_io.close()
            try:
                child.stdin.write("quit\n")
                child.stdin.flush()
            except (OSError, ValueError):
                pass
            try:
                child.wait(timeout=20)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            errlog.close()

    latencies = [v.received[i] for v in admitted for i in ids if i in v.received]
    expected = len(ids) * len(admitted)
    missing = expected - len(latencies)
    dropped = sum(1 for v in admitted if v.closed)
    warm = next((rss for t, rss in samples if t >= warmup_s), samples[-1][1] if samples else None)
    memory = {
        "samples": samples,
        "start": samples[0][1] if samples else None,
        "warm": warm,
        "end": samples[-1][1] if samples else None,
        "max": max(r for _, r in samples) if samples else None,
        "warmup_s": warmup_s,
        "slack": rss_slack_mb,
    }
    memory["flat"] = None if warm is None else bool(memory["end"] - warm <= rss_slack_mb)
    result = {
        "config": {"viewers": viewers, "max_viewers": cap, "state_rps": state_rps,
                   "roll_interval": roll_interval, "duration": duration},
        "elapsed_s": round(elapsed, 2),
        "rolls": {"published": len(ids), "server_errors": summary.get("errors", 0)},
        "viewers": {"asked": viewers, "admitted": len(admitted), "refused_503": len(rejected),
                    "dropped_by_server": dropped},
        "delivery": {"expected": expected, "delivered": len(latencies), "missing": missing,
                     "p50_ms": _pct(latencies, 50), "p99_ms": _pct(latencies, 99),
                     "max_ms": round(max(latencies), 2) if latencies else None},
        "state": {"requests": len(load.latencies) + len(load.errors), "errors": len(load.errors),
                  "error_kinds": sorted(set(load.errors)), "rps": round((len(load.latencies) + len(load.errors)) / duration, 2),
                  "p50_ms": _pct(load.latencies, 50), "p99_ms": _pct(load.latencies, 99),
                  "max_ms": round(max(load.latencies), 2) if load.latencies else None},
        "memory_mb": memory,
        "cap": probe,
    }
    p99 = result["delivery"]["p99_ms"]
    result["bars"] = {
        "every_viewer_every_roll": bool(ids) and missing == 0 and len(admitted) == min(viewers, cap),
        f"p99_delivery_below_{p99_bar_ms:g}ms": p99 is not None and p99 < p99_bar_ms,
        "state_no_errors": not load.errors and summary.get("errors", 0) == 0,
        "memory_flat": memory["flat"] is not False,
        "cap_503_retry_after": bool(probe["ok"]),
    }
    result["ok"] = all(result["bars"].values())
    return result


def format_result(r: dict) -> str:
    """The result of :func:`run_loadtest` as a few lines of text."""
    d, s, m, v, c = r["delivery"], r["state"], r["memory_mb"], r["viewers"], r["cap"]
    lines = [
        f"load: {v['admitted']}/{v['asked']} viewers streaming (cap {r['config']['max_viewers']}), "
        f"{r['config']['state_rps']:g} state req/s, a roll every {r['config']['roll_interval']:g} s "
        f"for {r['config']['duration']:g} s",
        f"rolls: {r['rolls']['published']} published, {r['rolls']['server_errors']} failed on the server",
        f"delivery: {d['delivered']}/{d['expected']} (missing {d['missing']}, viewers dropped "
        f"{v['dropped_by_server']}), latency p50 {d['p50_ms']} ms, p99 {d['p99_ms']} ms, max {d['max_ms']} ms",
        f"/api/state: {s['requests']} requests ({s['rps']}/s), {s['errors']} errors, "
        f"p50 {s['p50_ms']} ms, p99 {s['p99_ms']} ms, max {s['max_ms']} ms",
        f"memory (RSS, MiB): start {m['start']}, after warm-up ({m['warmup_s']:g} s) {m['warm']}, "
        f"end {m['end']}, max {m['max']}; flat (end within {m['slack']:g} of warm-up): {m['flat']}",
        f"cap: {c.get('attempts', 0)} streams beyond the cap -> {c.get('statuses', c.get('skipped'))}, "
        f"{c.get('503_with_retry_after', 0)} with Retry-After"
        + (f"; {c['viewers_refused']} viewers refused" if c.get("viewers_refused") else ""),
    ]
    lines += [f"  {'PASS' if ok else 'FAIL'}  {name}" for name, ok in r["bars"].items()]
    lines.append("all bars hold" if r["ok"] else "a bar does not hold")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------
def register(sub) -> None:
    """Add ``loadtest`` to the ``pi-table`` parser."""
    p = sub.add_parser("loadtest", help="load-test the live web service (viewers, /api/state, memory)")
    p.add_argument("--viewers", type=int, default=100, help="live /api/events streams (default 100)")
    p.add_argument("--state-rps", dest="state_rps", type=float, default=20.0, help="GET /api/state per second (default 20)")
    p.add_argument("--roll-interval", dest="roll_interval", type=float, default=1.0, help="seconds between rolls (default 1)")
    p.add_argument("--duration", type=float, default=600.0, help="seconds of load (default 600)")
    p.add_argument("--max-viewers", dest="max_viewers", type=int, help="the server's stream cap (default: --viewers)")
    p.add_argument("--over", type=int, default=5, help="streams opened beyond the cap to check 503 (default 5)")
    p.add_argument("--rss-slack", dest="rss_slack", type=float, default=5.0, help="MiB of growth after warm-up still called flat (default 5)")
    p.add_argument("--json", action="store_true", help="print the measurements as one JSON object")
    p.set_defaults(func=_cmd)


def _cmd(args: argparse.Namespace) -> int:
    quiet = args.json
    result = run_loadtest(viewers=args.viewers, state_rps=args.state_rps, roll_interval=args.roll_interval,
                          duration=args.duration, max_viewers=args.max_viewers, over=args.over,
                          rss_slack_mb=args.rss_slack,
                          progress=None if quiet else (lambda line: print(line, file=sys.stderr, flush=True)))
    print(json.dumps(result) if args.json else format_result(result), flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        raise SystemExit(_child(json.loads(sys.argv[2])))
    sys.stderr.write("usage: pi-table loadtest [--viewers N] [--state-rps R] [--roll-interval S] [--duration S] [--json]\n")
    raise SystemExit(2)
