"""Capture stage: frame sources and roll settling.

A *source* yields :class:`Frame` values; the :class:`RollSettler` turns a stream of frames
into settled rolls (one physical roll -> exactly one :class:`SettledRoll`).
"""

from pi_table.capture.settle import RollSettler, SettledRoll
from pi_table.capture.sources import Frame, Source, open_source

__all__ = ["Frame", "Source", "open_source", "RollSettler", "SettledRoll"]
