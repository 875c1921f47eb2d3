"""The interactive view in a notebook cell: the app's own client-side viewer (``viewer.js``: the
single-head heatmap and the BertViz-style head view, layer/head sliders, head toggles, token
hover) in one self-contained HTML output. No server of ours runs and nothing is fetched: the
weights travel inline as 16-bit codes and plotly.js is embedded (once per kernel by default, in
every output on Colab, where each output is its own frame, and always in a returned HTML file).

Once per kernel is fragile in two ways this module closes: an output that needs plotly.js can sit
above the one carrying it (cells run out of order), so every drawing waits for plotly.js
(``when_plotly``) instead of failing; and re-running the cell that carried it replaces that
output, so the same cell run again carries it again (``plotly_script``)."""
from __future__ import annotations

import base64
import html
import sys
import uuid
from dataclasses import dataclass
from typing import Any

from ..figures.base import Figure, to_json
from ..inline import escape_json_text, script_json
from ..resources import STATIC

_PLOTLY_CARRIER: tuple[str, str] | None = None  # (cell, request) whose output carries plotly.js in this kernel

CSS = """
.bvl-nb {font-family: DejaVu Sans, Arial, sans-serif; font-size: 13px; color: #111; padding: 4px}
.bvl-nb.bvl-dark {background: #111; color: #eee}
.bvl-dark .bvl-hv-token {color: #eee} .bvl-dark .bvl-hv-token:hover, .bvl-dark .bvl-hv-token.focus {background: #333}
.bvl-dark .bvl-hv-set, .bvl-dark select {background: #222; color: #eee}
.bvl-dark .bvl-hv-head:not(.on) {background: #222 !important; color: #eee}
.bvl-dark .bvl-hv-note, .bvl-dark .bvl-caption {color: #aaa}
.bvl-nb-thumbs {margin-top: 8px} .bvl-nb-thumb-row {display: flex; align-items: center; gap: 3px; margin: 3px 0}
.bvl-nb-thumb-layer {width: 2.5em; font-size: 11px}
.bvl-nb-thumb {width: 56px; height: 56px; image-rendering: pixelated; cursor: pointer; border: 1px solid #8884}
.bvl-nb-controls {display: flex; flex-wrap: wrap; gap: 14px; align-items: center; margin: 4px 0 8px}
.bvl-nb-controls input[type=range] {width: 140px; vertical-align: middle}
.bvl-nb .bvl-caption {color: #555; font-size: 0.9em; min-height: 1.2em}
"""

GLUE = """
(function () {
  var root = document.getElementById(%(id)s), sections = %(sections)s, figures = %(figures)s;
  var viewer = window.BvlViewer({
    heatmap: function () { return root.querySelector('.bvl-heatmap'); },
    caption: function () { return root.querySelector('.bvl-caption'); },
    headview: function () { return root.querySelector('.bvl-headview'); },
    later: function (ms) { setTimeout(function () { viewer.redraw(); }, ms || 0); }
  });
  var layer = root.querySelector('.bvl-nb-layer'), head = root.querySelector('.bvl-nb-head');
  var filter = root.querySelector('.bvl-nb-filter'), section = root.querySelector('.bvl-nb-section');
  var meta = sections[0].meta;  // the open section's: its layers' and heads' names (the drop-ins: 0-based, as asked)
  function layerName(l) { return meta.layer_names ? String(meta.layer_names[l]) : String(l + 1); }
  function headName(h) { return meta.head_names ? String(meta.head_names[h]) : String(h + 1); }
  function label() {
    root.querySelector('.bvl-nb-layer-value').textContent = layerName(layer.value - 1);
    root.querySelector('.bvl-nb-head-value').textContent = headName(head.value - 1);
  }
  function open(i) {
    var s = sections[i];
    meta = s.meta;
    layer.max = s.meta.layers; head.max = s.meta.heads;
    layer.value = s.meta.layer + 1; head.value = s.meta.head + 1;
    label();
    window.BvlViewer.decode(s.meta, s.codes).then(function (codes) {
      viewer.show(s.meta, codes);
      thumbnails(s.meta, codes);
    });
  }
  // model_view's light grid: every layer x head as a small image of its weights; a click opens that head
  function thumbnails(meta, codes) {
    var grid = root.querySelector('.bvl-nb-thumbs');
    if (!grid) { return; }
    grid.innerHTML = '';
    var nq = meta.labels.length, nk = (meta.key_labels || meta.labels).length, dark = root.classList.contains('bvl-dark');
    var top = meta.levels || (meta.bits === 16 ? 65535 : 255), shown = meta.thumb_heads || null;
    for (var l = 0; l < meta.layers; l++) {
      var row = document.createElement('div');
      row.className = 'bvl-nb-thumb-row';
      row.innerHTML = '<span class="bvl-nb-thumb-layer">' + 'L' + layerName(l) + '</span>';
      for (var h = 0; h < meta.heads; h++) {
        if (shown && shown.indexOf(h) < 0) { continue; }
        var c = document.createElement('canvas'), ctx = c.getContext('2d');
        c.width = nk; c.height = nq; c.className = 'bvl-nb-thumb';
        c.title = 'layer ' + layerName(l) + ', head ' + headName(h) + ': click to open';
        c.setAttribute('data-layer', String(l)); c.setAttribute('data-head', String(h));
        var img = ctx.createImageData(nk, nq), base = (l * meta.heads + h) * nq * nk;
        for (var i = 0; i < nq * nk; i++) {
          var v = Math.sqrt(codes[base + i] / top), o = 4 * i;  // square root: faint weights stay visible
          if (dark) { img.data[o] = 17 + 141 * v; img.data[o + 1] = 17 + 185 * v; img.data[o + 2] = 17 + 208 * v; }
          else { img.data[o] = 247 - 239 * v; img.data[o + 1] = 251 - 203 * v; img.data[o + 2] = 255 - 148 * v; }
          img.data[o + 3] = 255;
        }
        ctx.putImageData(img, 0, 0);
        row.appendChild(c);
      }
      grid.appendChild(row);
    }
    grid.setAttribute('data-drawn', '1');
  }
  root.addEventListener('click', function (ev) {
    var t = ev.target;
    if (!t.classList || !t.classList.contains('bvl-nb-thumb')) { return; }
    layer.value = Number(t.getAttribute('data-layer')) + 1; head.value = Number(t.getAttribute('data-head')) + 1;
    label();
    viewer.select(layer.value - 1, head.value - 1);
  });
  layer.addEventListener('input', function () { label(); viewer.select(layer.value - 1, head.value - 1); });
  head.addEventListener('input', function () { label(); viewer.select(layer.value - 1, head.value - 1); });
  if (filter) { filter.addEventListener('change', function () { viewer.filter(filter.value); }); }
  if (section) { section.addEventListener('change', function () { open(Number(section.value)); }); }
  figures.forEach(function (f, i) {
    var el = root.querySelector('.bvl-nb-figure-' + i);
    if (el && window.Plotly) { window.Plotly.newPlot(el, f.data, f.layout, f.config); }
  });
  open(0);
})();
"""


@dataclass
class Section:
    """One attention to show (BertViz's "Attention:" choice: encoder, decoder, cross)."""

    name: str
    meta: dict[str, Any]
    codes: bytes
    weights: Any = None  # (layers, heads, query, key) as shown, for model_view's overview (never sent)


def running_cell() -> tuple[str, str]:
    """(the cell, this run of it) of the code running now: the cell id the front end sends
    (JupyterLab, Notebook 7, VS Code) or else the cell's code, and the request's id; ("", "")
    outside a kernel."""
    try:
        from IPython import get_ipython

        parent = get_ipython().kernel.get_parent()
    except (AttributeError, TypeError, ImportError):
        return "", ""
    cell = parent.get("metadata", {}).get("cellId") or parent.get("content", {}).get("code", "")
    return str(cell), str(parent.get("header", {}).get("msg_id", ""))


def plotly_script(include: bool | str) -> str:
    """plotly.js as an inline script that sets ``window.Plotly`` even where require.js defines
    ``define`` (classic Jupyter), then draws what waited for it (``when_plotly``); or nothing when an
    output of this kernel carries it. "once" sends it again when the cell that carried it runs
    again (its old output, and plotly.js with it, is gone) and in every output on Colab."""
    global _PLOTLY_CARRIER
    cell, run = running_cell()
    if include == "once":
        rerun = _PLOTLY_CARRIER is not None and _PLOTLY_CARRIER[0] == cell and _PLOTLY_CARRIER[1] != run
        include = _PLOTLY_CARRIER is None or rerun or "google.colab" in sys.modules
    if not include:
        return ""
    _PLOTLY_CARRIER = (cell, run)
    from plotly.offline import get_plotlyjs

    return ("<script>window.__bvlDefine = window.define; window.define = undefined;</script>"
            f"<script>{get_plotlyjs()}</script><script>window.define = window.__bvlDefine;"
            "(window.__bvlPlotlyWaiting || []).splice(0).forEach(function (draw) { draw(); });</script>")


def when_plotly(code: str) -> str:
    """JavaScript that runs ``code`` now if plotly.js is on the page, else as soon as the output that
    carries it runs (it may sit further down when cells ran out of order)."""
    return ("(function () { var draw = function () { " + code + " }; if (window.Plotly) { draw(); } "
            "else { (window.__bvlPlotlyWaiting = window.__bvlPlotlyWaiting || []).push(draw); } })();")


def plotly_div(figure_json: str, config: dict[str, Any], height: int | None) -> str:
    """One Plotly figure as a notebook's HTML output: its div and the script that draws it once
    plotly.js is there (``when_plotly``); ``figure_json`` is Plotly's JSON of the figure (data, layout)."""
    div = f"bvl-figure-{uuid.uuid4().hex}"
    draw = (f"var figure = {escape_json_text(figure_json)}; window.Plotly.newPlot({script_json(div)}, figure.data, "
            f"figure.layout, {script_json({'responsive': True, **config})});")
    return (f'<div id="{div}" class="plotly-graph-div bvl-figure" style="height:{height or 450}px; width:100%;"></div>'
            f"<script>{when_plotly(draw)}</script>")


@dataclass(frozen=True)
class ViewerPage:
    """How one viewer output is drawn, apart from the weights it carries: ``light`` (the BertViz
    drop-ins): no plotly.js and no heatmap, only the head view and, with ``thumbnails``, model_view's
    grid of every layer and head; ``dark``: the whole output on a dark ground; ``pair``: a
    sentence-pair filter; ``include_plotlyjs``: True, False or "once" per kernel."""

    include_plotlyjs: bool | str = "once"
    pair: bool = False
    title: str = ""
    light: bool = False
    thumbnails: bool = False
    dark: bool = False


def viewer_html(sections: list[Section], figures: list[Figure] = (), page: ViewerPage = ViewerPage()) -> str:
    """One output: controls, the heatmap, the head view (and any extra static figures), drawn as ``page`` says."""
    root = f"bvl-{uuid.uuid4().hex}"
    first = sections[0].meta
    choose = ""
    if len(sections) > 1:
        options = "".join(f'<option value="{i}">{html.escape(s.name)}</option>' for i, s in enumerate(sections))
        choose = f'<label>Attention: <select class="bvl-nb-section">{options}</select></label>'
    filters = ""
    if page.pair:
        options = "".join(f"<option>{html.escape(f)}</option>" for f in ("all", "A->A", "A->B", "B->A", "B->B"))
        filters = f'<label>Sentence-pair filter: <select class="bvl-nb-filter">{options}</select></label>'
    controls = (f'<div class="bvl-nb-controls">{choose}'
                f'<label>Layer <input type="range" class="bvl-nb-layer" min="1" max="{first["layers"]}" step="1"> '
                '<b class="bvl-nb-layer-value"></b></label>'
                f'<label>Head <input type="range" class="bvl-nb-head" min="1" max="{first["heads"]}" step="1"> '
                f'<b class="bvl-nb-head-value"></b></label>{filters}</div>')
    extra = "".join(f'<div class="bvl-nb-figure-{i}"></div>' for i in range(len(figures)))
    data = [{"name": s.name, "meta": s.meta, "codes": base64.b64encode(s.codes).decode("ascii")} for s in sections]
    glue = GLUE % {"id": script_json(root), "sections": script_json(data), "figures": "[" + ",".join(
        escape_json_text(to_json(f)) for f in figures) + "]"}
    heading = f"<div><b>{html.escape(page.title)}</b></div>" if page.title else ""
    views = ('<div class="bvl-caption"></div><div class="bvl-headview"></div>'
             + ('<div class="bvl-nb-thumbs"></div>' if page.thumbnails else "") if page.light else
             '<div class="bvl-heatmap"></div><div class="bvl-caption"></div><div class="bvl-headview"></div>')
    # the charset first: a saved .data opens as UTF-8 (browsers look for it in the first 1024 bytes)
    return (f'<meta charset="utf-8"><div id="{root}" class="bvl-nb{" bvl-dark" if page.dark else ""}">'
            f'<style>{CSS}{(STATIC / "viewer.css").read_text()}</style>{heading}{controls}{views}'
            f"{extra}</div>{'' if page.light else plotly_script(page.include_plotlyjs)}"
            f"<script>{(STATIC / 'export.js').read_text()}</script>"
            f"<script>{(STATIC / 'viewer.js').read_text()}</script><script>{glue if page.light else when_plotly(glue)}</script>")


class ViewerHTML:
    """What a notebook displays (``_repr_html_``) and what ``html_action="return"`` gives back
    (``.data``, as IPython's HTML object has): write it to a file and it opens offline."""

    def __init__(self, data: str) -> None:
        self.data = data

    def _repr_html_(self) -> str:
        return self.data

    def save(self, path) -> None:
        from pathlib import Path

        Path(path).write_text(f"<!doctype html><html><head><meta charset='utf-8'></head><body>{self.data}</body></html>",
                              encoding="utf-8")


def display_or_return(page: str, html_action: str):
    if html_action == "return":
        return ViewerHTML(page)
    if html_action != "view":
        raise ValueError("html_action must be 'view' or 'return'")
    from IPython.display import HTML, display

    display(HTML(page))
    return None
