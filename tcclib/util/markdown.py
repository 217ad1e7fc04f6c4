"""Text a notebook shows as Markdown: results said in sentences, tables, summaries.

A notebook cell that ends with (or ``display``s) a :class:`Markdown` shows it rendered, as
JupyterLab, nbviewer and GitHub render Markdown, where ``print`` would show the literal ``|`` and
``**``.  The rendered notebook keeps two forms of the output: ``text/markdown`` and, as its
``text/plain`` twin, the same text (what a console shows, and what nbval compares besides the
Markdown in a ``# NBVAL_CHECK_OUTPUT`` cell: ``docs/tests.md``).  No IPython import: IPython's
display machinery asks the object for its forms (``_repr_markdown_``, ``__repr__``).
"""

from __future__ import annotations


class Markdown:
    """Markdown ``text`` for a notebook's output (joined with blank lines when given several parts)."""

    def __init__(self, *parts: str):
        self.text = "\n\n".join(p.strip("\n") for p in parts if p and p.strip())

    def _repr_markdown_(self) -> str:
        return self.text

    def __repr__(self) -> str:  # the text/plain twin
        return self.text

    __str__ = __repr__

    def __eq__(self, other) -> bool:
        return isinstance(other, Markdown) and other.text == self.text

    __hash__ = None
