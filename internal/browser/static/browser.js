// lake catalog browser: talks to /api/ with the bearer token of the
// tenant picked above. No framework, no build step, no network beyond
// this server. Data is inserted as text, never as HTML.
"use strict";
(function () {
  const PAGE = 100;
  const $ = (id) => document.getElementById(id);
  let token = "";
  let nsOffset = 0, tablesOffset = 0, currentNS = null;
  // tablesAsked counts table-list requests: an answer that arrives after a
  // later request was made is dropped, so the last click wins.
  let tablesAsked = 0;

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v == null) continue;
      if (k === "class") e.className = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
    }
    for (const k of kids) if (k != null) e.append(k);
    return e;
  }

  function showError(msg) { const e = $("error"); e.textContent = msg || ""; e.hidden = !msg; }

  async function api(path, opts) {
    // X-Lake-Request: local mode takes a POST from this page by its Origin,
    // and from a client without one by this header.
    const headers = token ? { Authorization: "Bearer " + token, "X-Lake-Request": "1" } : { "X-Lake-Request": "1" };
    const r = await fetch(path, Object.assign({ headers }, opts || {}));
    const body = await r.json().catch(() => ({}));
    if (!r.ok) {
      const e = new Error((body.error && body.error.message) || ("HTTP " + r.status));
      e.code = body.error && body.error.code;
      throw e;
    }
    return body;
  }

  function escapeLike(s) { return s.replace(/[\\%_]/g, (c) => "\\" + c); }

  function pager(id, offset, total, go) {
    const p = $(id);
    p.replaceChildren();
    if (total <= PAGE) { p.append(total + " in all"); return; }
    const prev = el("button", { type: "button", onclick: () => go(Math.max(0, offset - PAGE)) }, "Previous");
    prev.disabled = offset === 0;
    const next = el("button", { type: "button", onclick: () => go(offset + PAGE) }, "Next");
    next.disabled = offset + PAGE >= total;
    p.append(prev, (offset + 1) + "–" + Math.min(offset + PAGE, total) + " of " + total, next);
  }

  async function loadNamespaces(offset) {
    nsOffset = offset;
    const a = await api("/api/namespaces?offset=" + offset + "&limit=" + PAGE);
    const ul = $("namespaces");
    ul.replaceChildren();
    const all = el("button", { type: "button", class: "link", onclick: () => loadTables(null, 0) }, "All namespaces");
    ul.append(el("li", {}, all));
    for (const n of a.namespaces) {
      const count = el("span", { class: "count", title: n.tables + (n.tables === 1 ? " table" : " tables") }, String(n.tables));
      ul.append(el("li", {}, el("button", { type: "button", class: "link", "data-ns": n.name, onclick: () => loadTables(n.name, 0) }, n.name), count));
    }
    if (a.namespaces.length === 0) ul.append(el("li", { class: "muted" }, "This tenant has no tables."));
    pager("ns-pager", offset, a.total, (o) => loadNamespaces(o).catch((e) => showError(e.message)));
  }

  async function loadTables(ns, offset) {
    currentNS = ns; tablesOffset = offset;
    for (const b of $("namespaces").querySelectorAll("button")) b.setAttribute("aria-current", String(b.dataset.ns === (ns == null ? undefined : ns)));
    let q = "/api/tables?offset=" + offset + "&limit=" + PAGE;
    if (ns != null) q += "&namespace=" + encodeURIComponent(ns);
    const asked = ++tablesAsked;
    const a = await api(q);
    if (asked !== tablesAsked) return;
    $("tables-heading").textContent = ns == null ? "Tables" : "Tables in " + ns;
    const ul = $("tables");
    ul.replaceChildren();
    for (const t of a.tables) {
      const open = el("button", { type: "button", class: "link", onclick: () => openTable(t.namespace, t.name).catch((e) => showError(e.message)) }, ns == null ? t.namespace + "." + t.name : t.name);
      const cols = t.columns < 0 ? "no schema stored" : t.columns + (t.columns === 1 ? " column" : " columns");
      const desc = t.description ? el("p", { class: "desc" }, t.description + (t.description_truncated ? "…" : "")) : null;
      ul.append(el("li", {}, open, el("div", { class: "meta" }, cols + " · " + t.table_type), desc));
    }
    if (a.tables.length === 0) ul.append(el("li", { class: "muted" }, "No tables."));
    pager("tables-pager", offset, a.total, (o) => loadTables(currentNS, o).catch((e) => showError(e.message)));
  }

  function metadataList(md) {
    if (!md) return null;
    const dl = el("dl", { class: "md" });
    for (const k of Object.keys(md).sort()) dl.append(el("dt", {}, k), el("dd", {}, md[k]));
    return dl;
  }

  function tree(fields) {
    const ul = el("ul", {});
    for (const f of fields) {
      const typ = el("span", { class: "typecell" }, el("code", { class: "type" }, f.type));
      if (!f.nullable) typ.append(" ", el("span", { class: "nn", title: "not nullable" }, "NOT NULL"));
      const label = [el("strong", {}, f.name), " ", typ];
      if (f.comment) label.push(el("span", { class: "comment" }, f.comment));
      let md = null;
      if (f.metadata) {
        const rest = Object.assign({}, f.metadata);
        delete rest["ARROW:FLIGHT:SQL:REMARKS"];
        if (Object.keys(rest).length) md = metadataList(rest);
      }
      let node;
      if (f.children) {
        node = el("details", { open: "" }, el("summary", { class: "row" }, ...label), md, tree(f.children));
      } else {
        node = el("div", {}, el("div", { class: "row" }, ...label), md);
      }
      ul.append(el("li", {}, node));
    }
    return ul;
  }

  // about is the table's description, properties, location, version and
  // times, as discovery's describe action gave them.
  function about(t) {
    if (t.describe_error) return [el("p", { class: "muted" }, t.describe_error)];
    const out = [];
    if (t.description) out.push(el("p", { class: "description" }, t.description));
    const facts = el("dl", { class: "facts" });
    const fact = (k, v) => { if (v != null && v !== "") facts.append(el("dt", {}, k), el("dd", {}, v)); };
    fact("Location", t.location ? el("code", {}, t.location) : null);
    fact("Version", t.version ? String(t.version) : null);
    fact("Created", t.created_at ? when(t.created_at) : null);
    fact("Updated", t.updated_at ? when(t.updated_at) : null);
    out.push(facts);
    if (t.properties) {
      const props = el("dl", { class: "props" });
      for (const k of Object.keys(t.properties).sort()) props.append(el("dt", {}, k), el("dd", {}, t.properties[k]));
      out.push(el("h3", {}, "Properties"), props);
    }
    return out;
  }

  // historyView is the table's kept versions, newest first, each with
  // who made it and what it changed from the one before.
  async function historyView(ns, name) {
    const h = await api("/api/history?namespace=" + encodeURIComponent(ns) + "&name=" + encodeURIComponent(name));
    const sec = el("section", { class: "history", "aria-labelledby": "history-heading" }, el("h3", { id: "history-heading" }, "History"));
    if (!h.available) { sec.append(el("p", { class: "muted" }, h.note)); return sec; }
    const ol = el("ol", { class: "versions", reversed: "" });
    for (const v of h.versions) {
      const head = el("p", { class: "version-head" }, el("strong", {}, "v" + v.version), " " + (v.op || "change") + " by " + (v.by || "unknown") + " · ", when(v.at),
        " · " + (v.columns < 0 ? "no schema" : v.columns + (v.columns === 1 ? " column" : " columns")));
      const item = el("li", {}, head);
      if (v.changes.length) item.append(el("ul", { class: "changes" }, ...v.changes.map((c) => el("li", {}, el("code", {}, c)))));
      ol.append(item);
    }
    sec.append(ol);
    return sec;
  }

  // previewHints say what to do about a preview the API refused, by its
  // code.
  const previewHints = {
    vending_not_configured: "lake reads a table's files only where it may: start lake local with --data-root DIR for tables under DIR, or --vending-role-arn for s3:// tables.",
    location_not_allowed: "The table's location is outside what lake may read for this tenant; an operator allows a prefix with lake tenant allow-prefix.",
    schema_mismatch: "A file at the table's location does not have the registered schema; rows are never cast to fit. Fix the file or update the schema.",
    preview_limit: "Ask for fewer rows; a preview is bounded so it never becomes a query.",
    not_implemented: "Preview the rows with lake preview.",
  };

  // cellText is a row value as a cell shows it: null, text as it is,
  // nested values as JSON.
  function cellText(v) {
    if (v === null) return null;
    if (typeof v === "string") return v;
    if (typeof v === "number" || typeof v === "boolean") return String(v);
    return JSON.stringify(v);
  }

  function plural(n, what) { return n.toLocaleString("en") + " " + what + (n === 1 ? "" : "s"); }

  // loadPreview fills panel with the table's first rows (limit of them):
  // typed column headers, the rows, and what reading them took; or the
  // API's refusal as a message.
  async function loadPreview(panel, ns, name, limit) {
    const out = panel.querySelector(".preview-out");
    out.replaceChildren(el("p", { class: "muted" }, "Reading the first rows…"));
    out.setAttribute("aria-busy", "true");
    try {
      const p = await api("/api/preview?namespace=" + encodeURIComponent(ns) + "&name=" + encodeURIComponent(name) + "&limit=" + limit);
      const head = el("tr", {});
      for (const c of p.columns) {
        head.append(el("th", { scope: "col" }, el("span", { class: "col-name" }, c.name), el("code", { class: "type" }, c.type + (c.nullable ? "" : " not null"))));
      }
      const body = el("tbody", {});
      for (const row of p.rows) {
        const tr = el("tr", {});
        for (const v of row) {
          const t = cellText(v);
          tr.append(t === null ? el("td", { class: "null" }, "null") : el("td", { title: t.length > 60 ? t : null }, t.length > 60 ? t.slice(0, 60) + "…" : t));
        }
        body.append(tr);
      }
      const s = p.stats;
      const stats = plural(p.rows.length, "row") + " (limit " + p.limit + (p.truncated ? "; more follow" : "") + ") · " + plural(s.files_opened, "file") + ", " +
        plural(s.row_groups_read, "row group") + " read, " + s.row_groups_skipped + " skipped, " + plural(s.bytes_read, "byte") + " read";
      const table = el("table", { class: "rows" }, el("caption", {}, "First rows of " + ns + "." + name), el("thead", {}, head), body);
      out.replaceChildren(el("p", { class: "stats" }, stats),
        el("div", { class: "rows-scroll", tabindex: "0", role: "region", "aria-label": "Rows of " + ns + "." + name }, table));
      if (!p.rows.length) out.append(el("p", { class: "muted" }, "The table's location holds no rows."));
    } catch (e) {
      const box = el("div", { class: "preview-error", role: "status" }, el("strong", {}, "No preview: "), e.message);
      if (previewHints[e.code]) box.append(el("p", {}, previewHints[e.code]));
      out.replaceChildren(box);
    } finally {
      out.removeAttribute("aria-busy");
    }
  }

  // previewPanel is the Preview tab's panel: the row limit and the rows,
  // read when the tab is first shown.
  function previewPanel(ns, name) {
    const select = el("select", { id: "preview-limit" });
    for (const n of [10, 100, 1000]) select.append(el("option", { value: String(n) }, String(n)));
    select.value = "100";
    const panel = el("div", { id: "panel-preview", role: "tabpanel", "aria-labelledby": "tab-preview", class: "preview", hidden: "" },
      el("form", { class: "preview-controls", onsubmit: (ev) => ev.preventDefault() }, el("label", { for: "preview-limit" }, "Rows"), select),
      el("div", { class: "preview-out", "aria-live": "polite" }));
    select.addEventListener("change", () => loadPreview(panel, ns, name, select.value));
    panel.load = () => { if (!panel.loaded) { panel.loaded = true; loadPreview(panel, ns, name, select.value); } };
    return panel;
  }

  // tabs shows one of panels at a time under a tablist of their names
  // (the ARIA tabs pattern: arrow keys move between tabs).
  function tabs(named) {
    const list = el("div", { role: "tablist", "aria-label": "Table views", class: "tabs" });
    const buttons = [];
    const pick = (i, focus) => {
      named.forEach(([, panel], j) => { panel.hidden = i !== j; });
      buttons.forEach((b, j) => { b.setAttribute("aria-selected", String(i === j)); b.tabIndex = i === j ? 0 : -1; });
      if (focus) buttons[i].focus();
      if (named[i][1].load) named[i][1].load();
    };
    named.forEach(([label, panel], i) => {
      const id = panel.getAttribute("aria-labelledby");
      const b = el("button", { type: "button", role: "tab", id, "aria-controls": panel.id, onclick: () => pick(i, false) }, label);
      b.addEventListener("keydown", (ev) => {
        const n = buttons.length;
        const to = { ArrowRight: (i + 1) % n, ArrowLeft: (i + n - 1) % n, Home: 0, End: n - 1 }[ev.key];
        if (to !== undefined) { ev.preventDefault(); pick(to, true); }
      });
      buttons.push(b);
      list.append(b);
    });
    pick(0, false);
    return list;
  }

  function when(iso) { return el("time", { datetime: iso }, iso.replace("T", " ").replace(/\.\d+/, "")); }

  async function openTable(ns, name) {
    const t = await api("/api/table?namespace=" + encodeURIComponent(ns) + "&name=" + encodeURIComponent(name));
    const d = $("detail");
    let sub = "tenant " + t.tenant + " · " + t.table_type;
    if (t.schema) sub += " · " + t.schema.fields.length + (t.schema.fields.length === 1 ? " column" : " columns");
    // The Schema tab: what the catalog knows; the Preview tab: the rows.
    const schema = el("div", { id: "panel-schema", role: "tabpanel", "aria-labelledby": "tab-schema" });
    schema.append(...about(t));
    if (t.legacy) {
      schema.append(el("p", { class: "legacy" }, "Legacy table: no schema stored. ", el("code", {}, t.fix)));
    } else {
      schema.append(el("h3", {}, "Schema"), el("div", { class: "tree" }, tree(t.schema.fields)));
      if (t.schema.metadata) schema.append(el("h3", {}, "Schema metadata"), metadataList(t.schema.metadata));
    }
    try { schema.append(await historyView(t.namespace, t.name)); } catch (e) { schema.append(el("p", { class: "muted" }, "History: " + e.message)); }
    const preview = previewPanel(t.namespace, t.name);
    d.replaceChildren(el("h2", { tabindex: "-1" }, t.namespace + "." + t.name), el("p", { class: "subtitle" }, sub),
      tabs([["Schema", schema], ["Preview", preview]]), schema, preview);
    d.querySelector("h2").focus();
  }

  async function search(ev) {
    ev.preventDefault();
    const q = $("search").value.trim();
    if (!q) return;
    const by = $("search-by").value;
    const a = await api("/api/search?" + by + "=" + encodeURIComponent("%" + escapeLike(q) + "%"));
    const d = $("detail");
    const ul = el("ul", { class: "results" });
    for (const m of a.matches) {
      const cols = m.columns.map((c) => c.path).join(", ");
      ul.append(el("li", {}, el("button", { type: "button", class: "link", onclick: () => openTable(m.namespace, m.table).catch((e) => showError(e.message)) }, m.namespace + "." + m.table), cols ? el("span", { class: "muted" }, " — " + cols) : null));
    }
    d.replaceChildren(el("h2", { tabindex: "-1" }, "Search: " + by + " like “" + q + "”"), a.matches.length ? ul : el("p", {}, "No matches."));
    if (a.truncated) d.append(el("p", { class: "muted" }, "Only the first matches are shown; narrow the search."));
    d.querySelector("h2").focus();
  }

  async function snapshot() {
    const s = await api("/api/snapshot");
    let txt = "generation " + s.generation + " · " + s.tables + " tables";
    if (s.created_at) txt += " · updated " + Math.round(s.age_seconds) + " s ago (" + s.created_at + ")";
    $("snapshot").textContent = txt;
  }

  async function open(ev) {
    ev.preventDefault();
    showError("");
    try {
      if (!$("dev-tenants").hidden) {
        const t = await api("/api/dev-token?tenant=" + encodeURIComponent($("tenant").value), { method: "POST" });
        token = t.token;
      } else {
        token = $("token").value.trim();
      }
      await Promise.all([snapshot(), loadNamespaces(0), loadTables(null, 0)]);
      $("detail").replaceChildren(el("p", {}, "Pick a table, or search by table or column name."));
      $("main").hidden = false;
    } catch (e) {
      $("main").hidden = true;
      showError(e.message);
    }
  }

  async function init() {
    $("tenant-form").addEventListener("submit", open);
    $("search-form").addEventListener("submit", (ev) => search(ev).catch((e) => showError(e.message)));
    try {
      const c = await api("/api/config");
      if (c.dev_tenants.length) {
        for (const t of c.dev_tenants) $("tenant").append(el("option", { value: t }, t));
        $("dev-tenants").hidden = false;
        $("paste-token").hidden = true;
      }
    } catch (e) { showError(e.message); }
  }
  init();
})();
