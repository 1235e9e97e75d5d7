"""Errors static raises, with the types users can catch."""
from __future__ import annotations

from typing import Any

from gmbase.errors import Unsupported


class TraceError(Unsupported):
    """Tracing met something it cannot turn into a graph (a branch on a traced value,
    `.item()` of a traced value, ...). The message names the user's file and line. A
    RuntimeError, and torch._dynamo.exc.Unsupported (eager._dynamo.exc, defined in gmbase.errors), as
    fullgraph's is."""


class IRParseError(ValueError):
    """IR text that does not parse; the message gives line:column and what was expected."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.line, self.column = line, column


class IRVerifyError(ValueError):
    """A graph that breaks SSA form, the op's abstract rule, or names an unknown op."""

    # set by the verifier where the error is made: the node at fault (a `static.ir.Node`)
    # and its place in the IR text, for the parser's message
    node: Any
    line: int | None
    column: int | None
