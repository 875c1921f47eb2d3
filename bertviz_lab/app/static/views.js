// Client-side views: after a Run the server sends one payload (figures/payload.py: every head's
// displayed weights, quantised, plus a figure template); the single-head heatmap and the head
// view then follow the Layer and Head sliders and the sentence-pair filter with no server round
// trip. Only a visible view draws; a hidden one draws when its tab is opened.
(function () {
  'use strict';
  var S = { p: null, codes: null, layer: 0, head: 0, filter: 'all', heads: null, focus: null, pinned: null,
            start: 0, dirty: { single: true, headview: true } };
  var SYNCED = ['#aggregates-plot', '#probe-plot'];  // server-drawn views that follow the sliders

  var resized = new ResizeObserver(function () { later(); });
  function watch(el) {  // a view that becomes visible (its tab opened, even by the server) draws then
    if (el && !el.__bvlWatched) { el.__bvlWatched = true; resized.observe(el); }
    return el;
  }
  function visible(el) { return !!(el && el.offsetParent !== null && el.getClientRects().length); }
  function plotly() { return window.Plotly; }

  function codesOf(p, buffer) { return p.bits === 16 ? new Uint16Array(buffer) : new Uint8Array(buffer); }

  // Rows and columns the pair filter keeps, in label order, and its note.
  function selection(p, filter) {
    var all = p.labels.map(function (_, i) { return i; });
    if (!filter || filter === 'all') { return { rows: all, cols: all, note: '' }; }
    var parts = filter.split('->'), seg = function (s) { return s === 'A' ? 0 : 1; };
    var rows = all.filter(function (i) { return p.segments[i] === seg(parts[0]); });
    var cols = all.filter(function (i) { return p.segments[i] === seg(parts[1]); });
    if (!rows.length || !cols.length) {
      return { rows: all, cols: all, note: filter + ': the input has no sentence B, showing all' };
    }
    return { rows: rows, cols: cols, note: filter + ': rows are sentence ' + parts[0] + ' queries, columns sentence ' +
             parts[1] + ' keys (weights not renormalised)' };
  }

  function weight(l, h) {  // (query, key) -> weight of one head, straight from the codes
    var p = S.p, n = p.labels.length, k = p.scales[l][h] / (p.bits === 16 ? 65535 : 255);
    var base = (l * p.heads + h) * n * n, codes = S.codes;
    return function (q, key) { return codes[base + q * n + key] * k; };
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

  function ticks(axis, labels, shorts) {
    var long = shorts.some(function (s, i) { return s !== labels[i]; });
    axis.tickmode = long ? 'array' : 'auto';
    if (long) { axis.tickvals = labels; axis.ticktext = shorts; } else { delete axis.tickvals; delete axis.ticktext; }
  }

  function drawHeatmap() {
    var root = watch(document.querySelector('#single-plot .bvl-heatmap')), P = plotly();
    if (S.p && !P) { setTimeout(later, 30); }  // plotly.js is still loading
    if (!S.p || !root || !visible(root) || !P) { S.dirty.single = true; return false; }
    var p = S.p, sel = selection(p, S.filter), m = matrix(S.layer, S.head, sel.rows, sel.cols);
    var fig = JSON.parse(JSON.stringify(p.heatmap)), trace = fig.data[0], layout = fig.layout;
    var pick = function (idx, arr) { return idx.map(function (i) { return arr[i]; }); };
    trace.z = m.z;
    trace.x = pick(sel.cols, p.labels);
    trace.y = pick(sel.rows, p.labels);
    trace.zmin = 0;
    trace.zmax = Math.max(m.max, 1e-6);
    layout.title.text = 'Layer ' + (S.layer + 1) + ', head ' + (S.head + 1) + p.source_label;
    var h = p.height, rows = Math.max(sel.rows.length, sel.cols.length);
    layout.height = Math.min(h.max, Math.max(h.min, h.base + h.row * rows));
    ticks(layout.xaxis, trace.x, pick(sel.cols, p.short));
    ticks(layout.yaxis, trace.y, pick(sel.rows, p.short));
    fig.config.toImageButtonOptions.filename = 'attention-L' + (S.layer + 1) + '-H' + (S.head + 1);
    P.react(root, fig.data, layout, fig.config);
    var notes = p.notes.concat(sel.note ? [sel.note] : []);
    var caption = document.querySelector('#single-plot .bvl-caption');
    if (caption) { caption.textContent = notes.join(' · '); }
    root.setAttribute('data-drawn', layout.title.text);
    root.setAttribute('data-draws', String(Number(root.getAttribute('data-draws') || 0) + 1));  // for timing
    S.dirty.single = false;
    return true;
  }

  // ---- head view (BertViz-style) --------------------------------------------------------
  function headColour(h) { var c = S.p.head_colours; return c[h % c.length]; }

  function buildHeadView(root) {
    root.innerHTML = '';
    var bar = document.createElement('div');
    bar.className = 'bvl-hv-bar';
    root.appendChild(bar);
    var note = document.createElement('div');
    note.className = 'bvl-hv-note';
    root.appendChild(note);
    var body = document.createElement('div');
    body.className = 'bvl-hv-body';
    root.appendChild(body);
    return { bar: bar, note: note, body: body };
  }

  function headToggles(bar) {
    bar.innerHTML = '';
    var label = document.createElement('span');
    label.textContent = 'Layer ' + (S.layer + 1) + ' · heads: ';
    label.className = 'bvl-hv-layer';
    bar.appendChild(label);
    for (var h = 0; h < S.p.heads; h++) {
      var b = document.createElement('button');
      b.className = 'bvl-hv-head' + (S.heads.has(h) ? ' on' : '');
      b.textContent = String(h + 1);
      b.title = 'head ' + (h + 1) + ': click to toggle, double-click to show only this head';
      b.style.borderColor = headColour(h);
      b.style.background = S.heads.has(h) ? headColour(h) : 'white';
      b.setAttribute('data-head', String(h));
      bar.appendChild(b);
    }
    [['all', 'all heads'], ['none', 'none']].forEach(function (pair) {
      var b = document.createElement('button');
      b.className = 'bvl-hv-set';
      b.textContent = pair[1];
      b.setAttribute('data-set', pair[0]);
      bar.appendChild(b);
    });
    var n = S.p.labels.length, max = S.p.head_view_max_tokens;
    if (n > max) {
      var range = document.createElement('label');
      range.className = 'bvl-hv-range';
      range.innerHTML = ' tokens from <input type="number" min="0" max="' + (n - max) + '" step="16" value="' +
        S.start + '"> (of ' + n + ')';
      bar.appendChild(range);
    }
  }

  function drawHeadView() {
    var root = watch(document.querySelector('#headview-plot .bvl-headview'));
    if (!S.p || !root || !visible(root)) { S.dirty.headview = true; return false; }
    var p = S.p, n = p.labels.length, max = p.head_view_max_tokens;
    var parts = root.__bvl || (root.__bvl = buildHeadView(root));
    headToggles(parts.bar);
    var start = Math.max(0, Math.min(S.start, n - max)), stop = Math.min(n, start + max);
    var sel = selection(p, S.filter);
    var inWindow = function (i) { return i >= start && i < stop; };
    var notes = [];
    if (n > max) { notes.push('Showing tokens ' + start + '–' + (stop - 1) + ' of ' + n + ' (at most ' + max +
                              ' at once; lines to tokens outside this range are not drawn).'); }
    if (sel.note) { notes.push(sel.note); }
    notes.push('Hover a token to see only its lines; click it to keep them. Line opacity = attention weight.');
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
    [['left', g.rows, 'query'], ['right', g.cols, 'key']].forEach(function (spec) {
      spec[1].forEach(function (i) {
        var t = document.createElement('div');
        t.className = 'bvl-hv-token bvl-hv-' + spec[0];
        t.textContent = p.short[i].replace(/^\d+ /, '');
        t.title = spec[2] + ' ' + p.labels[i];
        t.setAttribute('data-index', String(i));
        t.setAttribute('data-side', spec[2]);
        t.style.cssText = 'position:absolute;top:' + (g.y(i) - rowH / 2) + 'px;height:' + rowH + 'px;line-height:' + rowH +
          'px;font-size:' + font + 'px;width:' + (side - 6) + 'px;' + (spec[0] === 'left' ? 'left:0;text-align:right' :
          'left:' + (side + g.mid + 6) + 'px;text-align:left');
        body.appendChild(t);
      });
    });
    g.canvas = canvas;
    g.ratio = ratio;
    g.height = height;
    parts.geometry = g;
    drawLines(root);
    root.setAttribute('data-layer', String(S.layer + 1));
    S.dirty.headview = false;
    return true;
  }

  // Lines only (hovering a token changes nothing else): one per (head, query, key) above 0.01.
  function drawLines(root) {
    var g = root.__bvl && root.__bvl.geometry;
    if (!g) { return; }
    var ctx = g.canvas.getContext('2d'), focus = S.pinned || S.focus;
    ctx.setTransform(g.ratio, 0, 0, g.ratio, 0, 0);
    ctx.clearRect(0, 0, g.mid, g.height);
    ctx.lineWidth = 2;
    var lines = 0, queries = g.rows, keys = g.cols;
    if (focus && focus.side === 'query') { queries = g.rows.filter(function (i) { return i === focus.index; }); }
    if (focus && focus.side === 'key') { keys = g.cols.filter(function (i) { return i === focus.index; }); }
    S.heads.forEach(function (h) {
      var w = weight(S.layer, h);
      ctx.strokeStyle = headColour(h);
      for (var a = 0; a < queries.length; a++) {
        for (var b = 0; b < keys.length; b++) {
          var v = w(queries[a], keys[b]);
          if (v < 0.01) { continue; }
          ctx.globalAlpha = Math.min(1, v);
          ctx.beginPath();
          ctx.moveTo(0, g.y(queries[a]));
          ctx.lineTo(g.mid, g.y(keys[b]));
          ctx.stroke();
          lines++;
        }
      }
    });
    ctx.globalAlpha = 1;
    root.querySelectorAll('.bvl-hv-token').forEach(function (t) {
      var on = focus && focus.side === t.getAttribute('data-side') && focus.index === Number(t.getAttribute('data-index'));
      t.classList.toggle('focus', !!on);
    });
    root.setAttribute('data-heads', Array.from(S.heads).sort(function (a, b) { return a - b; })
      .map(function (h) { return h + 1; }).join(','));
    root.setAttribute('data-lines', String(lines));
    root.setAttribute('data-focus', focus ? focus.side + ':' + focus.index : '');
    root.setAttribute('data-draws', String(Number(root.getAttribute('data-draws') || 0) + 1));
  }

  function onHeadViewEvent(ev) {
    var root = ev.target.closest && ev.target.closest('.bvl-headview');
    if (!root || !S.p) { return; }
    var t = ev.target;
    if (ev.type === 'click' && t.classList.contains('bvl-hv-head')) {
      var h = Number(t.getAttribute('data-head'));
      if (S.heads.has(h)) { S.heads.delete(h); } else { S.heads.add(h); }
    } else if (ev.type === 'dblclick' && t.classList.contains('bvl-hv-head')) {
      S.heads = new Set([Number(t.getAttribute('data-head'))]);
    } else if (ev.type === 'click' && t.classList.contains('bvl-hv-set')) {
      S.heads = new Set(t.getAttribute('data-set') === 'all' ? Array.from({ length: S.p.heads }, function (_, i) { return i; }) : []);
    } else if (t.classList.contains('bvl-hv-token')) {
      var spot = { side: t.getAttribute('data-side'), index: Number(t.getAttribute('data-index')) };
      if (ev.type === 'click') {
        S.pinned = S.pinned && S.pinned.side === spot.side && S.pinned.index === spot.index ? null : spot;
      } else if (ev.type === 'mouseover') {
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

  function drawAll() { drawHeatmap(); drawHeadView(); }

  function syncServerViews() {
    var shown = SYNCED.some(function (sel) {  // open, and showing a figure (a probe was run)
      var el = document.querySelector(sel);
      return visible(el) && !!el.querySelector('.js-plotly-plot');
    });
    var button = document.querySelector('#sync-views');
    if (shown && button) { button.click(); }
  }

  function show(p, codes) {
    S.p = p;
    S.codes = codes;
    S.layer = p.layer;
    S.head = p.head;
    S.filter = p.pair_filter || 'all';
    S.heads = new Set([p.head]);
    S.focus = S.pinned = null;
    S.start = 0;
    S.dirty = { single: true, headview: true };
    drawAll();
    var views = document.querySelector('#views');
    if (p.scroll && views && views.getBoundingClientRect().top < 0) {  // e.g. an example clicked further down
      views.scrollIntoView({ block: 'start' });
    }
  }

  var api = {
    load: function (p) {
      if (!p || !p.codes_url) {
        S.p = null;
        S.loading = null;
        document.querySelectorAll('.bvl-heatmap').forEach(function (el) { if (plotly()) { plotly().purge(el); } });
        document.querySelectorAll('.bvl-headview').forEach(function (el) { el.innerHTML = ''; el.__bvl = null; });
        return [];
      }
      S.loading = p.id;
      fetch(p.codes_url).then(function (r) {  // the weights' codes travel as raw bytes, not inside JSON
        if (!r.ok) { throw new Error('HTTP ' + r.status); }
        return r.arrayBuffer();
      }).then(function (buffer) {
        if (S.loading !== p.id) { return; }  // a newer analysis arrived meanwhile
        if (buffer.byteLength !== p.codes_bytes) { throw new Error(buffer.byteLength + ' bytes'); }
        show(p, codesOf(p, buffer));
      }).catch(function (error) {
        var caption = document.querySelector('#single-plot .bvl-caption');
        if (caption) { caption.textContent = '⚠️ could not load this analysis (' + error.message + '): press Run again'; }
      });
      return [];
    },
    select: function (layer, head) {
      if (!S.p) { return []; }
      var l = Math.max(0, Math.min(S.p.layers - 1, Math.round(layer))), h = Math.max(0, Math.min(S.p.heads - 1, Math.round(head)));
      if (h !== S.head) { S.heads = new Set([h]); }
      S.layer = l;
      S.head = h;
      drawAll();
      syncServerViews();
      return [];
    },
    filter: function (value) {
      S.filter = value || 'all';
      S.pinned = S.focus = null;
      drawAll();
      syncServerViews();
      return [];
    },
    state: S,
    redraw: function () {
      var heatmap = document.querySelector('#single-plot .bvl-heatmap');
      var headview = document.querySelector('#headview-plot .bvl-headview');
      if (S.dirty.single || (heatmap && !heatmap.hasAttribute('data-drawn'))) { drawHeatmap(); }
      if (S.dirty.headview || (headview && !headview.__bvl)) { drawHeadView(); }
    }
  };
  window.bvl = api;
  ['click', 'dblclick', 'mouseover', 'mouseout', 'change'].forEach(function (type) {
    document.addEventListener(type, onHeadViewEvent, true);
  });
  // A tab's content is mounted when the tab is first opened, and Plotly needs a visible box: draw
  // whatever became visible (tab switches, first mount, Plotly arriving late).
  var pending = false;
  function later() {
    if (pending) { return; }
    pending = true;
    requestAnimationFrame(function () { pending = false; api.redraw(); });
  }
  document.addEventListener('click', function (ev) { if (ev.target.closest && ev.target.closest('[role=tab]')) { later(); } });
  new MutationObserver(function (records) {
    for (var i = 0; i < records.length; i++) {
      var added = records[i].addedNodes;
      for (var j = 0; j < added.length; j++) {
        var node = added[j];
        if (node.nodeType === 1 && (node.matches('.bvl-heatmap, .bvl-headview') || node.querySelector('.bvl-heatmap, .bvl-headview'))) {
          later();
          return;
        }
      }
    }
  }).observe(document.documentElement, { childList: true, subtree: true });
  window.addEventListener('resize', later);
})();
