"""The page: HTML building blocks, the style, and the status script a test reads.

The page is self-contained: its style and script are inline, its figures ``data:`` URIs,
and its Content-Security-Policy forbids fetching anything.  On load the script writes a
hidden ``<pre id="report-status">`` holding a JSON object: ``errors`` (every script
error, console error and blocked fetch) and ``images`` (each image's ``alt`` and
``naturalWidth``, 0 for one that did not load), so that a headless browser's dumped DOM
says whether the page showed what it should.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1250px;
       color: #222; line-height: 1.35; }
h1 { font-size: 1.5em; } h2 { border-bottom: 2px solid #ccc; margin-top: 1.8em; }
h3 { margin-bottom: 0.3em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #f0f0f0; } td.text { text-align: left; }
tr.bad td { background: #fde0e0; color: #8b0000; font-weight: bold; }
tr.model td { background: #eef5ff; font-style: italic; }
.verdict { padding: 0.5em 0.8em; border-radius: 4px; margin: 0.6em 0; font-weight: bold; }
.ok { background: #e3f6e3; color: #14521a; } .fail { background: #fde0e0; color: #8b0000; }
.note { color: #555; font-size: 0.9em; }
figure { display: inline-block; vertical-align: top; width: 48%; margin: 0.5em 1% 1.2em 0; }
figure img { width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.85em; color: #444; }
nav a { margin-right: 1em; } div.wide { overflow-x: auto; }
summary { cursor: pointer; font-size: 0.9em; color: #333; }
"""

CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'")
"""Nothing is fetched: the page needs no network (a fetch would be blocked and reported)."""

STATUS_ID = "report-status"

STATUS_SCRIPT = """
(function () {
  var errors = [];
  window.addEventListener('error', function (e) {
    errors.push('error: ' + (e.message || (e.target && (e.target.src || e.target.tagName))));
  }, true);
  window.addEventListener('securitypolicyviolation', function (e) {
    errors.push('blocked: ' + e.blockedURI);
  });
  var original = console.error;
  console.error = function () {
    errors.push('console: ' + Array.prototype.join.call(arguments, ' '));
    return original.apply(console, arguments);
  };
  window.addEventListener('load', function () {
    var images = Array.prototype.map.call(document.images, function (img) {
      return {alt: img.alt, naturalWidth: img.complete ? img.naturalWidth : 0};
    });
    var status = document.createElement('pre');
    status.id = 'STATUS_ID';
    status.hidden = true;
    status.textContent = JSON.stringify({errors: errors, images: images});
    document.body.appendChild(status);
  });
})();
""".replace("STATUS_ID", STATUS_ID)


def esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def fmt(v: Any) -> str:
    """A value as a table shows it: floats to 4 significant digits, booleans yes/no,
    lists comma-joined, fraction strings as written, None empty."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return str(v)
        return f"{v:.4g}"
    if isinstance(v, (list, tuple)):
        return ",".join(fmt(x) for x in v)
    if isinstance(v, dict):
        return " ".join(f"{k}:{fmt(x)}" for k, x in v.items())
    return str(v)


def as_float(v: Any) -> float:
    """A number or a fraction string (``"4/15"``) as a float (0 for anything else)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    try:
        return float(Fraction(str(v)))
    except (ValueError, ZeroDivisionError):
        return 0.0


def table(columns: Sequence[tuple[str, str]], rows: Sequence[dict[str, Any]],
          kind: str, bad: Sequence[bool] = (), classes: Sequence[str] = ()) -> str:
    """A table: ``columns`` are ``(key, heading)``; every cell carries ``data-key`` and
    every row ``class="bad"`` when ``bad`` (failed or not verified).  The table carries
    ``data-kind``."""
    head = "".join(f"<th>{esc(h)}</th>" for _, h in columns)
    body = []
    for i, row in enumerate(rows):
        cls = classes[i] if i < len(classes) and classes[i] else (
            "bad" if i < len(bad) and bad[i] else "")
        cells = []
        for key, _ in columns:
            v = row.get(key)
            num = isinstance(v, (int, float)) and not isinstance(v, bool)
            td = "" if num else ' class="text"'
            cells.append(f'<td data-key="{esc(key)}"{td}>{esc(fmt(v))}</td>')
        body.append(f'<tr{f" class={chr(34)}{cls}{chr(34)}" if cls else ""}>'
                    + "".join(cells) + "</tr>")
    return (f'<div class="wide"><table data-kind="{esc(kind)}"><thead><tr>{head}</tr>'
            "</thead><tbody>" + "".join(body) + "</tbody></table></div>")


FOLD_ROWS = 40
"""A table with more rows than this starts folded (``<details>``), under its figures."""


def fold(table_html: str, rows: int, what: str) -> str:
    """``table_html`` in a ``<details>`` element, open unless it has more than
    :data:`FOLD_ROWS` rows."""
    state = "" if rows > FOLD_ROWS else " open"
    return (f"<details{state}><summary>{esc(f'{rows} {what}')}</summary>{table_html}"
            "</details>")


def verdict(ok: bool, text: str) -> str:
    return f'<div class="verdict {"ok" if ok else "fail"}">{esc(text)}</div>'


def img(uri: str, alt: str, caption: str = "") -> str:
    cap = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
    return f'<figure><img src="{uri}" alt="{esc(alt)}">{cap}</figure>'


def note(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>'


def page(title: str, body: Sequence[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f"<title>{esc(title)}</title><style>{STYLE}</style>"
            f"<script>{STATUS_SCRIPT}</script></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def status_of(dom: str) -> dict[str, Any] | None:
    """The status object of a page's dumped DOM (:data:`STATUS_SCRIPT`), None if absent."""
    start = dom.find(f'id="{STATUS_ID}"')
    if start < 0:
        return None
    start = dom.index(">", start) + 1
    end = dom.index("</pre>", start)
    return dict(json.loads(html.unescape(dom[start:end])))
