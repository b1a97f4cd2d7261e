"""Scoped values: a context variable set for the duration of a ``with`` block."""

from __future__ import annotations

import contextlib
import contextvars


@contextlib.contextmanager
def setting(var: contextvars.ContextVar, value):
    """Set ``var`` to ``value`` inside the block and restore it afterwards (also on errors)."""
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)
