// PNG and SVG downloads of the views drawn without a charting library (the head view, the neuron view): each view
// writes itself as an SVG string; PNG is that SVG drawn on a canvas at twice its size.
(function () {
  'use strict';
  if (window.BvlExport) { return; }
  function save(blob, name) {
    var a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = name;
    document.body.appendChild(a);
    a.click();
    setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  }
  function esc(text) {
    return String(text).replace(/[&<>"]/g, function (c) { return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]; });
  }
  window.BvlExport = {
    esc: esc,
    save: function (svg, name, format, width, height) {
      if (format === 'svg') { save(new Blob([svg], { type: 'image/svg+xml' }), name + '.svg'); return; }
      var img = new Image(), scale = 2;
      img.onload = function () {
        var c = document.createElement('canvas');
        c.width = width * scale; c.height = height * scale;
        var ctx = c.getContext('2d');
        ctx.scale(scale, scale);
        ctx.drawImage(img, 0, 0);
        c.toBlob(function (blob) { save(blob, name + '.png'); });
      };
      img.src = 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(svg);
    }
  };
})();
