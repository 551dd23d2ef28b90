"""Fan-out of live events to the viewers' server-sent-event streams.

Each viewer gets a bounded queue; a viewer that stops reading fills its queue and is
dropped instead of holding up the others. The number of streams is capped.
"""

from __future__ import annotations

import json
import queue
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Event:
    """One server-sent event: ``name`` (``roll``, ``state``) and its JSON-able ``data``."""

    name: str
    data: dict

    def encode(self) -> str:
        """The event in text/event-stream form (encoded once, then shared by every stream)."""
        text = self.__dict__.get("_text")
        if text is None:
            text = f"event: {self.name}\ndata: {json.dumps(self.data, separators=(',', ':'))}\n\n"
            object.__setattr__(self, "_text", text)
        return text


class EventHub:
    """Publish events to every subscribed stream.

    Args:
        max_streams: streams held at once; ``subscribe`` returns None beyond it.
        queue_size: events buffered per stream before a slow viewer is dropped.
    """

    def __init__(self, max_streams: int = 100, queue_size: int = 64):
        self.max_streams = max_streams
        self.queue_size = queue_size
        self._lock = threading.Lock()
        self._queues: set[queue.Queue] = set()
        self._closed = False

    def close(self) -> None:
        """End every open stream now (the server is stopping: a viewer's stream would otherwise
        hold its worker thread, and the stop, until its next heartbeat) and take no new ones."""
        with self._lock:
            self._closed = True
            targets, self._queues = list(self._queues), set()
        for q in targets:
            while True:
                try:
                    q.put_nowait(None)  # tells the stream to end
                    break
                except queue.Full:
                    try:
                        q.get_nowait()
                    except queue.Empty:
                        pass

    def subscribe(self) -> queue.Queue | None:
        """A new stream's queue, or None when ``max_streams`` are already open or the hub is closed."""
        with self._lock:
            if self._closed or len(self._queues) >= self.max_streams:
                return None
            q: queue.Queue = queue.Queue(maxsize=self.queue_size)
            self._queues.add(q)
            return q

    def unsubscribe(self, q: queue.Queue) -> None:
        with self._lock:
            self._queues.discard(q)

    @property
    def streams(self) -> int:
        with self._lock:
            return len(self._queues)

    def publish(self, event: Event) -> None:
        """Queue ``event`` for every stream; a stream whose queue is full is closed."""
        with self._lock:
            targets = list(self._queues)
        for q in targets:
            try:
                q.put_nowait(event)
            except queue.Full:
                self.unsubscribe(q)
                try:
                    q.get_nowait()
                    q.put_nowait(None)  # tells the stream to end
                except (queue.Empty, queue.Full):
                    pass
