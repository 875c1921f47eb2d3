/* The neuron view (its page: figures/neuron.py): q, k, q x k, q . k and softmax for one head and
   one query token; layer, head and query switch here, with no request. */
(function () {
  function halves(b64) {  // little-endian IEEE float16 -> Float32Array
    var bytes = atob(b64), n = bytes.length >> 1, out = new Float32Array(n);
    for (var i = 0; i < n; i++) {
      var h = bytes.charCodeAt(2 * i) | (bytes.charCodeAt(2 * i + 1) << 8);
      var s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
      out[i] = e === 0 ? s * f * Math.pow(2, -24) : e === 31 ? (f ? NaN : s * Infinity)
        : s * (1 + f / 1024) * Math.pow(2, e - 15);
    }
    return out;
  }
  function colour(v, scale) {  // orange for positive, blue for negative, white at 0
    var a = Math.min(1, Math.abs(v) / (scale || 1));
    var c = v >= 0 ? [232, 113, 10] : [31, 119, 180];
    return 'rgb(' + c.map(function (x) { return Math.round(255 - a * (255 - x)); }).join(',') + ')';
  }
  var CELL = 8, ROW = 16;

  window.BvlNeuron = function (root, data) {
    var L = data.layers, H = data.heads, n = data.n, d = data.d, all = halves(data.vectors);
    // what the model adds to q·k·scale before the softmax (MPNet's relative bias, DeBERTa's position terms)
    var bias = data.bias ? halves(data.bias) : null;
    function scaleOf(l) { return data.scales ? data.scales[l] : 1 / Math.sqrt(d); }
    var state = {layer: data.layer, head: data.head, query: data.query};
    if (data.theme === 'dark') { root.classList.add('dark'); }
    function vec(which, l, h, t) { var o = (((which * L + l) * H + h) * n + t) * d; return all.subarray(o, o + d); }
    var layerSel = root.querySelector('select.layer'), headSel = root.querySelector('select.head-select');
    for (var l = 0; l < L; l++) { layerSel.add(new Option(String(l + 1), String(l))); }
    for (var h = 0; h < H; h++) { headSel.add(new Option(String(h + 1), String(h))); }
    var table = root.querySelector('table.rows'), queryRow = root.querySelector('.query-row');
    queryRow.innerHTML = '<table><tr><td class="tok query-label"></td><td><canvas class="q"></canvas></td>' +
      '<td class="head">query q (head_dim ' + d + ')</td></tr></table>';
    var header = '<tr class="head"><td></td><td>key k</td><td>q × k (elementwise)</td><td class="num">q · k</td>' +
      '<td class="num">' + (bias ? 'softmax(q·k·s + position bias)' : 'softmax(q·k/√d)') + '</td></tr>';
    var rows = [header];
    for (var t = 0; t < n; t++) {
      rows.push('<tr data-token="' + t + '"><td class="tok"></td>' +
        (t === 0 ? '<td rowspan="' + n + '"><canvas class="k"></canvas></td><td rowspan="' + n +
          '"><canvas class="qk"></canvas></td>' : '') +
        '<td class="num dot"></td><td class="num soft"><span class="bar"></span> <span class="p"></span></td></tr>');
    }
    table.innerHTML = rows.join('');
    var tokCells = table.querySelectorAll('tr[data-token] td.tok');
    tokCells.forEach(function (cell, i) {
      cell.textContent = data.tokens[i];
      cell.title = 'position ' + i + (data.segments[i] ? ', sentence B' : '');
      cell.addEventListener('click', function () { state.query = i; render(); });
    });
    var qCanvas = root.querySelector('canvas.q'), kCanvas = root.querySelector('canvas.k');
    var qkCanvas = root.querySelector('canvas.qk');
    [qCanvas, kCanvas, qkCanvas].forEach(function (c, i) {
      c.width = d * CELL; c.height = i === 0 ? ROW : n * ROW;
      c.style.height = c.height + 'px';
    });
    // The vectors' canvases take the width the page leaves them (down to one pixel per dimension), so every
    // column and its header stay in view in a narrow frame (the app's at 1024 px) instead of running off it.
    function fit() {
      var canvases = [qCanvas, kCanvas, qkCanvas];
      canvases.forEach(function (c) { c.style.width = '0px'; });
      table.style.width = '1px';  // the other columns at their narrowest (headers wrapped between words)
      var rest = table.getBoundingClientRect().width, room = root.clientWidth - rest - 12;
      table.style.width = '';
      var width = Math.max(d, Math.min(d * CELL, Math.floor(room / 2)));
      canvases.forEach(function (c) { c.style.width = width + 'px'; });
      root.dataset.cell = (width / d).toFixed(2);
    }
    fit();
    window.addEventListener('resize', fit);
    // In the app the view lives in a frame of its own: tell the page how tall it is drawn, so the frame
    // shows every row (views.js sizes the frame; a notebook output has no parent to tell).
    function tellHeight() {
      if (window.parent === window) { return; }
      window.parent.postMessage({ bvlNeuronHeight: document.documentElement.scrollHeight }, '*');
    }
    tellHeight();
    window.addEventListener('resize', tellHeight);
    var dots = table.querySelectorAll('td.dot'), bars = table.querySelectorAll('td.soft .bar');
    var probs = table.querySelectorAll('td.soft .p');

    function render() {
      var start = performance.now();
      var l = state.layer, h = state.head, q = vec(0, l, h, state.query);
      layerSel.value = String(l); headSel.value = String(h);
      tokCells.forEach(function (cell, i) { cell.classList.toggle('query', i === state.query); });
      root.querySelector('.query-label').textContent = data.tokens[state.query];
      var keys = [], products = [], scores = new Float64Array(n), kMax = 0, pMax = 0, qMax = 0;
      for (var i = 0; i < d; i++) { qMax = Math.max(qMax, Math.abs(q[i])); }
      for (var t = 0; t < n; t++) {
        var k = vec(1, l, h, t), prod = new Float32Array(d), dot = 0;
        for (var j = 0; j < d; j++) {
          prod[j] = q[j] * k[j]; dot += prod[j];
          kMax = Math.max(kMax, Math.abs(k[j])); pMax = Math.max(pMax, Math.abs(prod[j]));
        }
        keys.push(k); products.push(prod); scores[t] = dot;
      }
      state.last = {q: q, keys: keys, products: products, scores: scores, qMax: qMax, kMax: kMax, pMax: pMax};
      var top = -Infinity, scale = scaleOf(l), total = 0, soft = new Float64Array(n), logits = new Float64Array(n);
      var row = ((l * H + h) * n + state.query) * n;
      for (t = 0; t < n; t++) { logits[t] = scores[t] * scale + (bias ? bias[row + t] : 0); top = Math.max(top, logits[t]); }
      for (t = 0; t < n; t++) { soft[t] = Math.exp(logits[t] - top); total += soft[t]; }
      var qc = qCanvas.getContext('2d'), kc = kCanvas.getContext('2d'), pc = qkCanvas.getContext('2d');
      for (j = 0; j < d; j++) { qc.fillStyle = colour(q[j], qMax); qc.fillRect(j * CELL, 1, CELL - 1, ROW - 2); }
      for (t = 0; t < n; t++) {
        for (j = 0; j < d; j++) {
          kc.fillStyle = colour(keys[t][j], kMax); kc.fillRect(j * CELL, t * ROW + 1, CELL - 1, ROW - 2);
          pc.fillStyle = colour(products[t][j], pMax); pc.fillRect(j * CELL, t * ROW + 1, CELL - 1, ROW - 2);
        }
        var p = soft[t] / total;
        dots[t].textContent = scores[t].toFixed(2);
        probs[t].textContent = p.toFixed(3);
        bars[t].style.width = Math.round(60 * p) + 'px';
      }
      state.last.soft = Array.prototype.map.call(soft, function (v) { return v / total; });
      root.dataset.layer = String(l + 1); root.dataset.head = String(h + 1); root.dataset.query = String(state.query);
      root.dataset.renderMs = (performance.now() - start).toFixed(2);
      root.dataset.renders = String(Number(root.dataset.renders || 0) + 1);
    }
    // The view as drawn now, as SVG: the query row, then per key its token, k, q x k, q . k and softmax.
    function toSvg() {
      var E = window.BvlExport, x = state.last, tokW = 110, gridW = d * CELL, gap = 16;
      var kx = tokW, px = kx + gridW + gap, dx = px + gridW + gap, sx = dx + 70, width = sx + 130;
      var top = 2 * ROW + 8, height = top + n * ROW + 4, out = [];
      out.push('<svg xmlns="http://www.w3.org/2000/svg" width="' + width + '" height="' + height +
               '" font-family="DejaVu Sans, Arial, sans-serif" font-size="11"><rect width="100%" height="100%" fill="white"/>');
      out.push('<text x="0" y="' + (ROW - 4) + '" font-weight="bold">query: ' + E.esc(data.tokens[state.query]) +
               ' (layer ' + (state.layer + 1) + ', head ' + (state.head + 1) + ')</text>');
      for (var j = 0; j < d; j++) {
        out.push('<rect x="' + (kx + j * CELL) + '" y="' + (ROW + 1) + '" width="' + (CELL - 1) + '" height="' + (ROW - 2) +
                 '" fill="' + colour(x.q[j], x.qMax) + '"/>');
      }
      [['key k', kx], ['q × k', px], ['q · k', dx], ['softmax', sx]].forEach(function (h) {
        out.push('<text x="' + h[1] + '" y="' + (top - 4) + '" fill="#555">' + E.esc(h[0]) + '</text>');
      });
      for (var t = 0; t < n; t++) {
        var y = top + t * ROW;
        out.push('<text x="' + (tokW - 6) + '" y="' + (y + ROW - 4) + '" text-anchor="end"' +
                 (t === state.query ? ' font-weight="bold"' : '') + '>' + E.esc(data.tokens[t]) + '</text>');
        for (j = 0; j < d; j++) {
          out.push('<rect x="' + (kx + j * CELL) + '" y="' + (y + 1) + '" width="' + (CELL - 1) + '" height="' + (ROW - 2) +
                   '" fill="' + colour(x.keys[t][j], x.kMax) + '"/>');
          out.push('<rect x="' + (px + j * CELL) + '" y="' + (y + 1) + '" width="' + (CELL - 1) + '" height="' + (ROW - 2) +
                   '" fill="' + colour(x.products[t][j], x.pMax) + '"/>');
        }
        out.push('<text x="' + (dx + 60) + '" y="' + (y + ROW - 4) + '" text-anchor="end">' + x.scores[t].toFixed(2) + '</text>');
        out.push('<rect x="' + sx + '" y="' + (y + 3) + '" width="' + Math.round(60 * x.soft[t]) + '" height="' + (ROW - 6) +
                 '" fill="#2b6cb0"/><text x="' + (sx + 66) + '" y="' + (y + ROW - 4) + '">' + x.soft[t].toFixed(3) + '</text>');
      }
      out.push('</svg>');
      return {svg: out.join(''), width: width, height: height};
    }
    root.querySelectorAll('button.export').forEach(function (b) {
      b.addEventListener('click', function () {
        var drawn = toSvg(), format = b.getAttribute('data-format');
        window.BvlExport.save(drawn.svg, 'neuron-L' + (state.layer + 1) + '-H' + (state.head + 1) + '-q' + state.query,
                              format, drawn.width, drawn.height);
        root.dataset.exported = format;
      });
    });
    layerSel.addEventListener('change', function () { state.layer = Number(layerSel.value); render(); });
    headSel.addEventListener('change', function () { state.head = Number(headSel.value); render(); });
    root.tabIndex = 0;
    root.addEventListener('keydown', function (e) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        state.query = Math.max(0, Math.min(n - 1, state.query + (e.key === 'ArrowDown' ? 1 : -1)));
        e.preventDefault(); render();
      }
    });
    render();
    return {render: render, state: state, toSvg: toSvg, fit: fit};
  };
})();
