"""The charts the functions return."""

from __future__ import annotations

import os

from ._common import PathLike


class Chart(str):
    """A chart as SVG text (a ``str``): ``save(path)`` writes it; Jupyter displays it."""

    def _repr_svg_(self) -> str:
        return str(self)

    def save(self, path: PathLike) -> None:
        """Writes the SVG text to ``path``."""
        with open(os.fspath(path), "w", encoding="utf-8") as f:
            f.write(self)
