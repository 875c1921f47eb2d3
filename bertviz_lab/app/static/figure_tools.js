// Adds a "Download plot as SVG" button to every Plotly figure (PNG is the camera button) and
// makes a click on a model-overview thumbnail open that head. Plotly is loaded lazily by
// Gradio, so we patch it the moment it is assigned to window.Plotly.
(function () {
  function attachPicker(gd) {
    // the overview's thumbnails and the head-similarity matrix's cells carry (layer, head) to open
    if (!gd || gd.__bvlPicker || !gd.closest || !gd.closest('#overview-plot, #qk-similarity')) return;
    gd.__bvlPicker = true;
    gd.on('plotly_click', function (ev) {
      var pt = ev && ev.points && ev.points[0];
      if (!pt || !pt.customdata) return;
      var box = document.querySelector('#overview-pick textarea, #overview-pick input');
      if (!box) return;
      box.value = pt.customdata.join(',') + ',' + Date.now();
      box.dispatchEvent(new Event('input', { bubbles: true }));
    });
  }
  function patch(P) {
    if (!P || P.__bvlPatched || typeof P.react !== 'function') return;
    P.__bvlPatched = true;
    var react = P.react;
    // One button object for all figures: the same reference each time keeps Plotly from
    // seeing a "changed" config and re-creating the plot on every update.
    var svgButton = {
      name: 'Download plot as SVG',
      icon: P.Icons.disk,
      click: function (g) {
        var name = ((g._context || {}).toImageButtonOptions || {}).filename || 'figure';
        P.downloadImage(g, { format: 'svg', filename: name });
      }
    };
    P.react = function (gd, data, layout, config) {
      config = Object.assign({}, config || {});
      var extra = config.modeBarButtonsToAdd || [];
      if (extra.indexOf(svgButton) < 0) { config.modeBarButtonsToAdd = extra.concat([svgButton]); }
      // How many renders of this figure are still running: tests (and scripts) wait for "0"
      // instead of sleeping before they use the figure's toolbar.
      var el = typeof gd === 'string' ? document.getElementById(gd) : gd;
      if (el && el.dataset) { el.dataset.bvlPending = String((+el.dataset.bvlPending || 0) + 1); }
      var out = react.call(P, gd, data, layout, config);
      function settled() { if (el && el.dataset) { el.dataset.bvlPending = String(Math.max(0, (+el.dataset.bvlPending || 1) - 1)); } }
      Promise.resolve(out).then(function (g) { attachPicker(g || gd); settled(); }, settled);
      return out;
    };
  }
  var current = window.Plotly;
  if (current) { patch(current); }
  try {
    Object.defineProperty(window, 'Plotly', {
      configurable: true,
      get: function () { return current; },
      set: function (v) { current = v; patch(v); }
    });
  } catch (e) {
    var t = setInterval(function () { if (window.Plotly) { patch(window.Plotly); clearInterval(t); } }, 30);
  }
})();
