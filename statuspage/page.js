'use strict';
// Draws the breakers from a snapshot (statuspage.Snapshot as JSON), first
// the one in the page, then one fetched from ?format=json about every
// second. Names and reasons are written as text (textContent), never as
// markup.
(function () {
  var REFRESH_MS = 1000;
  var SPAN_S = 60; // the chart's reach, as historySpan
  var GAP_S = 3; // samples further apart than this are not joined
  var SVG = 'http://www.w3.org/2000/svg';
  var main = document.getElementById('breakers');
  var status = document.getElementById('status');

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, String(attrs[k]));
    return e;
  }
  function percent(p) {
    if (p > 0 && p < 0.001) return '<0.1 %';
    return (100 * p).toFixed(1) + ' %';
  }
  function count(n) { return Number(n).toLocaleString('en-US'); }
  function ago(at, now) {
    var s = Math.max(0, Math.round((now - Date.parse(at)) / 1000));
    if (s < 60) return s + ' s ago';
    if (s < 3600) return Math.floor(s / 60) + ' min ago';
    return Math.floor(s / 3600) + ' h ago';
  }

  // chart draws the drop probability over the last SPAN_S seconds.
  function chart(history, now) {
    var W = 320, H = 70, T = 5, B = 12, L = 2, R = 30; // R: room for the labels
    var h = H - T - B, w = W - L - R;
    var c = svg('svg', { 'class': 'chart', viewBox: '0 0 ' + W + ' ' + H, role: 'img' });
    c.appendChild(svg('rect', { 'class': 'bg', x: L, y: T, width: w, height: h }));
    c.appendChild(svg('line', { 'class': 'grid', x1: L, x2: L + w, y1: T + h / 2, y2: T + h / 2 }));
    function x(t) { return L + w * (1 - (now - t) / 1000 / SPAN_S); }
    function y(p) { return T + h * (1 - Math.min(1, Math.max(0, p))); }
    var segments = [], seg = null, last = null;
    (history || []).forEach(function (s) {
      var t = Date.parse(s.at);
      if (now - t > SPAN_S * 1000) return;
      if (!seg || t - last > GAP_S * 1000) segments.push(seg = []);
      seg.push([x(t), y(s.drop_probability)]);
      last = t;
    });
    segments.forEach(function (pts) {
      var line = pts.map(function (p) { return p[0].toFixed(1) + ',' + p[1].toFixed(1); }).join(' ');
      if (pts.length > 1) {
        var base = y(0).toFixed(1);
        c.appendChild(svg('polygon', { 'class': 'area',
          points: pts[0][0].toFixed(1) + ',' + base + ' ' + line + ' ' + pts[pts.length - 1][0].toFixed(1) + ',' + base }));
        c.appendChild(svg('polyline', { 'class': 'line', points: line }));
      }
    });
    if (last !== null) {
      var end = segments[segments.length - 1];
      var p = end[end.length - 1];
      c.appendChild(svg('circle', { 'class': 'dot', cx: p[0].toFixed(1), cy: p[1].toFixed(1), r: 2 }));
    }
    var labels = [['100%', L + w + 3, T + 7], ['0', L + w + 3, T + h], ['−60 s', L + 1, H - 2], ['now', L + w - 16, H - 2]];
    labels.forEach(function (l) {
      var t = svg('text', { x: l[1], y: l[2] });
      t.textContent = l[0];
      c.appendChild(t);
    });
    var title = svg('title', {});
    title.textContent = 'drop probability over the last minute';
    c.insertBefore(title, c.firstChild);
    return c;
  }

  function figure(label, n) {
    var s = el('div');
    s.appendChild(el('b', '', count(n)));
    s.appendChild(el('small', '', label));
    return s;
  }

  function levels(ls) {
    var t = el('table', 'levels');
    var head = el('tr');
    ['level', 'calls', 'failures', 'drops', 'drop p'].forEach(function (h) { head.appendChild(el('th', '', h)); });
    t.appendChild(head);
    ls.forEach(function (l) {
      var r = el('tr');
      [l.criticality, count(l.calls), count(l.failures), count(l.drops), percent(l.drop_probability)]
        .forEach(function (v) { r.appendChild(el('td', '', v)); });
      t.appendChild(r);
    });
    return t;
  }

  // override shows an operator's override, read-only: the page changes
  // nothing.
  function override(o, now) {
    var d = el('div', 'override');
    var what = o.mode === 'shed_all' ? 'forced open: every call dropped' :
      o.mode === 'shed_none' ? 'forced closed: every call admitted' : o.mode;
    d.appendChild(el('b', 'mode', 'override · ' + what));
    var left = Math.max(0, Math.round((Date.parse(o.expires) - now) / 1000));
    var who = (o.by ? 'by ' + o.by + ', ' : '') + 'set ' + ago(o.set_at, now) + ', ends in ' +
      (left < 60 ? left + ' s' : left < 3600 ? Math.floor(left / 60) + ' min' : Math.floor(left / 3600) + ' h');
    if (o.mode === 'shed_all') who += ', ' + count(o.drops) + ' dropped';
    d.appendChild(el('span', 'who', who));
    if (o.reason) d.appendChild(el('span', 'why', o.reason));
    return d;
  }

  // overload shows a server's overload limit: how many calls it lets in,
  // holds and queues, and what it rejected, by level.
  function overload(o) {
    var d = el('div', 'overload' + (o.overloaded || o.queue_held ? ' on' : ''));
    d.appendChild(el('div', 'caption', o.overloaded ? 'server overloaded: lowest levels rejected first' :
      o.queue_held ? 'server at capacity: queue held short, lowest levels rejected first' :
      'server overload limit'));
    var f = el('div', 'figures');
    var limit = el('div');
    limit.appendChild(el('b', '', Number(o.limit).toFixed(1)));
    limit.appendChild(el('small', '', 'limit'));
    f.appendChild(limit);
    f.appendChild(figure('in flight', o.in_flight));
    f.appendChild(figure('queued', o.queued));
    var total = (o.rejected || []).reduce(function (n, r) { return n + r.calls; }, 0);
    f.appendChild(figure('rejected', total));
    d.appendChild(f);
    if (total > 0) {
      var t = el('table', 'rejections');
      var head = el('tr');
      ['level', 'rejected'].forEach(function (h) { head.appendChild(el('th', '', h)); });
      t.appendChild(head);
      o.rejected.forEach(function (r) {
        var row = el('tr');
        [r.criticality, count(r.calls)].forEach(function (v) { row.appendChild(el('td', '', v)); });
        t.appendChild(row);
      });
      d.appendChild(t);
    }
    return d;
  }

  function card(b, now) {
    var c = el('section', 'breaker' + (b.override ? ' forced' : '') +
      (b.drop_probability >= 0.5 ? ' bad' : b.drop_probability > 0 ? ' warn' : ''));
    c.dataset.name = b.name;
    var top = el('div', 'top');
    top.appendChild(el('h2', 'name', b.name));
    top.appendChild(el('span', 'p', percent(b.drop_probability)));
    c.appendChild(top);
    if (b.override) c.appendChild(override(b.override, now));
    c.appendChild(el('div', 'plabel', 'drop probability'));
    c.appendChild(chart(b.history, now));
    c.appendChild(el('div', 'caption', 'in the window'));
    var f = el('div', 'figures');
    f.appendChild(figure('requests', b.requests));
    f.appendChild(figure('successes', b.successes));
    f.appendChild(figure('failures', b.failures));
    f.appendChild(figure('drops', b.drops));
    c.appendChild(f);
    if (b.criticalities && b.criticalities.length) c.appendChild(levels(b.criticalities));
    if (b.overload) c.appendChild(overload(b.overload));
    if (b.reasons && b.reasons.length) {
      var ol = el('ol', 'reasons');
      b.reasons.forEach(function (r) {
        var li = el('li');
        li.appendChild(el('span', 'when', ago(r.at, now)));
        li.appendChild(el('span', 'text', r.text));
        ol.appendChild(li);
      });
      c.appendChild(ol);
    }
    return c;
  }

  function render(snap) {
    var now = Date.parse(snap.time);
    var cards = (snap.breakers || []).map(function (b) { return card(b, now); });
    if (!cards.length) cards = [el('p', 'empty', 'No breakers yet.')];
    main.replaceChildren.apply(main, cards);
    var shown = (snap.breakers || []).length;
    var text = shown + (shown === 1 ? ' breaker' : ' breakers');
    if (snap.total > shown) {
      text = 'the ' + shown + ' of ' + snap.total + ' breakers overridden or with the highest drop probability';
    }
    status.textContent = text + ' · ' + new Date(now).toISOString().slice(11, 19) + ' UTC';
    status.className = '';
  }

  function poll() {
    fetch('?format=json', { cache: 'no-store', headers: { Accept: 'application/json' } })
      .then(function (r) {
        if (!r.ok) throw new Error('HTTP ' + r.status);
        return r.json();
      })
      .then(render)
      .catch(function (e) {
        status.textContent = 'not updated: ' + e.message + '; retrying';
        status.className = 'stale';
      })
      .then(function () { setTimeout(poll, REFRESH_MS); });
  }

  render(JSON.parse(document.getElementById('snapshot').textContent));
  setTimeout(poll, REFRESH_MS);
})();
