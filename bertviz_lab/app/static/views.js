// The app page's views (viewer.js draws them): after a Run the server sends one payload with the open
// head's codes inside it (or, above 256 KB, the URL of a file of them) and the URL of every head's; the page
// draws the open head at once, fetches every head's once as bytes (in a worker), and the Layer and Head
// sliders and the sentence-pair filter then re-draw the single-head heatmap and the head view with no server
// round trip. Only a visible view draws; a hidden one draws when its tab is opened.
(function () {
  'use strict';
  var SYNCED = ['#aggregates-plot', '#intervention-plot'];  // server-drawn views that follow the sliders
  var pending = false, loading = null;

  // A file of codes as an ArrayBuffer, read by the page itself.
  function readHere(url) {
    return fetch(url).then(function (r) {
      if (!r.ok) { throw new Error('HTTP ' + r.status); }
      return r.arrayBuffer();
    });
  }
  // Every head's codes (19 MB at 512 tokens) are read by a worker, which hands the buffer over without a copy:
  // read by the page, their body took ~95 ms of its main thread's CPU at 512 tokens, just after the heatmap's
  // first paint, while a person starts to point at it. Where no worker starts (or one fails), the page reads them.
  var WORKER = 'var readHere = ' + readHere + ';\nonmessage = function (e) { var m = e.data;' +
    ' readHere(m.url).then(function (b) { postMessage({ id: m.id, buffer: b }, [b]); }, function (error) {' +
    ' postMessage({ id: m.id, error: String((error && error.message) || error) }); }); };';
  var reader = null, lastId = 0, waiting = {};
  function readerOf() {
    if (reader !== null) { return reader; }
    try {
      reader = new Worker(URL.createObjectURL(new Blob([WORKER], { type: 'text/javascript' })));
    } catch (error) {
      reader = false;
      return reader;
    }
    reader.onmessage = function (e) {
      var ask = waiting[e.data.id];
      delete waiting[e.data.id];
      if (!ask) { return; }
      if (e.data.error) { ask.reject(new Error(e.data.error)); } else { ask.resolve(e.data.buffer); }
    };
    reader.onerror = function () {  // the worker itself failed (e.g. a page policy forbids it): the page reads
      reader = false;
      Object.keys(waiting).forEach(function (id) {
        var ask = waiting[id];
        delete waiting[id];
        readHere(ask.url).then(ask.resolve, ask.reject);
      });
    };
    return reader;
  }
  function readOffThread(url) {
    var worker = readerOf();
    if (!worker) { return readHere(url); }
    return new Promise(function (resolve, reject) {
      var id = ++lastId, absolute = new URL(url, document.baseURI).href;  // a worker's own base is its blob: URL
      waiting[id] = { url: absolute, resolve: resolve, reject: reject };
      worker.postMessage({ id: id, url: absolute });
    });
  }

  var visible = window.BvlViewer.visible;  // viewer.js's own test: whether an element is shown
  function later(ms) {
    if (pending) { return; }
    pending = true;
    var go = function () { pending = false; viewer.redraw(); };
    if (ms) { setTimeout(function () { requestAnimationFrame(go); }, ms); } else { requestAnimationFrame(go); }
  }
  var resized = new ResizeObserver(function () { later(); });
  function watch(el) {  // a view that becomes visible (its tab opened, even by the server) draws then
    if (el && !el.__bvlWatched) { el.__bvlWatched = true; resized.observe(el); }
    return el;
  }
  // plotly.js (3.5 MB; about a second of the main thread to run) is fetched once the first map is on screen
  // (drawn on a canvas meanwhile: viewer.js quickHeatmap), or 2 s after the page's load event at the latest,
  // not while Gradio builds the page (the opening example sent ahead asks for nothing): a first visit sees its
  // heatmap about a second sooner.
  var plotlyAsked = false;
  function fetchPlotly() {
    if (plotlyAsked || window.Plotly || !window.BVL_PLOTLY_URL) { return; }
    plotlyAsked = true;
    var script = document.createElement('script');
    script.src = window.BVL_PLOTLY_URL;
    script.onload = function () { later(); };
    document.head.appendChild(script);
  }
  function needPlotly() { if (loading !== null) { fetchPlotly(); } }
  window.addEventListener('load', function () { setTimeout(fetchPlotly, 2000); });
  var viewer = window.BvlViewer({
    heatmap: function () { return watch(document.querySelector('#single-plot .bvl-heatmap')); },
    caption: function () { return document.querySelector('#single-plot .bvl-caption'); },
    headview: function () { return watch(document.querySelector('#headview-plot .bvl-headview')); },
    later: later, quick: true, needPlotly: needPlotly
  });

  function syncServerViews() {
    var shown = SYNCED.some(function (sel) {  // open, and showing a figure (an intervention was run)
      var el = document.querySelector(sel);
      return visible(el) && !!el.querySelector('.js-plotly-plot');
    });
    var button = document.querySelector('#sync-views');
    if (shown && button) { button.click(); }
  }

  function caption(text) {
    var el = document.querySelector('#single-plot .bvl-caption');
    if (el) { el.textContent = text; }
  }

  window.bvl = {
    state: viewer.state,
    load: function (p) {
      if (!p || !p.codes_url) {
        loading = null;
        viewer.clear();
        return [];
      }
      loading = p.id;
      var full = false, scrolled = false;
      function bytes(url, expected, read) {  // the weights' codes travel as raw bytes, not inside JSON
        return read(url).then(function (buffer) {
          if (buffer.byteLength !== expected) { throw new Error(buffer.byteLength + ' bytes'); }
          return buffer;
        });
      }
      function scroll() {  // in the next frame, where the page is laid out anyway: not a layout of its own
        if (scrolled) { return; }
        scrolled = true;
        requestAnimationFrame(function () {
          var views = document.querySelector('#views');
          if (p.scroll && views && views.getBoundingClientRect().top < 0) {  // e.g. an example clicked further down
            views.scrollIntoView({ block: 'start' });
          }
        });
      }
      function showFirst(codes) {  // the open head alone: drawn while every head's codes are on their way
        if (loading !== p.id || full || codes.byteLength !== p.head_bytes) { return; }
        viewer.showFirst(p, codes);
        scroll();
      }
      if (p.head_codes) {  // inside the reply (base64): drawn once Gradio's update of the page is done
        Promise.resolve().then(function () {
          showFirst(window.BvlViewer.fromBase64(p, p.head_codes));
        }).catch(function () { /* the full codes still come */ });
      } else if (p.head_url) {  // a small file of its own
        bytes(p.head_url, p.head_bytes, readHere).then(function (buffer) {
          showFirst(window.BvlViewer.codesOf(p, buffer));
        }).catch(function () { /* the full codes still come */ }).then(afterPaint);
      }
      var started = false;
      function everyHead() {
        if (started || loading !== p.id) { return; }
        started = true;
        bytes(p.codes_url, p.codes_bytes, readOffThread).then(function (buffer) {
          if (loading !== p.id) { return; }  // a newer analysis arrived meanwhile
          full = true;
          viewer.complete(p, window.BvlViewer.codesOf(p, buffer));
          scroll();
        }).catch(function (error) { caption('⚠️ could not load this analysis (' + error.message + '): press Run again'); });
      }
      // Every head's codes once the open head is painted: read meanwhile, they slowed its draw.
      function afterPaint() {
        requestAnimationFrame(function () { setTimeout(everyHead, 0); });
        setTimeout(everyHead, 500);  // a page in the background paints no frame
      }
      if (p.head_codes) { afterPaint(); } else if (!p.head_url) { everyHead(); }
      return [];
    },
    // The opening example sent ahead (static/opening.js): drawn unless the analysis of the visit came first.
    showOpening: function (p) {
      if (p && loading === null && p.head_codes) { viewer.showFirst(p, window.BvlViewer.fromBase64(p, p.head_codes)); }
    },
    // A file of codes as the page reads it: by the worker (every head's) or by the page (benchmarks/bench_codes_read.py).
    readCodes: function (url, inWorker) { return inWorker ? readOffThread(url) : readHere(url); },
    select: function (layer, head) { viewer.select(layer, head); syncServerViews(); return []; },
    filter: function (value) { viewer.filter(value); syncServerViews(); return []; },
    // The page-wide colour scale of attention maps ('fixed' or 'per-head'): the JS views redraw at once; the
    // server-drawn ones follow through the scale control's own event.
    scale: function (mode) { viewer.scale(mode); return []; },
    redraw: function () { viewer.redraw(); },
    // After an action: if its message says where the person must act (e.g. "Pick them under Mask tokens"),
    // scroll that control into view and outline it for a moment.
    point: function (messageSelector) {
      var message = document.querySelector(messageSelector);
      var text = message ? message.textContent : '';
      var places = { 'under Mask tokens': '#token-picker' };
      Object.keys(places).forEach(function (phrase) {
        var target = text.indexOf(phrase) >= 0 && document.querySelector(places[phrase]);
        if (!target) { return; }
        target.scrollIntoView({ block: 'center' });
        target.classList.add('bvl-pointed');
        setTimeout(function () { target.classList.remove('bvl-pointed'); }, 2500);
      });
      return [];
    }
  };
  // A tab's content is mounted when the tab is first opened, and Plotly needs a visible box: draw
  // whatever became visible (tab switches, first mount, Plotly arriving late).
  document.addEventListener('click', function (ev) {
    if (!ev.target.closest) { return; }
    if (ev.target.closest('[role=tab]')) { later(); }
    // An in-page link (the hint's "Interventions · Syntax · Export ↓"): scroll there. Followed, it would resolve
    // against the page's base URL and reload a page opened by a shared link (?text=...) without its sentence.
    var link = ev.target.closest('a[href^="#"]'), to = link && document.getElementById(link.getAttribute('href').slice(1));
    if (to) { ev.preventDefault(); to.scrollIntoView({ block: 'start' }); }
  });
  new MutationObserver(function (records) {
    for (var i = 0; i < records.length; i++) {
      var added = records[i].addedNodes;
      for (var j = 0; j < added.length; j++) {
        var node = added[j];
        if (node.nodeType === 1 && (node.matches('.bvl-heatmap, .bvl-headview') ||
                                    node.querySelector('.bvl-heatmap, .bvl-headview'))) {
          later();
          return;
        }
      }
    }
  }).observe(document.documentElement, { childList: true, subtree: true });
  window.addEventListener('resize', function () { later(); });
  // The neuron view's frame says how tall its page is drawn (neuron.js): the frame grows to show every row.
  window.addEventListener('message', function (ev) {
    var height = ev.data && Number(ev.data.bvlNeuronHeight);
    if (!height) { return; }
    document.querySelectorAll('#neuron-view iframe').forEach(function (frame) {
      if (frame.contentWindow === ev.source) { frame.style.height = Math.ceil(height + 4) + 'px'; }
    });
  });
})();
