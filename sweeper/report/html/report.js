// report.html's script: draws the heatmaps, the charts and the trial table of one report
// from its JSON block (.sw-data). Every string from the study goes into the page through
// textContent or setAttribute, never as markup. An error is written into the report.
// A notebook may show several reports, and may run this before the output is in the
// document: the report is the element around this script, else the one of that id.
function sweeperReport(rootId, script) {
  "use strict";
  var root = (script && script.closest && script.closest(".sweeper-report")) ||
    document.getElementById(rootId);
  var NS = "http://www.w3.org/2000/svg";
  var VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80",
                 "#5ec962", "#addc30", "#fde725"];
  var PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
                 "#e377c2", "#7f7f7f", "#17becf"];
  var LIMIT = 500;      // trial rows drawn until "show all" is pressed

  function el(tag, cls, text, parent) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function svg(tag, attrs, parent) {
    var e = document.createElementNS(NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(e);
    return e;
  }
  function label(parent, x, y, lines, attrs) {
    var t = svg("text", Object.assign({x: x, y: y}, attrs || {}), parent);
    String(lines).split("\n").forEach(function (line, i) {
      var s = svg("tspan", {x: x, dy: i ? "1.15em" : "0"}, t);
      s.textContent = line;
    });
    return t;
  }
  function fmt(v) {
    if (v === null || v === undefined) return "–";
    if (typeof v !== "number") return String(v);
    if (Number.isInteger(v)) return String(v);
    return Math.abs(v) >= 1000 ? v.toFixed(0) : String(Number(v.toPrecision(4)));
  }
  function hex(c) { return [1, 3, 5].map(function (i) { return parseInt(c.substr(i, 2), 16); }); }
  function colour(t) {
    t = Math.min(1, Math.max(0, isFinite(t) ? t : 0.5)) * (VIRIDIS.length - 1);
    var i = Math.min(Math.floor(t), VIRIDIS.length - 2), f = t - i;
    var a = hex(VIRIDIS[i]), b = hex(VIRIDIS[i + 1]);
    return "rgb(" + a.map(function (x, k) { return Math.round(x + (b[k] - x) * f); }).join(",") + ")";
  }

  var data = JSON.parse(root.querySelector("script.sw-data").textContent);
  var cols = data.trials.columns, rows = data.trials.rows, at = {};
  cols.forEach(function (c, i) { at[c] = i; });
  Object.keys(data.trials.levels).forEach(function (c) {      // indices back to their text
    var levels = data.trials.levels[c], i = at[c];
    rows.forEach(function (r) { r[i] = levels[r[i]]; });
  });
  var byNumber = {};
  rows.forEach(function (r) { byNumber[r[at.number]] = r; });
  function cell(r, c) { return at[c] === undefined ? null : r[at[c]]; }
  function configText(r) {
    return data.config.map(function (c) {
      var v = cell(r, c);
      var shown = c === "grid_label" ? "grid=" + fmt(v) + (cell(r, "grid") !== null && String(cell(r, "grid")) !== String(v) ? " (=" + fmt(cell(r, "grid")) + ")" : "") : c + "=" + fmt(v);
      return shown;
    }).join(" ");
  }
  function trialText(n) {
    var r = byNumber[n];
    if (!r) return "trial #" + n;
    var lines = [["#" + n, cell(r, "status"), cell(r, "problem")].filter(Boolean).join("  "), configText(r)];
    if (cell(r, "median_ms") !== null) {
      lines.push("median " + fmt(cell(r, "median_ms")) + " ms, 95% CI [" + fmt(cell(r, "ci_lo_ms")) + ", " +
                 fmt(cell(r, "ci_hi_ms")) + "] ms (±" + fmt(cell(r, "ci_pct")) + "%)");
      lines.push(fmt(cell(r, data.metric)) + " " + data.unit +
                 (cell(r, "pct_ceiling") !== null ? ", " + fmt(cell(r, "pct_ceiling")) + "% of ceiling" : ""));
      lines.push("samples " + fmt(cell(r, "samples")) + (cell(r, "stop") ? ", stopped: " + cell(r, "stop") : ""));
    }
    if (cell(r, "flags")) lines.push("flags: " + cell(r, "flags"));
    var reason = cell(r, "reason");
    if (reason) lines.push("reason: " + (reason.length > 400 ? reason.slice(0, 400) + "…" : reason));
    return lines.join("\n");
  }

  var tip = root.querySelector(".sw-tip"), tips = new WeakMap();
  function hover(target, text) { tips.set(target, text); }
  root.addEventListener("mousemove", function (e) {
    var text = tips.get(e.target);
    if (text === undefined) { tip.hidden = true; return; }
    tip.textContent = typeof text === "function" ? text() : text;
    tip.hidden = false;
    var x = e.clientX + 14, y = e.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth) x = Math.max(0, e.clientX - tip.offsetWidth - 14);
    if (y + tip.offsetHeight > window.innerHeight) y = Math.max(0, e.clientY - tip.offsetHeight - 14);
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  });
  root.addEventListener("mouseleave", function () { tip.hidden = true; });

  function heatmap(m, index, figure) {
    var lines = m.columns.map(function (c) { return c.split("\n"); });
    var longest = Math.max.apply(null, [8].concat(lines.map(function (ls) {
      return Math.max.apply(null, ls.map(function (l) { return l.length; })); })));
    var deep = Math.max.apply(null, [1].concat(lines.map(function (ls) { return ls.length; })));
    var won = m.cells.some(function (r) { return r.some(function (c) { return c[3]; }); });
    var cw = Math.max(72, longest * 7 + 10), ch = won ? 46 : 32, left = 64, top = deep * 13 + 30;
    var width = left + cw * m.columns.length + 110, height = top + ch * m.rows.length + 10;
    var s = svg("svg", {width: width, height: Math.max(height, top + 134), role: "img"}, figure);
    var finite = [], hatchId = null;
    function hatch() {       // the diagonal lines over a cell whose CI is wide, made once
      if (hatchId) return hatchId;
      hatchId = rootId + "-h" + index;
      var pattern = svg("pattern", {id: hatchId, width: 6, height: 6,
                                    patternUnits: "userSpaceOnUse",
                                    patternTransform: "rotate(45)"}, svg("defs", {}, s));
      svg("line", {x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#ffffff", "stroke-opacity": 0.55,
                   "stroke-width": 2}, pattern);
      return hatchId;
    }
    m.cells.forEach(function (r) { r.forEach(function (c) { if (c[0] !== null) finite.push(c[0]); }); });
    var lo = m.scale ? m.scale[0] : Math.min.apply(null, finite);
    var hi = m.scale ? m.scale[1] : Math.max.apply(null, finite);
    var span = hi > lo ? hi - lo : 1;
    label(s, left + cw * m.columns.length / 2, 12, "grid", {"text-anchor": "middle", "font-weight": "bold"});
    label(s, 4, top - 6, "block", {"font-weight": "bold"});
    m.columns.forEach(function (c, j) {
      label(s, left + cw * j + cw / 2, 28, c, {"text-anchor": "middle"});
    });
    m.rows.forEach(function (b, i) {
      label(s, left - 8, top + ch * i + ch / 2 + 4, b, {"text-anchor": "end"});
      m.cells[i].forEach(function (c, j) {
        var x = left + cw * j, y = top + ch * i, t = (c[0] - lo) / span;
        var rect = svg("rect", {x: x, y: y, width: cw - 1, height: ch - 1, "class": "sw-cell",
                                fill: c[0] === null ? "#eeeeee" : colour(t)}, s);
        var fill = c[0] === null ? "#6a737d" : (t < 0.6 ? "#ffffff" : "#111111");
        if (c[4] !== null && c[4] !== undefined) {     // a wide CI: hatched, its ± said
          svg("rect", {x: x, y: y, width: cw - 1, height: ch - 1, "class": "sw-wide",
                       fill: "url(#" + hatch() + ")", "pointer-events": "none"}, s);
        }
        var text = c[2] + (c[4] !== null && c[4] !== undefined ? " ±" + c[4] + "%" : "") +
          (c[3] ? "\n" + c[3] : "");
        if (m.best && m.best[0] === i && m.best[1] === j && m.final) text += "\nfinal " + m.final;
        var words = label(s, x + cw / 2, y + 14, text, {"text-anchor": "middle", fill: fill,
                                                         "pointer-events": "none"});
        words.style.fill = fill;
        if (c[1] !== null) {
          hover(rect, function () {
            var mark = m.best && m.best[0] === i && m.best[1] === j ? "\n(" + m.best_note + ")" : "";
            return trialText(c[1]) + mark;
          });
        }
      });
    });
    if (m.best) {
      svg("rect", {x: left + cw * m.best[1] + 1, y: top + ch * m.best[0] + 1, width: cw - 3,
                   height: ch - 3, fill: "none", stroke: "#e01010", "stroke-width": 3,
                   "pointer-events": "none"}, s);
    }
    var gid = rootId + "-g" + index, bx = left + cw * m.columns.length + 16, bh = Math.max(ch * m.rows.length, 120);
    var grad = svg("linearGradient", {id: gid, x1: 0, y1: 1, x2: 0, y2: 0}, svg("defs", {}, s));
    VIRIDIS.forEach(function (c, k) {
      svg("stop", {offset: (100 * k / (VIRIDIS.length - 1)) + "%", "stop-color": c}, grad);
    });
    svg("rect", {x: bx, y: top, width: 14, height: bh, fill: "url(#" + gid + ")"}, s);
    label(s, bx + 18, top + 10, fmt(hi));
    label(s, bx + 18, top + bh, fmt(lo));
    label(s, bx + 18, top + bh / 2, data.unit);
  }

  function ticks(lo, hi, log) {
    var out = [];
    if (log) {       // powers of ten, and 2 and 5 times them where the range is narrow
      var steps = hi - lo < 1.5 ? [1, 2, 5] : [1];
      for (var p = Math.floor(lo); p <= Math.ceil(hi); p++) {
        steps.forEach(function (k) {
          var v = k * Math.pow(10, p);
          if (Math.log10(v) >= lo && Math.log10(v) <= hi) out.push(v);
        });
      }
      if (out.length >= 2) return out;
      return ticks(Math.pow(10, lo), Math.pow(10, hi), false).filter(function (v) { return v > 0; });
    }
    var step = Math.pow(10, Math.floor(Math.log10((hi - lo) / 5 || 1)));
    [1, 2, 5, 10].some(function (k) { if ((hi - lo) / (step * k) <= 6) { step *= k; return true; } return false; });
    for (var v = Math.ceil(lo / step) * step; v <= hi + 1e-9 * step; v += step) out.push(Number(v.toPrecision(6)));
    return out;
  }

  function chart(c, index, figure) {
    var W = 760, H = 400, L = 78, R = 24, T = 16, B = 52;
    var xs = [], ys = [];
    c.series.forEach(function (se) {
      se.points.forEach(function (p) {
        xs.push(p[0]); ys.push(p[1]);
        if (p[2] !== null) ys.push(p[2]);
        if (p[3] !== null) ys.push(p[3]);
      });
    });
    c.hlines.forEach(function (h) { ys.push(h[0]); });
    xs = xs.filter(function (v) { return v !== null && (!c.xlog || v > 0); });
    ys = ys.filter(function (v) { return v !== null && (!c.ylog || v > 0); });
    if (!xs.length || !ys.length) { el("p", "", "nothing to draw", figure); return; }
    var tx = c.xlog ? Math.log10 : function (v) { return v; };
    var ty = c.ylog ? Math.log10 : function (v) { return v; };
    var x0 = tx(Math.min.apply(null, xs)), x1 = tx(Math.max.apply(null, xs));
    var y0 = c.ylog ? ty(Math.min.apply(null, ys)) : Math.min(0, Math.min.apply(null, ys));
    var y1 = ty(Math.max.apply(null, ys));
    var padx = (x1 - x0 || 1) * 0.06, pady = (y1 - y0 || 1) * 0.08;
    x0 -= padx; x1 += padx; y1 += pady; if (c.ylog) y0 -= pady;
    function X(v) { return L + (tx(v) - x0) / (x1 - x0) * (W - L - R); }
    function Y(v) { return H - B - (ty(v) - y0) / (y1 - y0) * (H - T - B); }
    var s = svg("svg", {width: W, height: H, role: "img"}, figure);
    var clip = rootId + "-c" + index;
    svg("rect", {x: L, y: T, width: W - L - R, height: H - T - B}, svg("clipPath", {id: clip}, svg("defs", {}, s)));
    svg("rect", {x: L, y: T, width: W - L - R, height: H - T - B, fill: "#fbfbfd", stroke: "#9aa3ad"}, s);
    var xt = c.xticks.length ? c.xticks : ticks(x0, x1, c.xlog).map(function (v) { return [v, fmt(v)]; });
    xt.forEach(function (t) {
      var x = X(t[0]);
      if (x < L - 1 || x > W - R + 1) return;
      svg("line", {x1: x, x2: x, y1: T, y2: H - B, stroke: "#e3e6ea"}, s);
      label(s, x, H - B + 16, t[1], {"text-anchor": "middle"});
    });
    ticks(y0, y1, c.ylog).forEach(function (v) {
      var y = Y(v);
      svg("line", {x1: L, x2: W - R, y1: y, y2: y, stroke: "#e3e6ea"}, s);
      label(s, L - 6, y + 4, fmt(v), {"text-anchor": "end"});
    });
    label(s, L + (W - L - R) / 2, H - 10, c.xlabel, {"text-anchor": "middle"});
    label(s, 14, T + (H - T - B) / 2, c.ylabel, {"text-anchor": "middle",
          transform: "rotate(-90 14 " + (T + (H - T - B) / 2) + ")"});
    var plot = svg("g", {"clip-path": "url(#" + clip + ")"}, s);
    var legend = el("div", "sw-legend", null, figure);
    c.vlines.forEach(function (v) {
      if (v[0] <= 0 && c.xlog) return;
      var x = X(v[0]);
      if (x < L || x > W - R) return;
      svg("line", {x1: x, x2: x, y1: T, y2: H - B, stroke: "#9aa3ad", "stroke-width": 6, opacity: 0.35}, plot);
      label(s, x + 5, T + 12, v[1], {fill: "#5b6570"});
    });
    c.hlines.forEach(function (h) {
      var y = Y(h[0]);
      svg("line", {x1: L, x2: W - R, y1: y, y2: y, stroke: "#444", "stroke-dasharray": "6,4"}, plot);
      el("span", "", "- - " + h[1], legend);
    });
    c.series.forEach(function (se, k) {
      var colour = PALETTE[k % PALETTE.length];
      var pts = se.points.filter(function (p) { return p[0] !== null && p[1] !== null; });
      var dash = {dotted: "2,3", dashed: "6,4"}[se.kind] || "";
      var line = svg("polyline", {points: pts.map(function (p) { return X(p[0]) + "," + Y(p[1]); }).join(" "),
                                  fill: "none", stroke: colour, "stroke-width": se.kind === "points" ? 1.5 : 1.2}, plot);
      if (dash) line.setAttribute("stroke-dasharray", dash);
      hover(line, se.label);
      if (se.kind === "points") {
        pts.forEach(function (p) {
          if (p[2] !== null && p[3] !== null) {
            svg("line", {x1: X(p[0]), x2: X(p[0]), y1: Y(p[2]), y2: Y(p[3]), stroke: colour, "stroke-width": 1.5}, plot);
          }
          var dot = svg("circle", {cx: X(p[0]), cy: Y(p[1]), r: 5, fill: colour, "class": "sw-pt"}, plot);
          hover(dot, function () { return p[5] + (p[4] !== null ? "\n\n" + trialText(p[4]) : ""); });
        });
      }
      var key = el("span", "", (se.kind === "points" ? "● " : dash ? "┄ " : "— ") + se.label, legend);
      key.style.color = colour;
    });
  }

  function trialTable(box) {
    if (!rows.length) { el("p", "", "No trial recorded.", box); return; }
    var controls = el("div", "sw-controls", null, box);
    var input = el("input", "", null, controls);
    input.type = "search";
    input.placeholder = "filter: text, key=value (BLOCK=1024), ...";
    var status = el("select", "", null, controls);
    el("option", "", "every status", status).value = "";
    Array.from(new Set(rows.map(function (r) { return r[at.status]; }))).sort().forEach(function (v) {
      el("option", "", v, status).value = v;
    });
    var count = el("span", "", "", controls);
    var more = el("button", "", "show all", controls);
    var scroll = el("div", "sw-scroll", null, box);
    var table = el("table", "", null, scroll);
    var headRow = el("tr", "", null, el("thead", "", null, table));
    var body = el("tbody", "", null, table);
    var sortBy = -1, sortDir = 1, all = false;
    var text = rows.map(function (r) { return r.map(fmt).join(" ").toLowerCase(); });
    cols.forEach(function (c, i) {
      var th = el("th", "", data.names[c] || c, headRow);
      th.addEventListener("click", function () {
        sortDir = sortBy === i ? -sortDir : 1;
        sortBy = i;
        Array.from(headRow.children).forEach(function (h) { h.className = ""; });
        th.className = sortDir > 0 ? "sw-asc" : "sw-desc";
        draw();
      });
    });
    function matches(r, k) {
      var want = input.value.split(/\s+/).filter(Boolean);
      if (status.value && r[at.status] !== status.value) return false;
      return want.every(function (w) {
        var eq = w.indexOf("="), col = eq > 0 ? column(w.slice(0, eq)) : -1;
        if (col >= 0) return fmt(r[col]).toLowerCase() === w.slice(eq + 1).toLowerCase();
        return text[k].indexOf(w.toLowerCase()) >= 0;
      });
    }
    // a column by its name as written (BLOCK is not block), else in any case; grid: the label
    function column(name) {
      if (name === "grid") return cols.indexOf("grid_label");
      var exact = cols.indexOf(name);
      return exact >= 0 ? exact : cols.findIndex(function (c) { return c.toLowerCase() === name.toLowerCase(); });
    }
    function compare(a, b) {
      var x = a[sortBy], y = b[sortBy];
      if (x === null || x === "") return 1;
      if (y === null || y === "") return -1;
      if (typeof x === "number" && typeof y === "number") return sortDir * (x - y);
      return sortDir * String(x).localeCompare(String(y), undefined, {numeric: true});
    }
    function draw() {
      var shown = [];
      rows.forEach(function (r, k) { if (matches(r, k)) shown.push(r); });
      if (sortBy >= 0) shown.sort(compare);
      var drawn = all ? shown : shown.slice(0, LIMIT);
      count.textContent = shown.length + " of " + rows.length + " trials" +
        (drawn.length < shown.length ? ", the first " + drawn.length + " shown" : "");
      more.hidden = drawn.length >= shown.length;
      body.textContent = "";
      drawn.forEach(function (r) {
        var st = r[at.status];
        // measured (cut short or not): plain; not run (ruled out, not in a replay's table) or
        // left to measure again (its worker killed from outside): grey
        var tr = el("tr", st === "ok" || st === "abandoned" ? "" :
                    st === "invalid" || st === "missing" || st === "retry" ? "sw-invalid" :
                    "sw-failed", null, body);
        r.forEach(function (v, i) { el("td", cols[i] === "reason" ? "sw-reason" : "", fmt(v), tr); });
      });
    }
    input.addEventListener("input", draw);
    status.addEventListener("change", draw);
    more.addEventListener("click", function () { all = true; draw(); });
    draw();
  }

  function guarded(draw) {
    try {
      draw();
    } catch (e) {
      el("pre", "sw-error", "report script error: " + (e && e.stack ? e.stack : e), root);
    }
  }
  guarded(function () {
    // a map folded away is drawn when it is first unfolded: a study of 10^4 trials has
    // hundreds of them
    root.querySelectorAll("figure.sw-map").forEach(function (f) {
      var i = Number(f.getAttribute("data-index")), fold = f.closest("details"), drawn = false;
      function draw() { if (!drawn) { drawn = true; heatmap(data.maps[i], i, f); } }
      if (fold && !fold.open) {
        fold.addEventListener("toggle", function () { if (fold.open) guarded(draw); });
      } else {
        draw();
      }
    });
    root.querySelectorAll("figure.sw-chart").forEach(function (f) {
      var i = Number(f.getAttribute("data-index"));
      chart(data.charts[i], i, f);
    });
    var box = root.querySelector(".sw-trials");
    if (box) trialTable(box);
    root.setAttribute("data-drawn", "yes");
  });
}
