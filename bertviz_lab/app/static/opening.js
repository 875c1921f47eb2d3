// The opening example (app/opening.py), asked for as soon as the page's scripts run, while Gradio's own load: its open
// head is drawn (views.js showOpening) the moment the heatmap's box is on the page. A shared link (?text=, ?layer=,
// ?head=) opens on something else and asks for nothing.
(function () {
  'use strict';
  if (/[?&](text|pair|layer|head)=/.test(window.location.search) || !window.fetch || !window.bvl) { return; }
  fetch('bvl-opening').then(function (r) { return r.status === 200 ? r.json() : null; })
    .then(function (p) { window.bvl.showOpening(p); })
    .catch(function () { /* the load event draws it as before */ });
})();
