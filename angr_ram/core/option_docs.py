"""An option's values and meaning, written once and shown both as a technique's docstring
parameters and as a row of the options reference.

Each technique keeps one table of :class:`Option` (``RunConfig``'s field metadata for
:class:`~angr_ram.run.technique.RelocatableMemory`, ``MERGE_OPTIONS`` for
:class:`~angr_ram.merging.technique.QuantifiedMerging`); :func:`parameters_doc` appends the
``:param:`` list to the class's docstring, so ``help()`` in IPython and the reference page
(``docs/tools/options_reference.py``) read the same text.
"""

from __future__ import annotations

import textwrap
from typing import NamedTuple


class Option(NamedTuple):
    """What an option takes (``values``) and what it means (``doc``), in Markdown."""

    values: str
    doc: str


def parameters_doc(options: dict[str, Option], defaults: dict) -> str:
    """The ``:param name:`` lines of ``options`` (with each one's default from ``defaults``), indented
    as a class docstring's body."""
    out = []
    for name, opt in options.items():
        text = f":param {name}: ({opt.values}; default {defaults[name]!r}) {opt.doc}"
        out.append(textwrap.fill(text, 100, initial_indent="    ", subsequent_indent="        ",
                                 break_long_words=False, break_on_hyphens=False))
    return "\n".join(out) + "\n"
