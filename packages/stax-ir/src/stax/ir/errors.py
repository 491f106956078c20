"""Typed errors shared by every Stax layer.

Each error says what was expected, what was found, where (graph node and the user's source line)
and, where there is one, how to fix it (STYLE.md habit 11).
"""

from __future__ import annotations


class StaxError(Exception):
    """Base class of every error Stax raises on purpose."""


class UnsupportedError(StaxError):
    """A construct Stax cannot compile natively (yet).

    The runtime catches it and falls back to eager NumPy for that specialization key, logging
    one line with this message; under ``strict_native=True`` it is raised to the user instead.
    """

    def __init__(self, what: str, *, node: str | None = None, source: str | None = None,
                 hint: str | None = None) -> None:
        self.what = what
        self.node = node
        self.source = source
        self.hint = hint
        super().__init__(self._format())

    def _format(self) -> str:
        text = self.what
        if self.node:
            text += f" (node %{self.node})"
        if self.source:
            text += f" at {self.source}"
        if self.hint:
            text += f"; {self.hint}"
        return text


class SchemaError(StaxError):
    """A serialized document has the wrong schema name or an unsupported major version."""


class VerificationError(StaxError):
    """A graph or IR violates a structural invariant (a compiler bug, never a user error)."""
