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
    if (!r.ok) throw new Error((body.error && body.error.message) || ("HTTP " + r.status));
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

  function when(iso) { return el("time", { datetime: iso }, iso.replace("T", " ").replace(/\.\d+/, "")); }

  async function openTable(ns, name) {
    const t = await api("/api/table?namespace=" + encodeURIComponent(ns) + "&name=" + encodeURIComponent(name));
    const d = $("detail");
    let sub = "tenant " + t.tenant + " · " + t.table_type;
    if (t.schema) sub += " · " + t.schema.fields.length + (t.schema.fields.length === 1 ? " column" : " columns");
    d.replaceChildren(el("h2", { tabindex: "-1" }, t.namespace + "." + t.name), el("p", { class: "subtitle" }, sub));
    d.append(...about(t));
    if (t.legacy) {
      d.append(el("p", { class: "legacy" }, "Legacy table: no schema stored. ", el("code", {}, t.fix)));
    } else {
      d.append(el("h3", {}, "Schema"), el("div", { class: "tree" }, tree(t.schema.fields)));
      if (t.schema.metadata) d.append(el("h3", {}, "Schema metadata"), metadataList(t.schema.metadata));
    }
    try { d.append(await historyView(t.namespace, t.name)); } catch (e) { d.append(el("p", { class: "muted" }, "History: " + e.message)); }
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
