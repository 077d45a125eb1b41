"""A self-contained HTML report: every picture inline as a base64 PNG ``data:`` URI, the style in
the page, no script and no external asset, so it opens offline, from an attachment or an archive.
Every text is HTML-escaped."""

from __future__ import annotations

import base64
import html
import io
from typing import Any, Optional, Sequence

from .._errors import LDPParameterError

__all__ = ["figure_data_uri", "html_report"]

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
h1 { font-size: 1.6em; border-bottom: 2px solid #4c72b0; padding-bottom: .2em; }
h2 { font-size: 1.25em; margin-top: 2em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: right; }
th { background: #eef2f8; }
td:first-child, th:first-child { text-align: left; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: .2em 1.2em; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; }
img { max-width: 100%; height: auto; display: block; margin: .8em 0; }
p.note { color: #555; font-size: .9em; }
"""


def figure_data_uri(figure: Any, *, dpi: int = 96) -> str:
    """A matplotlib Figure as a ``data:image/png;base64,...`` URI."""
    buf = io.BytesIO()
    figure.savefig(buf, format="png", dpi=dpi)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return html.escape(f"{v:.6g}")
    return html.escape(str(v))


def _section(sec: dict) -> str:
    parts = [f"<section><h2>{html.escape(str(sec['heading']))}</h2>"]
    facts = sec.get("facts") or []
    if facts:
        parts.append('<dl class="facts">' + "".join(f"<dt>{html.escape(str(k))}</dt><dd>{_cell(v)}</dd>" for k, v in facts) + "</dl>")
    for note in sec.get("notes") or []:
        parts.append(f'<p class="note">{html.escape(str(note))}</p>')
    if sec.get("image"):
        uri = str(sec["image"])
        if not uri.startswith("data:image/png;base64,"):
            raise LDPParameterError("a report's pictures must be inline PNG data URIs (no external assets)")
        parts.append(f'<img src="{uri}" alt="{html.escape(str(sec.get("alt", sec["heading"])))}">')
    table = sec.get("table")
    if table:
        columns, rows = table
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
        body = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>" for row in rows)
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    parts.append("</section>")
    return "".join(parts)


def html_report(title: str, sections: Sequence[dict], *, subtitle: Optional[str] = None) -> str:
    """The page: ``sections`` are ``{"heading", "facts": [(name, value)], "notes": [text],
    "image": data URI, "alt": text, "table": (columns, rows)}`` (all but ``heading`` optional)."""
    if not sections:
        raise LDPParameterError("a report needs at least one section")
    sub = f"<p>{html.escape(subtitle)}</p>" if subtitle else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><link rel=\"icon\" href=\"data:,\"><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>{sub}"
        + "".join(_section(s) for s in sections)
        + "</body></html>\n"
    )
