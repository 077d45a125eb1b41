"""A Griffe extension for the API reference: the docstrings' doctest examples (``>>>`` lines and
their output) are shown as fenced ``pycon`` code, so Markdown never reads ``x[0][1]`` as a link."""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    out: list[str] = []
    block = False
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith(">>>"):
            if not block:
                out += ["", "```pycon"]
                block = True
            out.append(stripped)
        elif block and stripped and not stripped.startswith("```"):
            out.append(stripped)
        else:
            if block:
                out += ["```", ""]
                block = False
            out.append(line)
    if block:
        out += ["```", ""]
    return "\n".join(out)


class FenceDoctests(griffe.Extension):
    def on_object(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)

    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        self.on_object(obj=obj)
