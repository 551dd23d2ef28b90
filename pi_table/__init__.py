"""pi-table: read real dice in a tray, apply the game's rules, show every roll live.

The way of a roll, one subpackage per stage:

capture (sources, roll settling) -> vision (detect, classify) -> rules (resolve, odds)
-> table (state, tokens, history) -> outputs (gpio, web).
"""

__version__ = "0.1.0"
