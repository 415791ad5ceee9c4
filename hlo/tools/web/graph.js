/* The HLO graph page (hlo-opt --emit=html): draws the module held in #hlo-data with dagre.
 *
 * A view shows one computation. Its instructions (in an operands-first order) are cut into
 * blocks of at most BLOCK nodes; a block is laid out by dagre on its own, the first time it
 * comes near the viewport, and only blocks near the viewport are in the document. Values
 * from other blocks enter a block through "stub" nodes. An expanded caller (fusion, call,
 * while, ...) is drawn as a frame holding its callees' nodes, inside its block.
 * Node keys are paths: "17" is instruction 17 at the top of the view, "17/203" is
 * instruction 203 drawn inside the expansion of 17.
 */
(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("hlo-data").textContent);
  const INSTS = DATA.insts, COMPS = DATA.computations;
  const BLOCK = 100;          // top-level nodes (plus expanded contents) per block
  const MAX_INLINE = 400;     // callees larger than this open as their own view instead
  const NODE_H = 34, STUB_H = 20, RANKSEP = 24, NODESEP = 14, HEAD_H = 18, MAX_W = 300;
  const MARGIN = 800;         // pixels around the viewport that are kept drawn
  const errors = [];
  window.addEventListener("error", (e) => errors.push(String(e.message)));

  const USERS = INSTS.map(() => []);
  INSTS.forEach((inst, i) => inst.a.forEach((op) => { if (!USERS[op].includes(i)) USERS[op].push(i); }));
  const $ = (id) => document.getElementById(id);
  const SVGNS = "http://www.w3.org/2000/svg";

  // ------------------------------------------------------------------ text measuring
  const measureCtx = document.createElement("canvas").getContext("2d");
  function textWidth(text, font) { measureCtx.font = font; return measureCtx.measureText(text).width; }
  function clip(text, font, width) {
    if (textWidth(text, font) <= width) return text;
    let lo = 0, hi = text.length;
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (textWidth(text.slice(0, mid) + "…", font) <= width) lo = mid; else hi = mid - 1; }
    return text.slice(0, lo) + "…";
  }
  const NAME_FONT = "600 11.5px system-ui, sans-serif", OP_FONT = "10.5px ui-monospace, Menlo, monospace";

  // ------------------------------------------------------------------ model helpers
  function compSize(c, seen) {   // instructions of a computation and everything it calls
    seen = seen || new Set();
    if (seen.has(c)) return 0;
    seen.add(c);
    let n = COMPS[c].i.length;
    for (const i of COMPS[c].i) for (const k of INSTS[i].k || []) n += compSize(k, seen);
    return n;
  }
  const SIZE_CACHE = new Map();
  function calleeSize(i) {
    if (!SIZE_CACHE.has(i)) SIZE_CACHE.set(i, (INSTS[i].k || []).reduce((s, c) => s + compSize(c), 0));
    return SIZE_CACHE.get(i);
  }
  function expandable(i) { const k = INSTS[i].k; return !!(k && k.length) && calleeSize(i) <= MAX_INLINE; }
  function topoOrder(c) {          // operands first, otherwise program order
    const order = [], seen = new Set(), inComp = new Set(COMPS[c].i);
    for (const start of COMPS[c].i) {
      if (seen.has(start)) continue;
      const stack = [[start, false]];
      while (stack.length) {
        const [i, done] = stack.pop();
        if (done) { order.push(i); continue; }
        if (seen.has(i)) continue;
        seen.add(i);
        stack.push([i, true]);
        const ops = INSTS[i].a;
        for (let j = ops.length - 1; j >= 0; j--) if (inComp.has(ops[j]) && !seen.has(ops[j])) stack.push([ops[j], false]);
      }
    }
    return order;
  }
  function isFusedOnly(c) { const cs = COMPS[c].callers; return cs.length > 0 && cs.every((i) => INSTS[i].o === "fusion"); }
  // Callee parameter p of callee number k of instruction i receives which operand of i (or -1)?
  function operandForParam(i, k, p) {
    const o = INSTS[i].o;
    if (o === "fusion" || o === "call" || o === "async-start") return p;
    if (o === "while") return p === 0 ? 0 : -1;
    if (o === "conditional") return p === 0 ? k + 1 : -1;
    return -1;
  }
  function passesRoot(i) { const o = INSTS[i].o; return (o === "fusion" || o === "call") && INSTS[i].k.length === 1; }

  // ------------------------------------------------------------------ state
  const state = { comp: DATA.entry, expanded: new Map(), zoom: 1, selected: null, found: null, blocks: [],
                  history: [], ready: false, layouts: 0 };
  function expandedSet(c) { if (!state.expanded.has(c)) state.expanded.set(c, new Set()); return state.expanded.get(c); }

  // ------------------------------------------------------------------ blocks
  function innerWeight(key, i) {
    const exp = expandedSet(state.comp);
    if (!exp.has(key) || !expandable(i)) return 1;
    let n = 1;
    for (const c of INSTS[i].k) for (const j of COMPS[c].i) n += innerWeight(key + "/" + j, j);
    return n;
  }
  function buildBlocks() {
    const order = topoOrder(state.comp);
    const blocks = [];
    let cur = null;
    for (const i of order) {
      const w = innerWeight(String(i), i);
      if (!cur || (cur.weight + w > BLOCK && cur.items.length)) {
        cur = { index: blocks.length, items: [], weight: 0, layout: null, el: null, y: 0, height: 0 };
        blocks.push(cur);
      }
      cur.items.push(i);
      cur.weight += w;
    }
    const blockOf = new Map();
    for (const b of blocks) for (const i of b.items) blockOf.set(i, b);
    for (const b of blocks) b.height = estimateHeight(b, blockOf);
    state.blocks = blocks;
    state.blockOf = blockOf;
    placeBlocks();
  }
  function estimateHeight(b, blockOf) {
    const depth = new Map();
    let max = 1;
    for (const i of b.items) {
      let d = 1;
      for (const o of INSTS[i].a) d = Math.max(d, (blockOf.get(o) === b ? depth.get(o) || 1 : 1) + 1);
      depth.set(i, d + (b.weight > b.items.length ? 0 : 0));
      max = Math.max(max, d);
    }
    if (b.weight > b.items.length) max += Math.min(20, b.weight - b.items.length);
    return HEAD_H + 20 + max * (NODE_H + RANKSEP);
  }
  function placeBlocks() {
    let y = 0;
    for (const b of state.blocks) { b.y = y; y += b.height; }
    state.totalHeight = y;
    const width = Math.max(600, ...state.blocks.map((b) => (b.layout ? b.layout.width : 0)));
    $("canvas").style.height = (y * state.zoom + 40) + "px";
    $("canvas").style.width = (width * state.zoom + 40) + "px";
  }

  // ------------------------------------------------------------------ layout of one block
  function layoutBlock(b) {
    const g = new dagre.graphlib.Graph({ compound: true, multigraph: true });
    g.setGraph({ rankdir: "TB", nodesep: NODESEP, ranksep: RANKSEP, marginx: 12, marginy: 8 });
    g.setDefaultEdgeLabel(() => ({}));
    const nodes = new Map(), edges = [];
    let edgeId = 0;
    const exp = expandedSet(state.comp);
    function node(key, info) {
      const nameW = textWidth(info.title, NAME_FONT), opW = textWidth(info.sub || "", OP_FONT);
      const w = Math.min(MAX_W, Math.max(60, nameW, opW) + (info.toggle ? 30 : 14));
      const h = info.kind === "stub" ? STUB_H : NODE_H;
      const n = Object.assign({ key, w, h }, info);
      nodes.set(key, n);
      g.setNode(key, { width: w, height: h });
      if (info.parent) g.setParent(key, info.parent);
      return n;
    }
    function edge(from, to, cls) { edges.push({ from, to, cls: cls || "", id: "e" + edgeId }); g.setEdge(from, to, { minlen: 1 }, "e" + edgeId++); }
    // Adds instruction i under `key`; returns {value: key carrying its value, inputs: [[operand index, key]]}.
    function addInst(i, key, parent) {
      const inst = INSTS[i];
      if (exp.has(key) && expandable(i)) {
        const cluster = "c:" + key;
        g.setNode(cluster, {});
        if (parent) g.setParent(cluster, parent);
        nodes.set(cluster, { key: cluster, kind: "cluster", inst: i, owner: key, parent });
        const head = node(key + "#h", { kind: "head", inst: i, owner: key, parent: cluster, toggle: "−",
          title: "%" + inst.n + "  " + inst.o + (inst.x ? " (" + inst.x + ")" : ""), sub: "" });
        head.h = HEAD_H;
        g.setNode(head.key, { width: head.w, height: HEAD_H });
        const inputs = [];
        const roots = [];
        inst.k.forEach((c, k) => {
          const value = new Map();
          for (const j of topoOrderCached(c)) {
            const r = addInst(j, key + "/" + j, cluster);
            value.set(j, r.value);
            const callee = INSTS[j];
            if (callee.o === "parameter") {
              const op = operandForParam(i, k, callee.p);
              if (op >= 0) inputs.push([op, r.value]);
            }
            for (const [opIndex, target] of r.inputs) {
              const src = value.get(callee.a[opIndex]);
              if (src !== undefined) edge(src, target);
            }
            if (!callee.a.length) edge(head.key, r.value, "invisible");
          }
          roots.push(value.get(COMPS[c].root));
        });
        if (passesRoot(i)) return { value: roots[0], inputs };
        const result = node(key + "#r", { kind: "result", inst: i, parent: cluster, title: "%" + inst.n, sub: inst.s });
        for (const r of roots) if (r !== undefined) edge(r, result.key);
        inst.a.forEach((_, opIndex) => { if (!inputs.some(([o]) => o === opIndex)) inputs.push([opIndex, result.key]); });
        return { value: result.key, inputs };
      }
      const comp = COMPS[inst.c];
      node(key, { kind: "inst", inst: i, parent, title: "%" + inst.n,
        sub: inst.o + (inst.o === "parameter" ? "(" + inst.p + ")" : "") + (inst.x ? ":" + inst.x : "") + "  " + inst.s,
        toggle: expandable(i) ? "+" : "", root: comp.root === i });
      return { value: key, inputs: inst.a.map((_, opIndex) => [opIndex, key]) };
    }
    const value = new Map();
    for (const i of b.items) {
      const r = addInst(i, String(i), null);
      value.set(i, r.value);
      for (const [opIndex, target] of r.inputs) {
        const o = INSTS[i].a[opIndex];
        let src = value.get(o);
        if (src === undefined) {
          src = "s:" + o;
          if (!nodes.has(src)) node(src, { kind: "stub", inst: o, title: "↑ %" + INSTS[o].n, sub: "" });
        }
        edge(src, target, src.startsWith("s:") ? "from-stub" : "");
      }
    }
    dagre.layout(g);
    state.layouts++;
    for (const n of nodes.values()) {
      const d = g.node(n.key);
      n.x = d.x; n.y = d.y;
      if (n.kind === "cluster") { n.w = d.width; n.h = d.height; }
    }
    for (const e of edges) e.points = (g.edge({ v: e.from, w: e.to, name: e.id }) || {}).points || [];
    const gr = g.graph();
    b.layout = { nodes, edges, width: gr.width || 100, height: gr.height || 40 };
    b.height = HEAD_H + b.layout.height + 10;
  }
  const TOPO = new Map();
  function topoOrderCached(c) { if (!TOPO.has(c)) TOPO.set(c, topoOrder(c)); return TOPO.get(c); }

  // ------------------------------------------------------------------ drawing
  function svg(tag, attrs, parent) {
    const el = document.createElementNS(SVGNS, tag);
    for (const k in attrs) el.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(el);
    return el;
  }
  function drawBlock(b) {
    const L = b.layout;
    const div = document.createElement("div");
    div.className = "block";
    div.dataset.block = b.index;
    const head = document.createElement("div");
    head.className = "block-head";
    const first = b.items[0], count = COMPS[state.comp].i.length;
    head.textContent = state.blocks.length > 1
      ? `block ${b.index + 1} of ${state.blocks.length}: ${b.items.length} of ${count} instructions, from %${INSTS[first].n}` : "";
    div.appendChild(head);
    const s = svg("svg", { width: L.width * state.zoom, height: L.height * state.zoom, viewBox: `0 0 ${L.width} ${L.height}` });
    div.appendChild(s);
    const clusters = [...L.nodes.values()].filter((n) => n.kind === "cluster");
    clusters.sort((p, q) => depthOf(p.key) - depthOf(q.key));
    for (const n of clusters) {
      const g = svg("g", { class: "cluster" + (INSTS[n.inst].o === "fusion" ? "" : " k-control"), "data-key": n.owner }, s);
      svg("rect", { x: n.x - n.w / 2, y: n.y - n.h / 2, width: n.w, height: n.h }, g);
    }
    for (const e of L.edges) {
      if (e.cls === "invisible" || !e.points.length) continue;
      const d = "M" + e.points.map((p) => p.x.toFixed(1) + "," + p.y.toFixed(1)).join("L");
      svg("path", { class: "edge " + e.cls, d, "marker-end": "url(#hlo-arrow)", "data-from": e.from, "data-to": e.to }, s);
    }
    for (const n of L.nodes.values()) {
      if (n.kind === "cluster") continue;
      const inst = INSTS[n.inst];
      const cls = ["node", "g-" + inst.g, "k-" + n.kind];
      if (n.kind === "stub") cls.push("stub");
      if (n.kind === "result") cls.push("result");
      if (inst.o === "fusion" && n.kind !== "stub") cls.push("fusion");
      if (n.root) cls.push("root");
      const g = svg("g", { class: cls.join(" "), transform: `translate(${n.x - n.w / 2},${n.y - n.h / 2})`,
        "data-key": n.kind === "head" ? n.owner : n.key, "data-inst": n.inst, "data-name": inst.n, "data-kind": n.kind }, s);
      if (n.kind === "head") {
        const t = svg("text", { x: 20, y: 13, class: "head" }, g);
        t.textContent = clip(n.title, NAME_FONT, n.w - 24);
        drawToggle(g, 2, 2, "−", n.owner);
        continue;
      }
      svg("rect", { width: n.w, height: n.h }, g);
      const tw = n.w - (n.toggle ? 28 : 10);
      const t1 = svg("text", { x: 6, y: n.kind === "stub" ? 14 : 14, class: "name" }, g);
      t1.textContent = clip(n.title, NAME_FONT, tw);
      if (n.sub) { const t2 = svg("text", { x: 6, y: 28, class: "op" }, g); t2.textContent = clip(n.sub, OP_FONT, tw); }
      if (n.toggle) drawToggle(g, n.w - 22, 4, n.toggle, n.key);
    }
    div.style.top = (b.y * state.zoom) + "px";
    b.el = div;
    $("canvas").appendChild(div);
    markSelection(div);
  }
  function depthOf(key) { return key.split("/").length; }
  function drawToggle(g, x, y, sign, key) {
    const t = svg("g", { class: "toggle", "data-toggle": key, transform: `translate(${x},${y})` }, g);
    svg("rect", { width: 16, height: 14 }, t);
    const tx = svg("text", { x: 4.5, y: 11.5 }, t);
    tx.textContent = sign === "+" ? "+" : "−";
  }
  function markSelection(root) {
    root = root || $("canvas");
    root.querySelectorAll(".node.selected, .node.found").forEach((n) => n.classList.remove("selected", "found"));
    root.querySelectorAll(".edge.hot").forEach((e) => e.classList.remove("hot"));
    if (state.selected) {
      root.querySelectorAll(`.node[data-key="${cssEscape(state.selected)}"]`).forEach((n) => n.classList.add("selected"));
      root.querySelectorAll(`.edge[data-from="${cssEscape(state.selected)}"], .edge[data-to="${cssEscape(state.selected)}"]`)
        .forEach((e) => e.classList.add("hot"));
    }
    if (state.found) root.querySelectorAll(`.node[data-key="${cssEscape(state.found)}"]`).forEach((n) => n.classList.add("found"));
  }
  function cssEscape(s) { return window.CSS && CSS.escape ? CSS.escape(s) : s.replace(/["\\]/g, "\\$&"); }

  // ------------------------------------------------------------------ virtualisation
  let frame = 0;
  function schedule() { if (!frame) frame = requestAnimationFrame(() => { frame = 0; refresh(); }); }
  function refresh() {
    const vp = $("viewport");
    const top = (vp.scrollTop - MARGIN) / state.zoom, bottom = (vp.scrollTop + vp.clientHeight + MARGIN) / state.zoom;
    let budget = 3, more = false;
    for (const b of state.blocks) {
      const visible = b.y + b.height >= top && b.y <= bottom;
      if (!visible) { if (b.el) { b.el.remove(); b.el = null; } continue; }
      if (!b.layout) {
        if (budget-- <= 0) { more = true; continue; }
        relayout(b);
      }
      if (!b.el) drawBlock(b);
    }
    const laid = state.blocks.filter((b) => b.layout).length;
    $("status").textContent = `${COMPS[state.comp].i.length} instructions, ${state.blocks.length} block(s), ${laid} laid out` +
      (state.zoom !== 1 ? `, zoom ${Math.round(state.zoom * 100)}%` : "");
    if (more) schedule();
  }
  function relayout(b) {
    const before = b.height;
    layoutBlock(b);
    if (b.height !== before) {
      const vp = $("viewport");
      const anchored = b.y + before <= vp.scrollTop / state.zoom;   // wholly above the viewport: keep the view still
      placeBlocks();
      for (const other of state.blocks) if (other.el && other.y) other.el.style.top = (other.y * state.zoom) + "px";
      if (anchored) vp.scrollTop += (b.height - before) * state.zoom;
    } else placeBlocks();
  }
  function redraw() {
    for (const b of state.blocks) if (b.el) { b.el.remove(); b.el = null; }
    placeBlocks();
    refresh();
  }

  // ------------------------------------------------------------------ views and navigation
  function openComputation(c, opts) {
    opts = opts || {};
    if (opts.remember !== false && state.comp !== c) state.history.push({ comp: state.comp, scroll: $("viewport").scrollTop });
    state.comp = c;
    state.selected = opts.select || null;
    for (const b of state.blocks) if (b.el) b.el.remove();
    buildBlocks();
    $("viewport").scrollTop = 0;
    renderCrumbs();
    renderComputationList();
    refresh();
  }
  function rebuildKeepingScroll() {
    const vp = $("viewport"), scroll = vp.scrollTop;
    for (const b of state.blocks) if (b.el) b.el.remove();
    buildBlocks();
    vp.scrollTop = scroll;
    refresh();
  }
  // Where to show instruction idx: {comp, key, expand: [keys]}; fused computations show inside their fusion.
  function locate(idx) {
    let c = INSTS[idx].c, path = [String(idx)];
    const expand = [];
    let guard = 0;
    while (isFusedOnly(c) && guard++ < 50) {
      const caller = COMPS[c].callers[0];
      if (!expandable(caller)) break;
      path.unshift(String(caller));
      c = INSTS[caller].c;
    }
    for (let k = 1; k < path.length; k++) expand.push(path.slice(0, k).join("/"));
    return { comp: c, key: path.join("/"), expand };
  }
  function jumpTo(idx, contextKey) {
    // a sibling inside the same expansion?
    if (contextKey && contextKey.includes("/")) {
      const prefix = contextKey.slice(0, contextKey.lastIndexOf("/"));
      const owner = +prefix.slice(prefix.lastIndexOf("/") + 1);
      if ((INSTS[owner].k || []).includes(INSTS[idx].c)) return reveal(state.comp, prefix + "/" + idx, []);
    }
    const where = locate(idx);
    reveal(where.comp, where.key, where.expand);
  }
  function reveal(c, key, expand) {
    if (c !== state.comp) openComputation(c, { select: key });
    const exp = expandedSet(c);
    let changed = false;
    for (const k of expand) if (!exp.has(k)) { exp.add(k); changed = true; }
    if (changed) rebuildKeepingScroll();
    state.selected = key;
    const top = +key.split("/")[0];
    const b = state.blockOf.get(top);
    if (!b) return;
    if (!b.layout) relayout(b);
    const n = b.layout.nodes.get(key) || b.layout.nodes.get("c:" + key);
    const vp = $("viewport");
    const y = (b.y + HEAD_H + (n ? n.y : 0)) * state.zoom, x = (n ? n.x : 0) * state.zoom;
    vp.scrollTop = Math.max(0, y - vp.clientHeight / 2);
    vp.scrollLeft = Math.max(0, x - vp.clientWidth / 2);
    refresh();
    markSelection();
    showDetails(key);
  }
  function toggle(key) {
    const exp = expandedSet(state.comp);
    if (exp.has(key)) { for (const k of [...exp]) if (k === key || k.startsWith(key + "/")) exp.delete(k); }
    else exp.add(key);
    rebuildKeepingScroll();
  }

  // ------------------------------------------------------------------ side panel
  function renderCrumbs() {
    const c = COMPS[state.comp];
    const cr = $("crumbs");
    cr.textContent = "";
    if (state.history.length) {
      const back = document.createElement("a");
      back.textContent = "← back ";
      back.onclick = () => { const h = state.history.pop(); openComputation(h.comp, { remember: false }); $("viewport").scrollTop = h.scroll; refresh(); };
      cr.appendChild(back);
    }
    cr.appendChild(document.createTextNode("%" + c.name + (c.entry ? " (ENTRY)" : "")));
  }
  function renderComputationList() {
    const ul = $("computations");
    ul.textContent = "";
    const item = (c) => {
      const li = document.createElement("li");
      if (c === state.comp) li.className = "current";
      const a = document.createElement("a");
      a.textContent = "%" + COMPS[c].name;
      a.onclick = () => openComputation(c);
      li.appendChild(a);
      const tag = document.createElement("span");
      tag.className = "tag";
      tag.textContent = (COMPS[c].entry ? "ENTRY, " : "") + COMPS[c].i.length;
      li.appendChild(tag);
      return li;
    };
    const order = COMPS.map((_, c) => c).sort((p, q) => (COMPS[q].entry - COMPS[p].entry));
    const fused = order.filter(isFusedOnly);
    for (const c of order) if (!isFusedOnly(c)) ul.appendChild(item(c));
    if (fused.length) {
      const det = document.createElement("details");
      const sum = document.createElement("summary");
      sum.textContent = `fused computations (${fused.length})`;
      det.appendChild(sum);
      for (const c of fused.slice(0, 2000)) det.appendChild(item(c));
      ul.appendChild(det);
    }
  }
  function link(text, onclick) { const a = document.createElement("a"); a.textContent = text; a.onclick = onclick; return a; }
  function showDetails(key) {
    const d = $("details");
    d.textContent = "";
    const last = key.split("/").pop();
    const idx = +(last.split("#")[0]);
    if (!INSTS[idx]) return;
    const inst = INSTS[idx];
    const h = document.createElement("h4");
    h.textContent = "%" + inst.n;
    d.appendChild(h);
    const dl = document.createElement("dl");
    const row = (k, v) => { if (v === undefined || v === "" || v === null) return; const dt = document.createElement("dt"); dt.textContent = k; const dd = document.createElement("dd"); if (v instanceof Node) dd.appendChild(v); else dd.textContent = v; dl.append(dt, dd); };
    row("opcode", inst.o + (inst.x ? " (" + inst.x + ")" : ""));
    row("shape", inst.s);
    row("attributes", inst.t);
    row("value", inst.v);
    row("op_name", inst.m);
    row("source", inst.f);
    row("HLO line", inst.l !== undefined ? (DATA.source ? DATA.source + ":" : "line ") + inst.l : "");
    row("in", "%" + COMPS[inst.c].name);
    const list = (items, context) => {
      const span = document.createElement("span");
      items.forEach((o, n) => { if (n) span.appendChild(document.createTextNode(", ")); span.appendChild(link("%" + INSTS[o].n, () => jumpTo(o, context))); });
      return items.length ? span : "(none)";
    };
    row("operands", list(inst.a, key));
    row("users", list(USERS[idx], key));
    if (inst.k) {
      const span = document.createElement("span");
      inst.k.forEach((c, n) => { if (n) span.appendChild(document.createTextNode(", ")); span.appendChild(link("%" + COMPS[c].name, () => openComputation(c))); });
      row("calls", span);
    }
    if (inst.o === "parameter" && COMPS[inst.c].callers.length) row("called by", list(COMPS[inst.c].callers.slice(0, 20), null));
    d.appendChild(dl);
    if (expandable(idx) && !key.includes("#")) {
      const exp = expandedSet(state.comp).has(key);
      const b = document.createElement("button");
      b.textContent = exp ? "collapse" : "expand in place";
      b.onclick = () => { toggle(key); showDetails(key); };
      d.appendChild(b);
    }
  }
  function showTooltip(ev, idx, kind) {
    const inst = INSTS[idx], tip = $("tooltip");
    const esc = (s) => String(s).replace(/[&<>"]/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[ch]));
    let html = `<b>%${esc(inst.n)}</b> <span class="k">${esc(inst.o)}${inst.x ? " (" + esc(inst.x) + ")" : ""}</span><br><code>${esc(inst.s)}</code>`;
    if (inst.t) html += `<br><span class="k">attributes</span> <code>${esc(inst.t)}</code>`;
    if (inst.v) html += `<br><span class="k">value</span> <code>${esc(inst.v)}</code>`;
    if (inst.m) html += `<br><span class="k">op_name</span> ${esc(inst.m)}`;
    if (inst.f) html += `<br><span class="k">source</span> ${esc(inst.f)}`;
    if (inst.l !== undefined) html += `<br><span class="k">HLO line</span> ${esc(DATA.source ? DATA.source + ":" : "")}${inst.l}`;
    if (kind === "stub") html += `<br><span class="k">defined in another block: click to jump there</span>`;
    tip.innerHTML = html;
    tip.hidden = false;
    const x = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    const y = Math.min(ev.clientY + 14, window.innerHeight - tip.offsetHeight - 8);
    tip.style.left = x + "px"; tip.style.top = y + "px";
  }

  // ------------------------------------------------------------------ search
  let results = [];
  function search(q) {
    q = q.trim().toLowerCase();
    if (!q) return [];
    const out = [];
    for (let i = 0; i < INSTS.length; i++) {
      const inst = INSTS[i];
      if (inst.n.toLowerCase().includes(q) || inst.o === q || inst.o.includes(q) || (inst.m && inst.m.toLowerCase().includes(q))) out.push(i);
    }
    const exact = (i) => (INSTS[i].n.toLowerCase() === q ? 0 : INSTS[i].o === q ? 1 : 2);
    out.sort((p, r) => exact(p) - exact(r) || p - r);
    return out;
  }
  function renderResults(q) {
    results = search(q);
    const box = $("results");
    box.textContent = "";
    if (!q.trim()) return;
    const count = document.createElement("div");
    count.className = "count";
    count.textContent = results.length ? `${results.length} match${results.length > 1 ? "es" : ""}` + (results.length > 300 ? " (first 300 shown)" : "") : "no match";
    box.appendChild(count);
    for (const i of results.slice(0, 300)) {
      const r = document.createElement("div");
      r.className = "result";
      r.dataset.inst = i;
      r.textContent = `%${INSTS[i].n} — ${INSTS[i].o}` + (INSTS[i].m ? ` — ${INSTS[i].m}` : "") + `  in %${COMPS[INSTS[i].c].name}`;
      r.onclick = () => { state.found = null; jumpTo(i); const w = locate(i); state.found = w.key; markSelection(); };
      box.appendChild(r);
    }
  }

  // ------------------------------------------------------------------ events
  function nodeOf(target) { return target.closest && target.closest(".node"); }
  function init() {
    $("title").innerHTML = "";
    $("title").appendChild(document.createTextNode("HloModule " + DATA.module));
    const small = document.createElement("small");
    small.textContent = `${INSTS.length} instructions, ${COMPS.length} computations` + (DATA.source ? ` — ${DATA.source}` : "");
    $("title").appendChild(small);
    const defs = document.createElementNS(SVGNS, "svg");
    defs.setAttribute("width", 0); defs.setAttribute("height", 0); defs.style.position = "absolute";
    defs.innerHTML = '<defs><marker id="hlo-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#8c959f"/></marker></defs>';
    document.body.appendChild(defs);
    const vp = $("viewport");
    vp.addEventListener("scroll", schedule);
    window.addEventListener("resize", schedule);
    const canvas = $("canvas");
    canvas.addEventListener("click", (ev) => {
      const t = ev.target.closest(".toggle");
      if (t) { ev.stopPropagation(); toggle(t.dataset.toggle); return; }
      const n = nodeOf(ev.target);
      if (!n) return;
      const idx = +n.dataset.inst;
      if (n.dataset.kind === "stub") { jumpTo(idx); return; }
      state.selected = n.dataset.key;
      markSelection();
      showDetails(n.dataset.key);
    });
    canvas.addEventListener("dblclick", (ev) => {
      const n = nodeOf(ev.target);
      if (n && n.dataset.kind === "inst" && expandable(+n.dataset.inst)) toggle(n.dataset.key);
      else if (n && n.dataset.kind === "inst" && INSTS[+n.dataset.inst].k) openComputation(INSTS[+n.dataset.inst].k[0]);
    });
    canvas.addEventListener("mouseover", (ev) => { const n = nodeOf(ev.target); if (n) showTooltip(ev, +n.dataset.inst, n.dataset.kind); });
    canvas.addEventListener("mousemove", (ev) => { const n = nodeOf(ev.target); if (n) showTooltip(ev, +n.dataset.inst, n.dataset.kind); });
    canvas.addEventListener("mouseout", (ev) => { if (nodeOf(ev.target)) $("tooltip").hidden = true; });
    const input = $("search");
    input.addEventListener("input", () => renderResults(input.value));
    input.addEventListener("keydown", (ev) => { if (ev.key === "Enter" && results.length) { const r = $("results").querySelector(".result"); if (r) r.click(); } });
    const zoom = (f) => { const vp2 = $("viewport"), mid = (vp2.scrollTop + vp2.clientHeight / 2) / state.zoom; state.zoom = Math.min(3, Math.max(0.15, state.zoom * f)); redraw(); vp2.scrollTop = mid * state.zoom - vp2.clientHeight / 2; refresh(); };
    $("zoom-in").onclick = () => zoom(1.25);
    $("zoom-out").onclick = () => zoom(0.8);
    vp.addEventListener("wheel", (ev) => { if (ev.ctrlKey) { ev.preventDefault(); zoom(ev.deltaY < 0 ? 1.1 : 0.9); } }, { passive: false });
    $("expand-all").onclick = () => {
      const exp = expandedSet(state.comp);
      for (const b of state.blocks) if (b.el) for (const i of b.items) if (INSTS[i].o === "fusion" && expandable(i)) exp.add(String(i));
      rebuildKeepingScroll();
    };
    $("collapse-all").onclick = () => { expandedSet(state.comp).clear(); rebuildKeepingScroll(); };
    openComputation(DATA.entry, { remember: false });
    state.ready = true;
  }

  // ------------------------------------------------------------------ the test interface
  window.hloGraph = {
    get ready() { return state.ready; },
    errors,
    state: () => ({ comp: COMPS[state.comp].name, blocks: state.blocks.length, laidOut: state.blocks.filter((b) => b.layout).length,
      drawnNodes: document.querySelectorAll("#canvas .node").length, selected: state.selected, layouts: state.layouts }),
    search: (q) => search(q).map((i) => INSTS[i].n),
    open: (name) => { const c = COMPS.findIndex((x) => x.name === name); if (c >= 0) openComputation(c); return c >= 0; },
    reveal: (name) => { const i = INSTS.findIndex((x) => x.n === name); if (i >= 0) jumpTo(i); return i >= 0; },
    toggle: (name) => { const i = COMPS[state.comp].i.find((j) => INSTS[j].n === name); if (i === undefined) return false; toggle(String(i)); return true; },
    computations: () => COMPS.map((c) => c.name),
    expandAll: () => {      // every expandable node of the current view, nested ones too
      const exp = expandedSet(state.comp);
      const visit = (i, key) => { if (!expandable(i)) return; exp.add(key); for (const c of INSTS[i].k) for (const j of COMPS[c].i) visit(j, key + "/" + j); };
      for (const i of COMPS[state.comp].i) visit(i, String(i));
      rebuildKeepingScroll();
      return exp.size;
    },
  };
  try { init(); } catch (e) { errors.push(String(e && e.stack || e)); throw e; }
})();
