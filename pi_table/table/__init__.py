"""Table stage: the selected system, the GM's tokens, and the roll history.

Everything lives in one SQLite database (WAL journal, ``synchronous=FULL``), so a restart or
a power cut loses neither a recorded roll nor a token.
"""

from pi_table.table.state import Player, Roll, StateConflict, Table, TableFileError, TableState, Tokens

__all__ = ["Player", "Roll", "StateConflict", "Table", "TableFileError", "TableState", "Tokens"]
