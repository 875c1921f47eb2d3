// The client-side views of one analysis: a single-head heatmap (Plotly) and a BertViz-style head
// view (canvas), drawn from a payload (figures/payload.py: labels, one scale per head, a figure
// template) and its quantised codes. Layer, head and sentence-pair filter re-draw with no server.
// One viewer per place that shows an analysis: the app page has one (views.js), each notebook
// output has its own (the notebook views). Attention may be rectangular (cross-attention):
// rows are `labels`, columns `key_labels` when given.
(function () {
  'use strict';
  if (window.BvlViewer) { return; }

  // Whether el is shown (not inside a closed tab). checkVisibility needs the page's style only; offsetParent
  // would lay the whole page out first, just after Gradio changed it (a forced layout on every Run).
  function visible(el) {
    if (!el) { return false; }
    if (el.checkVisibility) { return el.checkVisibility(); }
    return el.offsetParent !== null && el.getClientRects().length > 0;
  }
  function range(n) { var out = new Array(n); for (var i = 0; i < n; i++) { out[i] = i; } return out; }
  function pick(idx, arr) { return idx.map(function (i) { return arr[i]; }); }

  function keysOf(p) {
    return { labels: p.key_labels || p.labels, short: p.key_short || p.short, segments: p.key_segments || p.segments };
  }

  // Rows and columns the pair filter keeps, in label order, and its note.
  function selection(p, filter) {
    var keys = keysOf(p), rowsAll = range(p.labels.length), colsAll = range(keys.labels.length);
    if (!filter || filter === 'all') { return { rows: rowsAll, cols: colsAll, note: '' }; }
    var parts = filter.split('->'), seg = function (s) { return s === 'A' ? 0 : 1; };
    var rows = rowsAll.filter(function (i) { return p.segments[i] === seg(parts[0]); });
    var cols = colsAll.filter(function (i) { return keys.segments[i] === seg(parts[1]); });
    if (!rows.length || !cols.length) {
      return { rows: rowsAll, cols: colsAll, note: filter + ': the input has no sentence B, showing all' };
    }
    return { rows: rows, cols: cols, note: filter + ': rows are sentence ' + parts[0] + ' queries, columns sentence ' +
             parts[1] + ' keys (weights not renormalised)' };
  }

  function ticks(axis, labels, shorts) {
    var long = shorts.some(function (s, i) { return s !== labels[i]; });
    axis.tickmode = long ? 'array' : 'auto';
    if (long) { axis.tickvals = labels; axis.ticktext = shorts; } else { delete axis.tickvals; delete axis.ticktext; }
  }

  // Room for the tick labels, set before Plotly draws. With automargin Plotly measures every label after
  // drawing and, whenever a new sentence changes them, draws the whole figure a second time: 35 ms at 128
  // tokens and 70 ms at 512 in Chromium. One canvas measurement of the widest label gives the same room.
  var measurer = null;
  function widest(texts, font) {
    measurer = measurer || document.createElement('canvas').getContext('2d');
    measurer.font = font.size + 'px ' + font.family;
    var most = 0;
    for (var i = 0; i < texts.length; i++) { most = Math.max(most, measurer.measureText(texts[i]).width); }
    return most;
  }
  function labelMargins(layout, xTexts, yTexts) {
    var font = layout.font || {}, size = font.size || 12, family = font.family || 'sans-serif';
    var title = Math.round(size * 1.2) * 1.3;  // an axis title's line: Plotly's default title font is 1.2x the font
    var turn = Math.abs(layout.xaxis.tickangle || 0) * Math.PI / 180, gap = 8;
    var standoff = function (axis) { return (axis.title && axis.title.standoff) || 0; };
    var down = widest(xTexts, {size: size, family: family}) * Math.sin(turn) + size * Math.cos(turn);
    var across = widest(yTexts, {size: size, family: family});
    var margin = Object.assign({l: 80, b: 80}, layout.margin);
    margin.b = Math.max(margin.b, Math.ceil(down + standoff(layout.xaxis) + title + 2 * gap));
    margin.l = Math.max(margin.l, Math.ceil(across + standoff(layout.yaxis) + title + 2 * gap));
    layout.margin = margin;
    layout.xaxis.automargin = false;
    layout.yaxis.automargin = false;
  }

  // Layers and heads are named 1-based, except where a payload names them (BertViz's drop-ins: 0-based, as asked)
  function layerName(p, l) { return p.layer_names ? String(p.layer_names[l]) : String(l + 1); }
  function headName(p, h) { return p.head_names ? String(p.head_names[h]) : String(h + 1); }
  function bump(el) { el.setAttribute('data-draws', String(Number(el.getAttribute('data-draws') || 0) + 1)); }

  // scope: {heatmap(), caption(), headview()} return the elements to draw in (or null), and
  // later() asks for a redraw soon (e.g. plotly.js still loading).
  function BvlViewer(scope) {
    var S = { p: null, codes: null, first: null, layer: 0, head: 0, filter: 'all', heads: new Set(), focus: null, pinned: null,
              span: null, start: 0, scale: 'fixed', dirty: { single: true, headview: true } };

    // The colour scale: 'fixed' (0–1 for weights whose rows sum to 1, else one scale for every head) or
    // 'per-head' (each head to its own largest weight). top(l, h): the weight drawn darkest / most opaque.
    function top(l, h) { return S.scale === 'per-head' ? S.p.scales[l][h] : (S.p.fixed_max || 1); }
    function barTitle() {
      var titles = S.p.colorbar_titles || {};
      return titles[S.scale] || '';
    }

    function weight(l, h) {  // (query, key) -> weight of one head, straight from the codes
      var p = S.p, nk = keysOf(p).labels.length, nq = p.labels.length;
      var k = p.scales[l][h] / (p.levels || (p.bits === 16 ? 65535 : 255)), base = (l * p.heads + h) * nq * nk, codes = S.codes;
      if (!codes) { codes = S.first; base = 0; }  // only the open head's codes have arrived yet
      return function (q, key) { return codes[base + q * nk + key] * k; };
    }

    function has(l, h) {  // whether the page holds this head's codes: every head's, or the open one's first
      return !!S.codes || (!!S.first && l === (S.p.layer || 0) && h === (S.p.head || 0));
    }

    function matrix(l, h, rows, cols) {
      var w = weight(l, h), z = new Array(rows.length), max = 0;
      for (var r = 0; r < rows.length; r++) {
        var row = new Array(cols.length);
        for (var c = 0; c < cols.length; c++) {
          var v = w(rows[r], cols[c]);
          row[c] = v;
          if (v > max) { max = v; }
        }
        z[r] = row;
      }
      return { z: z, max: max };
    }

    // The map's figure for the open head: Plotly's data and layout (quickHeatmap draws the same before Plotly is in)
    function heatmapFigure() {
      var p = S.p, keys = keysOf(p), sel = selection(p, S.filter), m = matrix(S.layer, S.head, sel.rows, sel.cols);
      var fig = JSON.parse(JSON.stringify(p.heatmap)), trace = fig.data[0], layout = fig.layout;
      trace.z = m.z;
      trace.x = pick(sel.cols, keys.labels);
      trace.y = pick(sel.rows, p.labels);
      trace.zmin = 0;
      trace.zmax = S.scale === 'per-head' ? Math.max(m.max, 1e-6) : (p.fixed_max || 1);
      trace.colorbar = Object.assign({}, trace.colorbar, { title: Object.assign({}, (trace.colorbar || {}).title,
                                                                               { text: barTitle() }) });
      layout.title.text = (p.title_prefix || '') + 'Layer ' + layerName(p, S.layer) + ', head ' + headName(p, S.head) + p.source_label;
      var h = p.height, rows = Math.max(sel.rows.length, sel.cols.length);
      layout.height = Math.min(h.max, Math.max(h.min, h.base + h.row * rows));
      ticks(layout.xaxis, trace.x, pick(sel.cols, keys.short));
      ticks(layout.yaxis, trace.y, pick(sel.rows, p.short));
      labelMargins(layout, pick(sel.cols, keys.short), pick(sel.rows, p.short));
      fig.config.toImageButtonOptions.filename = 'attention-L' + layerName(p, S.layer) + '-H' + headName(p, S.head);
      return { fig: fig, sel: sel, keys: keys };
    }

    function drawHeatmap() {
      var root = scope.heatmap(), P = window.Plotly;
      if (S.p && root && !P) {  // plotly.js is still loading (the light drop-in has no heatmap): a canvas meanwhile
        scope.later(30);
        if (scope.quick && visible(root) && has(S.layer, S.head)) { quickHeatmap(root); }
      }
      if (!S.p || !root || !visible(root) || !P || !has(S.layer, S.head)) { S.dirty.single = true; return false; }
      var p = S.p, made = heatmapFigure(), fig = made.fig, sel = made.sel, layout = fig.layout;
      var quick = root.querySelector('.bvl-quick');
      if (quick) { quick.remove(); root.removeAttribute('data-quick'); }  // Plotly's map takes the quick one's place
      P.react(root, fig.data, layout, fig.config);
      var notes = p.notes.concat(sel.note ? [sel.note] : []), caption = scope.caption();
      if (caption) { writeCaption(caption, p.about || '', notes.join(' · ')); }
      root.setAttribute('data-drawn', layout.title.text);
      root.setAttribute('data-scale', S.scale);
      bump(root);  // for timing and tests
      S.dirty.single = false;
      return true;
    }

    // Before plotly.js (3.5 MB, about a second of the page's main thread) is in: the same map on a canvas, cells,
    // labels and title as Plotly draws them, so a first visit sees the heatmap as soon as its numbers arrive;
    // Plotly's interactive map replaces it when it loads (data-quick: the title drawn; data-draws stays Plotly's).
    var ramp = null;
    function colours(scale) {  // the colour scale as 256 RGB triples, read off a gradient
      if (ramp && ramp.scale === scale) { return ramp.rgb; }
      var c = document.createElement('canvas'), g = c.getContext('2d'), grad = g.createLinearGradient(0, 0, 256, 0);
      c.width = 256; c.height = 1;
      scale.forEach(function (stop) { grad.addColorStop(stop[0], stop[1]); });
      g.fillStyle = grad; g.fillRect(0, 0, 256, 1);
      ramp = { scale: scale, rgb: g.getImageData(0, 0, 256, 1).data };
      return ramp.rgb;
    }
    function quickHeatmap(root) {
      if (root.querySelector('.js-plotly-plot, .main-svg')) { return; }  // Plotly has drawn here before
      var key = [S.p.id, S.layer, S.head, S.filter, S.scale, !!S.codes, root.clientWidth].join('|');
      if (root.__bvlQuickKey === key) { return; }  // drawn already: later() asks again until Plotly is in
      root.__bvlQuickKey = key;
      var made = heatmapFigure(), fig = made.fig, trace = fig.data[0], layout = fig.layout, m = layout.margin;
      var width = Math.max(200, root.clientWidth || 600), height = layout.height, ratio = window.devicePixelRatio || 1;
      var canvas = root.querySelector('.bvl-quick') || document.createElement('canvas');
      canvas.className = 'bvl-quick';
      canvas.width = width * ratio; canvas.height = height * ratio;
      canvas.style.width = width + 'px'; canvas.style.height = height + 'px';
      var g = canvas.getContext('2d'), rgb = colours(trace.colorscale), rows = trace.z.length, cols = rows ? trace.z[0].length : 0;
      g.scale(ratio, ratio);
      g.fillStyle = 'white'; g.fillRect(0, 0, width, height);
      var x0 = m.l, y0 = m.t, w = Math.max(10, width - m.l - m.r - 60), h = Math.max(10, height - m.t - m.b);
      var cw = w / Math.max(cols, 1), ch = h / Math.max(rows, 1), top = trace.zmax || 1;
      for (var r = 0; r < rows; r++) {
        for (var c = 0; c < cols; c++) {
          var k = 4 * Math.max(0, Math.min(255, Math.round(255 * trace.z[r][c] / top)));
          g.fillStyle = 'rgb(' + rgb[k] + ',' + rgb[k + 1] + ',' + rgb[k + 2] + ')';
          g.fillRect(x0 + c * cw, y0 + r * ch, Math.ceil(cw), Math.ceil(ch));
        }
      }
      var font = layout.font || {}, size = font.size || 12;
      g.fillStyle = '#444'; g.font = size + 'px ' + (font.family || 'sans-serif');
      var xs = layout.xaxis.ticktext || trace.x, ys = layout.yaxis.ticktext || trace.y;
      g.textAlign = 'right'; g.textBaseline = 'middle';
      for (r = 0; r < rows; r++) { g.fillText(String(ys[r]), x0 - 6, y0 + (r + 0.5) * ch); }
      for (c = 0; c < cols; c++) {
        g.save(); g.translate(x0 + (c + 0.5) * cw, y0 + h + 6); g.rotate(-Math.PI / 4); g.fillText(String(xs[c]), 0, 0); g.restore();
      }
      g.textAlign = 'center'; g.font = Math.round(size * 1.4) + 'px ' + (font.family || 'sans-serif');
      g.fillText(layout.title.text, width / 2, Math.max(16, m.t / 2));
      if (!canvas.parentNode) { root.appendChild(canvas); }
      root.setAttribute('data-quick', layout.title.text);
      if (scope.needPlotly) { scope.needPlotly(); }
    }

    // The caption under the map: the line that says what a row is (and what an attention sink is), then the notes.
    function writeCaption(el, about, notes) {
      el.textContent = '';
      [['bvl-about', about], ['bvl-notes', notes]].forEach(function (part) {
        if (!part[1]) { return; }
        var line = document.createElement('div');
        line.className = part[0];
        line.textContent = part[1];
        el.appendChild(line);
      });
    }

    // The page's hidden box the neuron view reads its opening token from (absent in notebooks): the token
    // position of a head-view token clicked (a word's first piece at word level), '' when it is unpinned.
    function tellTokenClicked(spot) {
      var box = document.querySelector('#headview-token textarea, #headview-token input');
      if (!box || (spot && spot.side === 'key' && S.p.key_labels)) { return; }
      var index = spot ? (S.p.token_index ? S.p.token_index[spot.index] : spot.index) : '';
      box.value = String(index);
      box.dispatchEvent(new Event('input', { bubbles: true }));
    }

    // ---- head view (BertViz-style) ------------------------------------------------------
    function headColour(h) { var c = S.p.head_colours; return c[h % c.length]; }

    function build(root) {
      root.innerHTML = '';
      var parts = {};
      ['bar', 'note', 'body'].forEach(function (name) {
        parts[name] = document.createElement('div');
        parts[name].className = 'bvl-hv-' + name;
        root.appendChild(parts[name]);
      });
      return parts;
    }

    function headToggles(bar, n) {
      bar.innerHTML = '';
      var label = document.createElement('span');
      label.textContent = (S.p.title_prefix || '') + 'Layer ' + layerName(S.p, S.layer) + ' · heads: ';
      label.className = 'bvl-hv-layer';
      bar.appendChild(label);
      for (var h = 0; h < S.p.heads; h++) {
        var b = document.createElement('button');
        b.className = 'bvl-hv-head' + (S.heads.has(h) ? ' on' : '');
        b.textContent = headName(S.p, h);
        b.title = 'head ' + headName(S.p, h) + ': click to toggle, double-click to show only this head';
        b.style.borderColor = headColour(h);
        b.style.background = S.heads.has(h) ? headColour(h) : 'white';
        b.setAttribute('data-head', String(h));
        bar.appendChild(b);
      }
      [['all', 'all heads'], ['none', 'none'], ['svg', 'SVG'], ['png', 'PNG']].forEach(function (pair) {
        var b = document.createElement('button');
        b.className = 'bvl-hv-set';
        b.textContent = pair[1];
        b.setAttribute('data-set', pair[0]);
        bar.appendChild(b);
      });
      var max = S.p.head_view_max_tokens;
      if (n > max) {
        var box = document.createElement('label');
        box.className = 'bvl-hv-range';
        box.innerHTML = ' tokens from <input type="number" min="0" max="' + (n - max) + '" step="16" value="' +
          S.start + '"> (of ' + n + ')';
        bar.appendChild(box);
      }
    }

    function drawHeadView() {
      var root = scope.headview();
      if (!S.p || !root || !visible(root) || !S.codes) { S.dirty.headview = true; return false; }
      root.__bvlViewer = api;
      var p = S.p, keys = keysOf(p), n = Math.max(p.labels.length, keys.labels.length), max = p.head_view_max_tokens;
      var parts = root.__bvl || (root.__bvl = build(root));
      headToggles(parts.bar, n);
      var start = Math.max(0, Math.min(S.start, n - max)), stop = Math.min(n, start + max);
      var sel = selection(p, S.filter), inWindow = function (i) { return i >= start && i < stop; };
      var notes = [];
      if (n > max) { notes.push('Showing tokens ' + start + '–' + (stop - 1) + ' of ' + n + ' (at most ' + max +
                                ' at once; lines to tokens outside this range are not drawn).'); }
      if (sel.note) { notes.push(sel.note); }
      notes.push('Hover a token to see only its lines; click it to keep them; shift-click several to make a span ' +
                 '(from a span: averaged over its tokens; to a span: summed). ' + opacityNote());
      parts.note.textContent = notes.join(' ');
      var rowH = (stop - start) > 48 ? 14 : 20, font = rowH === 14 ? 11 : 13;
      var width = Math.max(320, Math.min(900, root.clientWidth || 600)), side = Math.floor(width * 0.3);
      var g = { rows: sel.rows.filter(inWindow), cols: sel.cols.filter(inWindow), mid: width - 2 * side,
                y: function (i) { return (i - start) * rowH + rowH / 2 + 4; } };
      var height = (stop - start) * rowH + 8, body = parts.body;
      body.innerHTML = '';
      body.style.height = height + 'px';
      body.style.width = width + 'px';
      var canvas = document.createElement('canvas'), ratio = window.devicePixelRatio || 1;
      canvas.width = g.mid * ratio;
      canvas.height = height * ratio;
      canvas.style.cssText = 'position:absolute;left:' + side + 'px;top:0;width:' + g.mid + 'px;height:' + height + 'px';
      body.appendChild(canvas);
      [['left', g.rows, 'query', p.short], ['right', g.cols, 'key', keys.short]].forEach(function (spec) {
        var labels = spec[2] === 'query' ? p.labels : keys.labels;
        spec[1].forEach(function (i) {
          var t = document.createElement('div');
          t.className = 'bvl-hv-token bvl-hv-' + spec[0];
          t.textContent = spec[3][i].replace(/^\d+ /, '');
          t.title = spec[2] + ' ' + labels[i];
          t.setAttribute('data-index', String(i));
          t.setAttribute('data-side', spec[2]);
          t.style.cssText = 'position:absolute;top:' + (g.y(i) - rowH / 2) + 'px;height:' + rowH + 'px;line-height:' +
            rowH + 'px;font-size:' + font + 'px;width:' + (side - 6) + 'px;' + (spec[0] === 'left' ?
            'left:0;text-align:right' : 'left:' + (side + g.mid + 6) + 'px;text-align:left');
          body.appendChild(t);
        });
      });
      g.canvas = canvas;
      g.ratio = ratio;
      g.side = side;
      g.font = font;
      g.height = height;
      parts.geometry = g;
      drawLines(root);
      root.setAttribute('data-layer', String(S.layer + 1));
      S.dirty.headview = false;
      return true;
    }

    // The lines to draw: one per (head, query, key) >= 0.01, as [head, y0, y1, weight]. A hovered or
    // clicked token keeps only its lines; a span (shift-click several tokens of one side) is one end:
    // attention from a span of queries is averaged over its rows, attention to a span of keys summed
    // over its columns (as word level merges word pieces).
    function opacityNote() {
      if (S.scale === 'per-head') { return "Line opacity = weight ÷ that head's largest weight (scaled per head)."; }
      return (S.p.fixed_max || 1) === 1 ? 'Line opacity = attention weight (0–1).' :
        'Line opacity = weight ÷ the largest weight of any head (one scale for every head).';
    }

    function visibleLines(g) {
      var out = [], focus = S.pinned || S.focus, queries = g.rows, keys = g.cols, span = S.span;
      if (focus && focus.side === 'query') { queries = g.rows.filter(function (i) { return i === focus.index; }); }
      if (focus && focus.side === 'key') { keys = g.cols.filter(function (i) { return i === focus.index; }); }
      var members = span ? Array.from(span.indices) : [];
      var centre = members.length ? members.reduce(function (a, i) { return a + g.y(i); }, 0) / members.length : 0;
      S.heads.forEach(function (h) {
        var raw = weight(S.layer, h), t = top(S.layer, h) || 1, a, b, v;
        var w = function (q, k) { return raw(q, k) / t; };  // 0–1 on the chosen scale
        if (span && span.side === 'query') {
          for (b = 0; b < keys.length; b++) {
            v = 0;
            for (a = 0; a < members.length; a++) { v += w(members[a], keys[b]); }
            v /= members.length;
            if (v >= 0.01) { out.push([h, centre, g.y(keys[b]), v]); }
          }
          return;
        }
        if (span && span.side === 'key') {
          for (a = 0; a < queries.length; a++) {
            v = 0;
            for (b = 0; b < members.length; b++) { v += w(queries[a], members[b]); }
            if (v >= 0.01) { out.push([h, g.y(queries[a]), centre, v]); }
          }
          return;
        }
        for (a = 0; a < queries.length; a++) {
          for (b = 0; b < keys.length; b++) {
            v = w(queries[a], keys[b]);
            if (v >= 0.01) { out.push([h, g.y(queries[a]), g.y(keys[b]), v]); }
          }
        }
      });
      return out;
    }

    function drawLines(root) {
      var g = root.__bvl && root.__bvl.geometry;
      if (!g) { return; }
      var ctx = g.canvas.getContext('2d'), focus = S.pinned || S.focus, lines = visibleLines(g);
      ctx.setTransform(g.ratio, 0, 0, g.ratio, 0, 0);
      ctx.clearRect(0, 0, g.mid, g.height);
      ctx.lineWidth = 2;
      lines.forEach(function (line) {
        ctx.strokeStyle = headColour(line[0]);
        ctx.globalAlpha = Math.min(1, line[3]);
        ctx.beginPath();
        ctx.moveTo(0, line[1]);
        ctx.lineTo(g.mid, line[2]);
        ctx.stroke();
      });
      ctx.globalAlpha = 1;
      root.querySelectorAll('.bvl-hv-token').forEach(function (t) {
        var side = t.getAttribute('data-side'), index = Number(t.getAttribute('data-index'));
        var on = focus && focus.side === side && focus.index === index;
        t.classList.toggle('focus', !!on);
        t.classList.toggle('span', !!(S.span && S.span.side === side && S.span.indices.has(index)));
      });
      root.setAttribute('data-heads', Array.from(S.heads).sort(function (a, b) { return a - b; })
        .map(function (h) { return h + 1; }).join(','));
      root.setAttribute('data-lines', String(lines.length));
      root.setAttribute('data-focus', focus ? focus.side + ':' + focus.index : '');
      root.setAttribute('data-span', S.span ? S.span.side + ':' + Array.from(S.span.indices).sort(function (a, b) {
        return a - b; }).join(',') : '');
      bump(root);
    }

    // The head view as it is drawn now, as an SVG document (tokens as text, lines with their opacity).
    function headViewSvg(root) {
      var g = root.__bvl.geometry, E = window.BvlExport, dark = !!root.closest('.bvl-dark');
      var side = g.side, width = 2 * side + g.mid, ink = dark ? '#eee' : '#111';
      var out = ['<svg xmlns="http://www.w3.org/2000/svg" width="' + width + '" height="' + g.height +
                 '" font-family="DejaVu Sans, Arial, sans-serif" font-size="' + g.font + '">',
                 '<rect width="100%" height="100%" fill="' + (dark ? '#111' : 'white') + '"/>'];
      root.querySelectorAll('.bvl-hv-token').forEach(function (t) {
        var left = t.classList.contains('bvl-hv-left'), y = g.y(Number(t.getAttribute('data-index')));
        out.push('<text x="' + (left ? side - 6 : side + g.mid + 6) + '" y="' + y + '" dominant-baseline="middle"' +
                 ' text-anchor="' + (left ? 'end' : 'start') + '" fill="' + ink + '">' + E.esc(t.textContent) + '</text>');
      });
      visibleLines(g).forEach(function (l) {
        out.push('<line x1="' + side + '" y1="' + l[1] + '" x2="' + (side + g.mid) + '" y2="' + l[2] + '" stroke="' +
                 headColour(l[0]) + '" stroke-width="2" stroke-opacity="' + Math.min(1, l[3]).toFixed(4) + '"/>');
      });
      out.push('</svg>');
      return { svg: out.join(''), width: width, height: g.height };
    }

    function onHeadViewEvent(ev, root) {
      // Between a Run's reply and every head's codes the page holds the open head's alone, and the head view
      // on screen is the last analysis's (drawHeadView waits for every head): its events wait too.
      if (!S.codes) { return; }
      var t = ev.target;
      if (ev.type === 'click' && t.classList.contains('bvl-hv-head')) {
        var h = Number(t.getAttribute('data-head'));
        if (S.heads.has(h)) { S.heads.delete(h); } else { S.heads.add(h); }
      } else if (ev.type === 'dblclick' && t.classList.contains('bvl-hv-head')) {
        S.heads = new Set([Number(t.getAttribute('data-head'))]);
      } else if (ev.type === 'click' && t.classList.contains('bvl-hv-set')) {
        var set = t.getAttribute('data-set');
        if (set === 'svg' || set === 'png') {
          var drawn = headViewSvg(root);
          window.BvlExport.save(drawn.svg, 'head-view-L' + layerName(S.p, S.layer), set, drawn.width, drawn.height);
          root.setAttribute('data-exported', set);
          return;
        }
        S.heads = new Set(set === 'all' ? range(S.p.heads) : []);
      } else if (t.classList.contains('bvl-hv-token')) {
        var spot = { side: t.getAttribute('data-side'), index: Number(t.getAttribute('data-index')) };
        if (ev.type === 'click' && ev.shiftKey) {  // a span: shift-click the tokens of a phrase
          if (!S.span || S.span.side !== spot.side) { S.span = { side: spot.side, indices: new Set() }; }
          if (S.span.indices.has(spot.index)) { S.span.indices.delete(spot.index); } else { S.span.indices.add(spot.index); }
          if (!S.span.indices.size) { S.span = null; }
          S.pinned = S.focus = null;
        } else if (ev.type === 'click') {
          S.span = null;
          S.pinned = S.pinned && S.pinned.side === spot.side && S.pinned.index === spot.index ? null : spot;
          tellTokenClicked(S.pinned);
        } else if (ev.type === 'mouseover') {
          if (S.span) { return; }  // hovering leaves a span as it is
          S.focus = spot;
        } else if (ev.type === 'mouseout') {
          S.focus = null;
        } else { return; }
        drawLines(root);
        return;
      } else if (ev.type === 'change' && t.closest('.bvl-hv-range')) {
        S.start = Math.max(0, Number(t.value) || 0);
      } else { return; }
      drawHeadView();
    }

    var api = {
      state: S,
      show: function (p, codes) {
        S.p = p;
        S.codes = codes;
        S.first = null;
        S.layer = p.layer || 0;
        S.head = p.head || 0;
        S.filter = p.pair_filter || 'all';
        S.scale = p.scale === 'per-head' ? 'per-head' : 'fixed';
        S.heads = new Set(p.heads_shown || [S.head]);  // BertViz's heads=[...] (the app: the Head slider's)
        S.focus = S.pinned = S.span = null;
        S.start = 0;
        S.dirty = { single: true, headview: true };
        api.draw();
      },
      showFirst: function (p, headCodes) {  // the open head's codes alone: draw it; the rest waits for complete()
        api.show(p, null);
        S.first = headCodes;
        api.draw();
      },
      complete: function (p, codes) {  // every head's codes: the page keeps what was chosen meanwhile
        if (S.p !== p) { api.show(p, codes); return; }
        S.codes = codes;
        S.first = null;
        api.redraw();
      },
      clear: function () {
        S.p = null;
        var heatmap = scope.heatmap(), headview = scope.headview();
        if (heatmap && window.Plotly) { window.Plotly.purge(heatmap); }
        if (headview) { headview.innerHTML = ''; headview.__bvl = null; }
      },
      select: function (layer, head) {
        if (!S.p) { return; }
        var l = Math.max(0, Math.min(S.p.layers - 1, Math.round(layer)));
        var h = Math.max(0, Math.min(S.p.heads - 1, Math.round(head)));
        if (h !== S.head) { S.heads = new Set([h]); }
        S.layer = l;
        S.head = h;
        api.draw();
      },
      scale: function (mode) {  // the page-wide colour scale: 'fixed' or 'per-head' (also their labels)
        S.scale = mode === 'per-head' || mode === 'per head' ? 'per-head' : 'fixed';
        S.dirty = { single: true, headview: true };
        if (S.p) { api.draw(); }
      },
      filter: function (value) {
        S.filter = value || 'all';
        S.pinned = S.focus = S.span = null;
        api.draw();
      },
      draw: function () { drawHeatmap(); drawHeadView(); },
      redraw: function () {  // draw what became visible or was re-mounted since
        var heatmap = scope.heatmap(), headview = scope.headview();
        if (S.dirty.single || (heatmap && !heatmap.hasAttribute('data-drawn'))) { drawHeatmap(); }
        if (S.dirty.headview || (headview && !headview.__bvl)) { drawHeadView(); }
      },
      onHeadViewEvent: onHeadViewEvent,
      matrix: function (l, h) {  // one head's weights as the page holds them (for tests and scripts)
        return matrix(l, h, range(S.p.labels.length), range(keysOf(S.p).labels.length)).z;
      }
    };
    return api;
  }

  ['click', 'dblclick', 'mouseover', 'mouseout', 'change'].forEach(function (type) {
    document.addEventListener(type, function (ev) {
      var root = ev.target.closest && ev.target.closest('.bvl-headview');
      if (root && root.__bvlViewer && root.__bvlViewer.state.p) { root.__bvlViewer.onHeadViewEvent(ev, root); }
    }, true);
  });

  // Decode base64 codes (notebook outputs carry them inline) into the typed array the viewer reads.
  BvlViewer.visible = visible;
  BvlViewer.codesOf = function (p, buffer) { return p.bits === 16 ? new Uint16Array(buffer) : new Uint8Array(buffer); };
  BvlViewer.fromBase64 = function (p, text) {
    var bin = atob(text), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    return BvlViewer.codesOf(p, bytes.buffer);
  };
  // The drop-in's codes come deflated (figures/payload.py light_codes): inflate them in the page.
  BvlViewer.decode = function (p, text) {
    var bin = atob(text), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    if (p.compressed !== 'deflate') { return Promise.resolve(BvlViewer.codesOf(p, bytes.buffer)); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate'));
    return new Response(stream).arrayBuffer().then(function (buffer) { return BvlViewer.codesOf(p, buffer); });
  };
  window.BvlViewer = BvlViewer;
})();
