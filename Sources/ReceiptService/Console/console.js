// receiptd console (Docs/console.md). One script, no framework, no build step.
//
// Safety: every value from the API is written with text nodes or attributes (`el` below), never
// as HTML, and the page is served with a Content-Security-Policy allowing only this script. The
// secret key lives in sessionStorage: this tab only, gone when it closes.
"use strict";

(function () {
  const KEY = "receiptd.key";
  const SVG = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);

  // ---- DOM: elements from data, never from HTML strings ----------------------------------

  /** el("td", {class: "num"}, "3") — children are nodes or strings (text), attributes are set as such. */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === false || value === null || value === undefined) continue;
      if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    append(node, children);
    return node;
  }

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
    append(node, children);
    return node;
  }

  function append(node, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    }
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }

  function say(text) { $("status").textContent = text; if (text) setTimeout(() => { if ($("status").textContent === text) $("status").textContent = ""; }, 6000); }

  const when = (t) => (t ? t.replace("T", " ").replace(/\.\d+Z$/, " UTC") : "—");
  const show = (v) => (v === null || v === undefined || v === "" ? "—" : typeof v === "boolean" ? (v ? "yes" : "no") : String(v));

  function table(headers, rows, numeric) {
    numeric = numeric || [];
    return el("div", { class: "scroll" },
      el("table", {},
        el("thead", {}, el("tr", {}, headers.map((h, i) => el("th", { scope: "col", class: numeric.includes(i) ? "num" : null }, h)))),
        el("tbody", {}, rows.length === 0
          ? el("tr", {}, el("td", { colspan: headers.length, class: "muted" }, "None."))
          : rows.map((r) => el("tr", {}, r.map((c, i) => el("td", { class: numeric.includes(i) ? "num" : null }, c)))))));
  }

  function badge(active) { return el("span", { class: "badge " + (active ? "on" : "off") }, active ? "Active" : "Inactive"); }

  function facts(object) {
    return el("dl", {}, Object.keys(object || {}).sort().map((k) => [el("dt", {}, k), el("dd", {}, show(object[k]))]));
  }

  // ---- API -----------------------------------------------------------------------------

  class APIError extends Error {
    constructor(status, body) {
      super((body && body.error && body.error.message) || "HTTP " + status);
      this.status = status;
      this.code = body && body.error && body.error.code;
    }
  }

  /** The key as the API takes it, for every call the console makes. */
  const authorization = () => ({ Authorization: "Bearer " + sessionStorage.getItem(KEY) });

  async function api(method, path, body) {
    const headers = authorization();
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    let json = null;
    try { json = text ? JSON.parse(text) : null; } catch (e) { json = null; }
    if (response.status === 401) { logout("The key was refused."); throw new APIError(401, json); }
    if (!response.ok) throw new APIError(response.status, json);
    return json;
  }

  const enc = encodeURIComponent;

  // ---- Log in / out, routing -------------------------------------------------------------

  function logout(message) {
    sessionStorage.removeItem(KEY);
    $("nav").hidden = true;
    clear($("page"));
    $("login").hidden = false;
    $("login-error").textContent = message || "";
    $("key").value = "";
    $("key").focus();
  }

  async function login(event) {
    event.preventDefault();
    const key = $("key").value.trim();
    if (!key) return;
    sessionStorage.setItem(KEY, key);
    try {
      await api("GET", "/v1/admin/stats?interval=day&from=" + new Date(Date.now() - 864e5).toISOString());
      $("key").value = "";
      start();
    } catch (e) {
      sessionStorage.removeItem(KEY);
      $("login-error").textContent = e.status === 403 ? "That key is not a secret key." : "Log in failed: " + e.message;
    }
  }

  function start() {
    $("login").hidden = true;
    $("nav").hidden = false;
    route();
  }

  const pages = { overview, revenue, growth, customer, notifications, shared, webhooks, extensions, offerings };

  function route() {
    if (!sessionStorage.getItem(KEY)) return logout();
    const parts = location.hash.replace(/^#\/?/, "").split("/");
    const name = pages[parts[0]] ? parts[0] : "overview";
    const argument = parts.slice(1).join("/");
    for (const a of document.querySelectorAll("nav a")) {
      if (a.dataset.page === name) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
    }
    const page = clear($("page"));
    document.body.dataset.ready = "";
    const started = performance.now();
    pages[name](page, argument ? decodeURIComponent(argument) : "")
      .then(() => ready(name, started))
      .catch((e) => { page.appendChild(el("p", { class: "error", role: "alert" }, e.message)); ready(name, started); });
  }

  /** Marks a page as drawn: the browser tests wait for it and read how long it took. */
  function ready(name, started) {
    document.body.dataset.ready = name;
    document.body.dataset.renderMs = String(Math.round(performance.now() - started));
    // Since the navigation started: the whole load, page and data.
    document.body.dataset.readyAt = String(Math.round(performance.now()));
  }

  // ---- Overview ----------------------------------------------------------------------------

  const MARKERS = ["circle", "square", "triangle", "diamond", "cross", "circle-open", "square-open", "triangle-open", "bar"];
  const COLOURS = ["#0b57d0", "#b3261e", "#146c2e", "#7d4e00", "#6b3fa0", "#00696b", "#8c1d18", "#3b3f44", "#9a6700"];
  const DASHES = ["", "6 3", "2 3", "8 3 2 3", "1 2", "10 4", "4 4", "3 6", "12 2"];

  function marker(kind, x, y, colour, title) {
    const open = kind.endsWith("-open");
    const shape = kind.replace("-open", "");
    const fill = open ? "#fff" : colour;
    let node;
    if (shape === "circle") node = svg("circle", { cx: x, cy: y, r: 4, fill, stroke: colour, "stroke-width": 2 });
    else if (shape === "square") node = svg("rect", { x: x - 4, y: y - 4, width: 8, height: 8, fill, stroke: colour, "stroke-width": 2 });
    else if (shape === "triangle") node = svg("path", { d: `M${x} ${y - 5}L${x + 5} ${y + 4}L${x - 5} ${y + 4}Z`, fill, stroke: colour, "stroke-width": 2 });
    else if (shape === "diamond") node = svg("path", { d: `M${x} ${y - 5}L${x + 5} ${y}L${x} ${y + 5}L${x - 5} ${y}Z`, fill, stroke: colour, "stroke-width": 2 });
    else if (shape === "cross") node = svg("path", { d: `M${x - 4} ${y - 4}L${x + 4} ${y + 4}M${x + 4} ${y - 4}L${x - 4} ${y + 4}`, stroke: colour, "stroke-width": 2.5 });
    else node = svg("rect", { x: x - 1.5, y: y - 5, width: 3, height: 10, fill: colour });
    if (title) node.appendChild(svg("title", {}, title));
    return node;
  }

  /** A line chart of `series` ({name, values}) over `labels`: markers, dashes and colours per series, a <title> per point. */
  function lineChart(labels, series, caption) {
    const W = 760, H = 260, L = 44, R = 12, T = 12, B = 36;
    const max = Math.max(1, ...series.flatMap((s) => s.values));
    const x = (i) => L + (labels.length <= 1 ? 0 : (i * (W - L - R)) / (labels.length - 1));
    const y = (v) => T + (H - T - B) * (1 - v / max);
    const chart = svg("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": caption });
    chart.appendChild(svg("title", {}, caption));
    for (let k = 0; k <= 4; k++) {
      const v = Math.round((max * k) / 4);
      chart.appendChild(svg("line", { class: "axis", x1: L, x2: W - R, y1: y(v), y2: y(v) }));
      chart.appendChild(svg("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end" }, String(v)));
    }
    const step = Math.max(1, Math.ceil(labels.length / 8));
    labels.forEach((label, i) => {
      if (i % step === 0) chart.appendChild(svg("text", { x: x(i), y: H - 12, "text-anchor": "middle" }, label));
    });
    series.forEach((s, n) => {
      const colour = COLOURS[n % COLOURS.length];
      const d = s.values.map((v, i) => (i === 0 ? "M" : "L") + x(i) + " " + y(v)).join("");
      chart.appendChild(svg("path", { class: "series", d, stroke: colour, "stroke-dasharray": DASHES[n % DASHES.length] }));
      s.values.forEach((v, i) => chart.appendChild(marker(MARKERS[n % MARKERS.length], x(i), y(v), colour, `${labels[i]} · ${s.name}: ${v}`)));
    });
    const legend = el("div", { class: "legend", "aria-hidden": "true" }, series.map((s, n) => {
      const key = svg("svg", { width: 34, height: 12, viewBox: "0 0 34 12" },
        svg("line", { x1: 1, x2: 33, y1: 6, y2: 6, stroke: COLOURS[n % COLOURS.length], "stroke-width": 2, "stroke-dasharray": DASHES[n % DASHES.length] }),
        marker(MARKERS[n % MARKERS.length], 17, 6, COLOURS[n % COLOURS.length]));
      return el("span", {}, key, " ", s.name);
    }));
    return el("figure", { class: "card" }, el("figcaption", {}, el("h3", {}, caption)), legend, chart);
  }

  let stackedCharts = 0;

  /**
   * Stacked columns per label: each series ({name, values, sign}) stacked up from zero when its
   * sign is +1 and down when -1, a patterned fill per series as well as a colour, a <title> per
   * block, and `line` ({name, values}) drawn over them with markers (a movement's net).
   */
  function stackedBars(labels, series, caption, line) {
    const W = 760, H = 280, L = 64, R = 16, T = 12, B = 34;
    const ups = labels.map((_, i) => series.filter((s) => s.sign > 0).reduce((t, s) => t + Math.max(0, s.values[i]), 0));
    const downs = labels.map((_, i) => series.filter((s) => s.sign < 0).reduce((t, s) => t + Math.max(0, s.values[i]), 0));
    const top = Math.max(1, ...ups), bottom = Math.max(0, ...downs);
    const y = (v) => T + ((top - v) * (H - T - B)) / (top + bottom);
    const band = (W - L - R) / Math.max(1, labels.length);
    const chart = svg("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": caption });
    chart.appendChild(svg("title", {}, caption));
    const defs = svg("defs", {});
    const hatch = `hatch-${++stackedCharts}-`;
    series.forEach((s, n) => {
      const pattern = svg("pattern", { id: hatch + n, width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: `rotate(${(n * 45) % 180})` });
      pattern.appendChild(svg("rect", { width: 6, height: 6, fill: COLOURS[n % COLOURS.length] }));
      if (n % 2 === 1) pattern.appendChild(svg("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#fff", "stroke-width": 2 }));
      defs.appendChild(pattern);
    });
    chart.appendChild(defs);
    for (const v of [top, 0, -bottom]) {
      chart.appendChild(svg("line", { class: "axis", x1: L, x2: W - R, y1: y(v), y2: y(v) }));
      chart.appendChild(svg("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end" }, String(Math.round(v * 100) / 100)));
    }
    const step = Math.max(1, Math.ceil(labels.length / 12));
    labels.forEach((label, i) => {
      const x = L + i * band + band * 0.15, width = band * 0.7;
      let up = 0, down = 0;
      series.forEach((s, n) => {
        const v = Math.max(0, s.values[i]);
        if (!v) return;
        const [from, to] = s.sign > 0 ? [up, up + v] : [-down - v, -down];
        if (s.sign > 0) up += v; else down += v;
        const block = svg("rect", { x, y: y(to), width, height: Math.max(1, y(from) - y(to)), fill: `url(#${hatch}${n})`, stroke: "#fff", "stroke-width": 0.5 });
        block.appendChild(svg("title", {}, `${label} · ${s.name}: ${s.sign < 0 ? "−" : ""}${s.values[i]}`));
        chart.appendChild(block);
      });
      if (i % step === 0) chart.appendChild(svg("text", { x: x + width / 2, y: H - 12, "text-anchor": "middle" }, label));
    });
    if (line) {
      const points = line.values.map((v, i) => [L + i * band + band / 2, y(v)]);
      chart.appendChild(svg("path", { class: "series", d: points.map(([px, py], i) => `${i ? "L" : "M"}${px} ${py}`).join(""), stroke: "#1f1f1f" }));
      points.forEach(([px, py], i) => chart.appendChild(marker("diamond", px, py, "#1f1f1f", `${labels[i]} · ${line.name}: ${line.values[i]}`)));
    }
    const legend = el("div", { class: "legend", "aria-hidden": "true" }, series.map((s, n) =>
      el("span", {}, svg("svg", { width: 14, height: 12, viewBox: "0 0 14 12" }, svg("rect", { width: 14, height: 12, fill: `url(#${hatch}${n})` })),
        " ", `${s.name}${s.sign < 0 ? " (down)" : ""}`))
      .concat(line ? [el("span", {}, svg("svg", { width: 14, height: 12, viewBox: "0 0 14 12" }, marker("diamond", 7, 6, "#1f1f1f")), " ", line.name)] : []));
    return el("figure", { class: "card" }, el("figcaption", {}, el("h3", {}, caption)), legend, chart);
  }

  /** Horizontal bars with their number written beside each. */
  function barChart(items, caption) {
    const W = 760, row = 26, L = 260, R = 60;
    const H = Math.max(1, items.length) * row + 8;
    const max = Math.max(1, ...items.map((i) => i.value));
    const chart = svg("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": caption });
    chart.appendChild(svg("title", {}, caption));
    items.forEach((item, n) => {
      const y = 4 + n * row;
      const width = Math.max(2, ((W - L - R) * item.value) / max);
      chart.appendChild(svg("text", { x: L - 8, y: y + 16, "text-anchor": "end" }, item.label));
      const bar = svg("rect", { x: L, y: y + 3, width, height: row - 8, fill: COLOURS[n % COLOURS.length] });
      bar.appendChild(svg("title", {}, `${item.label}: ${item.value}`));
      chart.appendChild(bar);
      chart.appendChild(svg("text", { x: L + width + 6, y: y + 16 }, String(item.value)));
    });
    return el("figure", { class: "card" }, el("figcaption", {}, el("h3", {}, caption)), chart);
  }

  async function overview(page, argument) {
    const params = new URLSearchParams(argument || "");
    const days = Number(params.get("days")) || 30;
    const interval = params.get("interval") || (days > 120 ? "week" : "day");
    page.appendChild(el("h1", {}, "Overview"));
    const range = el("form", { class: "row card", "aria-label": "Range" },
      el("div", {}, el("label", { for: "days" }, "Range"),
        el("select", { id: "days" }, [7, 30, 90, 365].map((d) => el("option", { value: d, selected: d === days }, `Last ${d} days`)))),
      el("div", {}, el("label", { for: "interval" }, "Per"),
        el("select", { id: "interval" }, ["hour", "day", "week"].map((i) => el("option", { value: i, selected: i === interval }, i)))),
      el("button", { type: "submit" }, "Show"));
    range.addEventListener("submit", (e) => {
      e.preventDefault();
      location.hash = "#/overview/" + enc(`days=${$("days").value}&interval=${$("interval").value}`);
    });
    page.appendChild(range);
    const from = new Date(Date.now() - days * 864e5).toISOString();
    const stats = await api("GET", `/v1/admin/stats?from=${enc(from)}&interval=${enc(interval)}`);

    const subs = stats.subscribers;
    page.appendChild(el("h2", {}, "Subscribers now"));
    page.appendChild(el("p", { id: "subscriber-total" }, `${subs.total} subscribers`,
      subs.stale ? ` (${subs.stale} not yet re-derived, left out below)` : ""));
    const active = subs.products.filter((p) => p.state === "active");
    page.appendChild(barChart(active.map((p) => ({ label: `${p.product_id} (${p.kind})`, value: p.subscribers })), "Active subscribers by product"));
    page.appendChild(table(["Product", "Kind", "State", "Subscribers"],
      subs.products.map((p) => [p.product_id, p.kind, p.state, String(p.subscribers)]), [3]));
    page.lastChild.id = "products-table";

    page.appendChild(el("h2", {}, `Per ${stats.interval}, ${when(stats.from)} to ${when(stats.to)}`));
    const labels = stats.buckets.map((b) => (stats.interval === "hour" ? b.start.slice(5, 13).replace("T", " ") + "h" : b.start.slice(5, 10)));
    const groups = [
      ["Purchases", ["initial_purchase", "trial_started", "trial_converted", "renewal"]],
      ["Losses", ["cancellation", "billing_issue", "refund", "expiration"]],
    ];
    for (const [title, types] of groups) {
      page.appendChild(lineChart(labels, types.map((t) => ({ name: t, values: stats.buckets.map((b) => b.counts[t] || 0) })), title));
    }
    const types = stats.event_types;
    const totals = types.map((t) => stats.buckets.reduce((sum, b) => sum + (b.counts[t] || 0), 0));
    page.appendChild(el("h3", {}, "Events per " + stats.interval));
    const eventTable = table(["Start"].concat(types),
      stats.buckets.map((b) => [when(b.start)].concat(types.map((t) => String(b.counts[t] || 0))))
        .concat([["Total"].concat(totals.map(String))]),
      types.map((_, i) => i + 1));
    eventTable.id = "events-table";
    page.appendChild(eventTable);

    page.appendChild(el("h2", {}, "Notifications from Apple"));
    page.appendChild(table(["Type", "Outcome", "Count"], stats.notifications.map((n) => [n.type, n.outcome, String(n.count)]), [2]));
    page.appendChild(el("h2", {}, "Apple"));
    const circuit = stats.apple.circuit;
    page.appendChild(el("p", {}, "Circuit breaker: ", el("strong", {}, circuit ? circuit.circuit : "not configured"),
      circuit && circuit.retry_in_seconds ? ` (next probe in ${circuit.retry_in_seconds} s)` : ""));
    page.appendChild(table(["Exchange outcome", "Count"], stats.apple.verifications.map((v) => [v.outcome, String(v.count)]), [1]));
    const play = stats.google_play;
    page.appendChild(el("h2", {}, "Google Play"));
    page.appendChild(el("p", {}, "Acknowledgements owed to Google: ", el("strong", { id: "play-unacknowledged" }, String(play.unacknowledged)),
      play.oldest_unacknowledged_seconds === null ? "" : ` (oldest ${play.oldest_unacknowledged_seconds} s; Google refunds after three days)`,
      play.retrying ? `, ${play.retrying} failed at least once` : "", play.unconsumed ? `; consumptions owed: ${play.unconsumed}` : ""));
    page.appendChild(table(["Notification", "Outcome", "Count"], play.notifications.map((n) => [n.type, n.outcome, String(n.count)]), [2]));
    page.appendChild(el("h2", {}, "Webhook backlog"));
    page.appendChild(table(["Endpoint", "Pending", "Oldest pending (s)"],
      stats.webhooks.map((w) => [w.endpoint, String(w.pending), String(w.oldest_pending_seconds)]), [1, 2]));
  }

  // ---- Revenue -----------------------------------------------------------------------------

  // The charts the page draws, each with the measures it plots (the table shows every measure).
  const CHARTS = [
    ["revenue", "Revenue", ["gross", "net", "proceeds"]],
    ["mrr", "MRR", ["mrr"]],
    ["actives", "Active subscriptions and trials", ["subscriptions", "trials"]],
    ["trials", "New trials", ["new_trials"]],
    ["trial_conversion", "Trial conversion (by first seen)", ["converted", "pending", "abandoned"]],
    ["churn", "Churn", ["churned", "resubscribed"]],
    ["refund_rate", "Refunds", ["refunded_transactions", "paid_transactions"]],
  ];
  // Ratios are computed from other measures: their parts are drilled into, not they.
  const RATIOS = ["conversion_rate", "churn_rate", "refund_rate", "ltv", "initial_conversion_rate", "paying_conversion_rate",
    "ltv_per_customer", "ltv_per_paying_customer", "answered_in_time_rate"];

  // ---- Growth: movements, customers, conversion, LTV, status, each splittable by a segment ----

  // Each chart of the page: its stacked series (+1 up, -1 down), the line drawn over them, and
  // the measure a segment splits (one stacked column per group).
  const GROWTH = [
    ["mrr_movement", "MRR movement", [["new_mrr", 1], ["reactivation_mrr", 1], ["expansion_mrr", 1], ["contraction_mrr", -1], ["churned_mrr", -1]], "net_mrr_movement", "ending_mrr"],
    ["actives_movement", "Active subscriptions movement", [["new_actives", 1], ["resubscribed_actives", 1], ["churned_actives", -1]], "net_actives_movement", "ending_actives"],
    ["trials_movement", "Active trials movement", [["new_trials", 1], ["expired_trials", -1]], "net_trials_movement", "ending_trials"],
    ["new_customers", "New customers", [["new_customers", 1]], null, "new_customers"],
    ["initial_conversion", "Initial conversion (by first seen)", [["converted_customers", 1]], null, "converted_customers"],
    ["conversion_to_paying", "Conversion to paying (by first seen)", [["new_paying_customers", 1]], null, "new_paying_customers"],
    ["new_paid_subscriptions", "New paid subscriptions", [["trial_conversions", 1], ["intro_offers", 1], ["direct_subscriptions", 1]], null, "new_paid_subscriptions"],
    ["ltv_per_customer", "Realised LTV per customer (by first seen)", [["revenue", 1]], null, "revenue"],
    ["subscription_status", "Subscription status", [["set_to_renew", 1], ["set_to_cancel", 1], ["billing_issue", 1], ["billing_retry", 1], ["paused", 1], ["on_hold", 1]], null, "set_to_renew"],
    ["non_subscription_purchases", "Non-subscription purchases", [["purchases", 1]], null, "purchases"],
    ["refund_requests", "App Store refund requests", [["granted", 1], ["declined", 1], ["reversed", 1], ["no_resolution", 1]], null, "requests"],
  ];
  const SEGMENTS = ["", "country", "store", "product", "app", "environment"];
  const WINDOWS = ["7d", "30d", "90d", "365d", "unbounded"];

  async function growth(page, argument) {
    const params = new URLSearchParams(argument || "");
    const days = Number(params.get("days")) || 90;
    const resolution = ["day", "week", "month"].includes(params.get("resolution")) ? params.get("resolution") : (days > 120 ? "month" : "week");
    const environment = params.get("environment") === "sandbox" ? "sandbox" : "production";
    const segment = SEGMENTS.includes(params.get("group_by")) ? params.get("group_by") : "";
    const lifetime = WINDOWS.includes(params.get("window")) ? params.get("window") : "";
    page.appendChild(el("h1", {}, "Growth"));
    const form = el("form", { class: "row card", "aria-label": "Range", id: "growth-form" },
      el("div", {}, el("label", { for: "g-days" }, "Range"),
        el("select", { id: "g-days" }, [30, 90, 365, 730].map((d) => el("option", { value: d, selected: d === days }, `Last ${d} days`)))),
      el("div", {}, el("label", { for: "g-resolution" }, "Per"),
        el("select", { id: "g-resolution" }, ["day", "week", "month"].map((r) => el("option", { value: r, selected: r === resolution }, r)))),
      el("div", {}, el("label", { for: "g-segment" }, "Segment"),
        el("select", { id: "g-segment" }, SEGMENTS.map((s) => el("option", { value: s, selected: s === segment }, s || "none")))),
      el("div", {}, el("label", { for: "g-window" }, "Window"),
        el("select", { id: "g-window" }, [""].concat(WINDOWS).map((w) => el("option", { value: w, selected: w === lifetime }, w || "chart's own")))),
      el("div", {}, el("label", { for: "g-environment" }, "Environment"),
        el("select", { id: "g-environment" }, ["production", "sandbox"].map((e) => el("option", { value: e, selected: e === environment }, e)))),
      el("button", { type: "submit" }, "Show"));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const next = new URLSearchParams({ days: $("g-days").value, resolution: $("g-resolution").value, environment: $("g-environment").value });
      if ($("g-segment").value) next.set("group_by", $("g-segment").value);
      if ($("g-window").value) next.set("window", $("g-window").value);
      location.hash = "#/growth/" + enc(next.toString());
    });
    page.appendChild(form);
    page.appendChild(el("p", { class: "muted" }, "Each movement's columns add up from the period before's end to this one's (the line). ",
      "Conversion and LTV are cohorts of customers by when they were first seen, within the window. ",
      "Select a number in a table to see who makes it."));
    const query = new URLSearchParams({ resolution, environment, from: new Date(Date.now() - days * 864e5).toISOString().slice(0, 10) });
    if (segment) query.set("group_by", segment);
    const drill = el("section", { id: "drill", "aria-live": "polite" });
    const answers = await Promise.all(GROWTH.map(([chart]) => {
      const q = new URLSearchParams(query);
      if (lifetime && ["initial_conversion", "conversion_to_paying", "ltv_per_customer"].includes(chart)) q.set("window", lifetime);
      return api("GET", `/v1/admin/charts/${chart}?${q}`).then((answer) => [answer, q]);
    }));
    answers.forEach(([answer, q], n) => page.appendChild(growthSection(GROWTH[n], answer, q, drill)));
    page.appendChild(drill);
  }

  /** One growth chart: stacked columns (or, split, one column of groups per period), its notes, the table, CSV. */
  function growthSection([chart, title, stacked, net, splitMeasure], answer, query, drill) {
    const money = chart === "mrr_movement" || chart.startsWith("ltv");
    const caption = (money ? `${title} (${answer.currency})` : title) + (answer.window ? `, window ${answer.window}` : "");
    const labels = answer.values.map((v) => v.period.slice(answer.resolution === "month" ? 0 : 5, answer.resolution === "month" ? 7 : 10));
    const section = el("section", { id: "chart-" + chart, "data-chart": chart });
    if (answer.group_by) {
      const groups = answer.groups.map((g) => ({ name: g.group, sign: 1, values: g.values.map((v) => Number(v[splitMeasure]) || 0) }));
      section.appendChild(stackedBars(labels, groups, `${caption}: ${splitMeasure} by ${answer.group_by}`));
    } else {
      const series = stacked.filter(([m]) => answer.measures.includes(m))
        .map(([m, sign]) => ({ name: m, sign, values: answer.values.map((v) => Number(v[m]) || 0) }));
      section.appendChild(stackedBars(labels, series, caption, net ? { name: net, values: answer.values.map((v) => Number(v[net]) || 0) } : null));
    }
    for (const note of chartNotes(answer)) section.appendChild(el("p", { class: "note" }, note));
    const cell = (v, m, group) => {
      if (v[m] === null || v[m] === undefined) return "—";
      if (RATIOS.includes(m) || m.startsWith("retention_")) return String(v[m]);
      return el("button", { type: "button", class: "link", "data-measure": m, "data-period": v.period,
        title: `What makes ${m} of ${v.period}`, onclick: () => showDrill(drill, chart, v.period, m, group === undefined ? query : withGroup(query, group), v[m]) }, String(v[m]));
    };
    const rows = answer.group_by
      ? answer.groups.flatMap((g) => g.values.map((v) => [v.period, g.group].concat(answer.measures.map((m) => cell(v, m, g.group)))))
      : answer.values.map((v) => [v.period].concat(answer.measures.map((m) => cell(v, m))));
    const head = ["Period"].concat(answer.group_by ? [answer.group_by] : [], answer.measures);
    const numbers = table(head, rows, answer.measures.map((_, i) => i + (answer.group_by ? 2 : 1)));
    numbers.classList.add("numbers");
    section.appendChild(el("details", { class: "card" }, el("summary", {}, `Every number: ${title}`), numbers));
    section.appendChild(el("button", { type: "button", class: "secondary", "data-csv": chart, onclick: () => downloadCSV(`/v1/admin/charts/${chart}?${query}&format=csv`, `${chart}.csv`) }, "Download CSV"));
    return section;
  }

  /** A query naming one group of its split: a drill-down into that group's figure. */
  function withGroup(query, group) {
    const q = new URLSearchParams(query);
    q.set("group", group);
    return q;
  }

  async function revenue(page, argument) {
    const params = new URLSearchParams(argument || "");
    const days = Number(params.get("days")) || 90;
    const resolution = params.get("resolution") || (days > 120 ? "month" : days > 31 ? "week" : "day");
    const environment = params.get("environment") === "sandbox" ? "sandbox" : "production";
    const currency = /^[A-Z]{3}$/.test(params.get("currency") || "") ? params.get("currency") : "";
    page.appendChild(el("h1", {}, "Revenue"));
    const form = el("form", { class: "row card", "aria-label": "Range", id: "revenue-form" },
      el("div", {}, el("label", { for: "r-days" }, "Range"),
        el("select", { id: "r-days" }, [30, 90, 365, 730].map((d) => el("option", { value: d, selected: d === days }, `Last ${d} days`)))),
      el("div", {}, el("label", { for: "r-resolution" }, "Per"),
        el("select", { id: "r-resolution" }, ["day", "week", "month"].map((r) => el("option", { value: r, selected: r === resolution }, r)))),
      el("div", {}, el("label", { for: "r-currency" }, "Currency"),
        el("input", { id: "r-currency", value: currency, placeholder: "reporting", size: 9, maxlength: 3, pattern: "[A-Z]{3}" })),
      el("div", {}, el("label", { for: "r-environment" }, "Environment"),
        el("select", { id: "r-environment" }, ["production", "sandbox"].map((e) => el("option", { value: e, selected: e === environment }, e)))),
      el("button", { type: "submit" }, "Show"));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const next = new URLSearchParams({ days: $("r-days").value, resolution: $("r-resolution").value, environment: $("r-environment").value });
      if ($("r-currency").value) next.set("currency", $("r-currency").value.trim().toUpperCase());
      location.hash = "#/revenue/" + enc(next.toString());
    });
    page.appendChild(form);
    page.appendChild(el("p", { class: "muted" }, "Proceeds, tax and commission are estimates (Docs/analytics.md). ",
      "Select a number in a table to see the transactions that make it."));
    const query = new URLSearchParams({ resolution, environment, from: new Date(Date.now() - days * 864e5).toISOString().slice(0, 10) });
    if (currency) query.set("currency", currency);
    const drill = el("section", { id: "drill", "aria-live": "polite" });
    const answers = await Promise.all(CHARTS.map(([chart]) => api("GET", `/v1/admin/charts/${chart}?${query}`)));
    answers.forEach((answer, n) => page.appendChild(chartSection(CHARTS[n], answer, query, drill)));
    page.appendChild(drill);
  }

  /** What a chart's answer left out or could not tax, said under it. */
  function chartNotes(answer) {
    const notes = [];
    if (answer.simulated_rates) notes.push("Simulated exchange rates (development only, not for anyone's books): " + Object.entries(answer.simulated_rates).map(([c, r]) => `${r} ${c} per EUR`).join(", ") + ".");
    if (answer.missing_rates.length) notes.push("No exchange rate: " + answer.missing_rates.map((r) => `${r.from} to ${r.to} on ${r.day} needs ${r.currency}'s (${r.transactions})`).join(", ") + ": left out.");
    if (answer.missing_prices.length) notes.push("No price for " + answer.missing_prices.map((p) => `${p.product_id}${p.storefront ? " in " + p.storefront : ""} (${p.transactions})`).join(", ") + ": left out.");
    const short = answer.values.filter((v) => v.left_out > 0);
    if (short.length) notes.push("Counted without their money: " + short.map((v) => `${v.left_out} in ${v.period}`).join(", ") + ".");
    if (answer.untaxed_storefronts.length) notes.push("No tax rate for " + answer.untaxed_storefronts.join(", ") + ": proceeds before tax.");
    return notes;
  }

  /** One chart: its line chart, the left-out and untaxed notes, the table of every number, CSV. */
  function chartSection([chart, title, plotted], answer, query, drill) {
    const money = chart === "revenue" || chart === "mrr";
    const caption = money ? `${title} (${answer.currency})` : title;
    const labels = answer.values.map((v) => v.period.slice(answer.resolution === "month" ? 0 : 5, answer.resolution === "month" ? 7 : 10));
    const section = el("section", { id: "chart-" + chart, "data-chart": chart });
    section.appendChild(lineChart(labels, plotted.filter((m) => answer.measures.includes(m))
      .map((m) => ({ name: m, values: answer.values.map((v) => Number(v[m]) || 0) })), caption));
    for (const note of chartNotes(answer)) section.appendChild(el("p", { class: "note" }, note));
    const rows = answer.values.map((v) => [v.period].concat(answer.measures.map((m) => {
      if (v[m] === null || v[m] === undefined) return "—";
      if (RATIOS.includes(m) || m.startsWith("retention_")) return String(v[m]);
      return el("button", { type: "button", class: "link", "data-measure": m, "data-period": v.period,
        title: `What makes ${m} of ${v.period}`, onclick: () => showDrill(drill, chart, v.period, m, query, v[m]) }, String(v[m]));
    })));
    const numbers = table(["Period"].concat(answer.measures), rows, answer.measures.map((_, i) => i + 1));
    numbers.classList.add("numbers");
    section.appendChild(el("details", { class: "card" }, el("summary", {}, `Every number: ${title}`), numbers));
    section.appendChild(el("button", { type: "button", class: "secondary", "data-csv": chart, onclick: () => downloadCSV(`/v1/admin/charts/${chart}?${query}&format=csv`, `${chart}.csv`) }, "Download CSV"));
    return section;
  }

  /** What makes one figure (the chart's own, shown in the title): a page of contributions, and more on asking. */
  async function showDrill(holder, chart, period, measure, query, figure) {
    const path = `/v1/admin/charts/${chart}/drill?${query}&period=${enc(period)}&measure=${enc(measure)}`;
    const first = await api("GET", path).catch((e) => { say(e.message); return null; });
    if (!first) return;
    clear(holder);
    holder.appendChild(el("h2", { id: "drill-title", tabindex: -1 }, `${measure} of ${period} (${chart}): ${figure}`));
    const rows = (d) => d.contributions.map((c) => [
      el("a", { href: "#/customer/" + enc(c.app_user_id) }, c.app_user_id), c.original_transaction_id, show(c.transaction_id),
      String(c.value), show(c.detail)]);
    holder.appendChild(table(["Customer", "Purchase", "Transaction", "Contribution", "Detail"], rows(first), [3]));
    holder.lastChild.id = "drill-table";
    const body = holder.querySelector("#drill-table tbody");
    let next = first.next_cursor;
    // A page reads a bounded number of marked customers, so it can bring none: go on until one does.
    const more = el("button", { type: "button", class: "secondary", id: "drill-more", hidden: !next, onclick: async () => {
      more.disabled = true;
      let added = 0;
      while (next && added === 0) {
        const page = await api("GET", `${path}&cursor=${enc(next)}`).catch((e) => { say(e.message); return null; });
        if (!page) break;
        if (page.contributions.length && body.querySelector("td.muted")) clear(body);
        for (const r of rows(page)) body.appendChild(el("tr", {}, r.map((c, i) => el("td", { class: i === 3 ? "num" : null }, c))));
        added += page.contributions.length;
        next = page.next_cursor;
      }
      more.hidden = !next;
      more.disabled = false;
    } }, "More");
    holder.appendChild(more);
    holder.appendChild(el("button", { type: "button", class: "secondary",
      onclick: () => downloadCSV(`${path}&format=csv`, `${chart}-${measure}-${period}.csv`) }, "Download CSV"));
    $("drill-title").focus();
  }

  /** A CSV the API sends (the key goes in a header, so a plain link cannot), saved as a file. */
  async function downloadCSV(path, name) {
    const response = await fetch(path, { headers: authorization() });
    if (!response.ok) { say("Download failed: HTTP " + response.status); return; }
    const url = URL.createObjectURL(await response.blob());
    const a = el("a", { href: url, download: name, hidden: true });
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    say("Downloaded " + name + ".");
  }

  // ---- Customer ----------------------------------------------------------------------------

  async function find(query) {
    try {
      return await api("GET", `/v1/subscribers/${enc(query)}?explain=true`);
    } catch (e) {
      if (e.status !== 404 && e.status !== 400) throw e;
    }
    for (const path of [`/v1/admin/transactions/${enc(query)}`, `/v1/admin/orders/${enc(query)}`]) {
      try {
        const found = await api("GET", path);
        const holder = found.app_user_id || ((found.transactions || []).find((t) => t.app_user_id) || {}).app_user_id;
        if (holder) return await api("GET", `/v1/subscribers/${enc(holder)}?explain=true`);
      } catch (e) {
        if (e.status >= 500 && e.status !== 501 && e.status !== 503) throw e;
      }
    }
    return null;
  }

  async function customer(page, query) {
    page.appendChild(el("h1", {}, "Customers"));
    const form = el("form", { class: "row card", role: "search" },
      el("div", {}, el("label", { for: "query" }, "App user id, transaction id or order id"),
        el("input", { id: "query", name: "query", value: query, required: true })),
      el("button", { type: "submit" }, "Find"));
    form.addEventListener("submit", (e) => { e.preventDefault(); location.hash = "#/customer/" + enc($("query").value.trim()); });
    page.appendChild(form);
    if (!query) { $("query").focus(); return; }
    const doc = await find(query);
    if (!doc) { page.appendChild(el("p", { id: "not-found", role: "alert" }, "No customer matches ", el("code", {}, query), ".")); return; }
    const user = doc.app_user_id;
    const head = el("section", { class: "card", id: "customer" },
      el("h2", {}, "Customer ", el("code", { id: "customer-id" }, user)),
      doc.aliases.length ? el("p", {}, "Also known as: ", doc.aliases.join(", ")) : null,
      el("p", { class: "muted" }, `Version ${doc.version}, read at ${when(doc.request_date)}`));
    page.appendChild(head);
    page.appendChild(actions(user, doc));

    page.appendChild(el("h2", {}, "Entitlements"));
    const names = Object.keys(doc.entitlements).sort();
    page.appendChild(el("div", { class: "grid", id: "entitlements" }, names.length === 0 ? el("p", { class: "muted" }, "No entitlements.") : names.map((name) => {
      const e = doc.entitlements[name];
      return el("article", { class: "card entitlement", "data-entitlement": name },
        el("h3", {}, name, " ", badge(e.active)),
        el("dl", {},
          el("dt", {}, "State"), el("dd", { class: "state" }, e.state),
          el("dt", {}, "Until"), el("dd", {}, when(e.expires_at)),
          el("dt", {}, "Will renew"), el("dd", {}, show(e.will_renew)),
          el("dt", {}, "Store"), el("dd", {}, show(e.store)),
          el("dt", {}, "Product"), el("dd", {}, show(e.product_id)),
          el("dt", {}, "Ownership"), el("dd", {}, show(e.ownership)),
          el("dt", {}, "Environment"), el("dd", {}, show(e.environment))),
        el("p", { class: "explanation" }, e.explanation ? e.explanation.decision : ""),
        e.explanation ? el("details", {}, el("summary", {}, "Facts behind it (", e.explanation.rule, ")"), facts(e.explanation.facts)) : null,
        e.store === "promotional" && e.active
          ? el("button", { type: "button", class: "danger", "data-revoke": name, onclick: () => revoke(user, name) }, "Revoke promotion")
          : null);
    })));

    page.appendChild(el("h2", {}, "Subscriptions"));
    page.appendChild(table(["Product", "State", "Expires", "Will renew", "Period", "Original transaction", "Environment"],
      Object.keys(doc.subscriptions).sort().map((p) => {
        const s = doc.subscriptions[p];
        return [p, s.state, when(s.expires_at), show(s.will_renew), s.period_type, s.original_transaction_id, s.environment];
      })));
    page.appendChild(el("h2", {}, "One-time purchases"));
    page.appendChild(table(["Product", "Type", "Active", "Purchased", "Expires", "Refunded", "Transaction"],
      Object.keys(doc.non_subscriptions).sort().flatMap((p) => doc.non_subscriptions[p].map((n) =>
        [p, n.product_type, show(n.active), when(n.purchased_at), when(n.expires_at), when(n.refunded_at), n.transaction_id]))));

    const environment = Object.values(doc.subscriptions).concat(...Object.values(doc.non_subscriptions))
      .map((p) => p.environment).find((e) => e === "sandbox" || e === "production") || "production";
    page.appendChild(await moneySection(user, environment));
    page.appendChild(await offersSection(user));
    page.appendChild(await attributesSection(user));

    const timeline = el("section", { id: "timeline-section" }, el("h2", {}, "Events"));
    page.appendChild(timeline);
    const events = await api("GET", `/v1/subscribers/${enc(user)}/events?limit=50`);
    timeline.appendChild(eventList(events.events));
    const moves = events.events.filter((e) => e.type === "transfer" || e.type === "merge");
    page.appendChild(el("h2", {}, "Transfers between users"));
    page.appendChild(table(["When", "Type", "Purchase", "From", "To"], moves.map((e) => [when(e.at), e.type, show(e.original_transaction_id),
      show(e.facts.from_app_user_id || e.facts.alias_app_user_id), show(e.facts.to_app_user_id || user)])));

    page.appendChild(el("h2", {}, "Notifications about them"));
    const notes = await api("GET", `/v1/notifications?app_user_id=${enc(user)}&limit=50`);
    page.appendChild(notificationTable(notes.notifications));

    const raw = el("section", {}, el("h2", {}, "Raw data"),
      el("p", { class: "muted" }, "Everything stored about them, Apple's payloads included (the export)."),
      el("button", { type: "button", class: "secondary", id: "show-raw", onclick: async (e) => {
        e.target.disabled = true;
        const text = await (await fetch(`/v1/subscribers/${enc(user)}/export`, { headers: authorization() })).text();
        let pretty = text;
        try { pretty = JSON.stringify(JSON.parse(text), null, 2); } catch (x) { /* shown as sent */ }
        raw.appendChild(el("pre", { id: "raw", tabindex: 0 }, pretty));
      } }, "Show raw data"));
    page.appendChild(raw);
  }

  /** Their offers: which they may have now and why (Config/offers.json, Apple's once-per-group rule), what they were given,
   *  and what Apple's Retention Messaging was answered about them (Config/retention.json). */
  async function offersSection(user) {
    const o = await api("GET", `/v1/subscribers/${enc(user)}/offers`);
    const section = el("section", { id: "offers" }, el("h2", {}, "Offers"));
    const may = table(["Offer", "Product", "Eligible", "Why"],
      o.promotional.map((p) => [p.offer_id, p.product_id, show(p.eligible), p.explanation.decision])
        .concat(o.introductory.map((i) => [`introductory (${i.subscription_group})`, i.product_id, show(i.eligible), i.explanation.decision])));
    may.id = "offers-eligibility";
    section.appendChild(may);
    const given = table(["When", "Kind", "Offer", "Product", "Form", "Allowed", "Asked by"],
      o.given.map((g) => [when(g.issued_at), g.kind, show(g.offer_id), g.product_id, g.format, show(g.allowed), g.requested_by]));
    given.id = "offers-given";
    section.appendChild(el("details", { class: "card" }, el("summary", {}, `Signatures given (${o.given.length})`), given));
    const answers = o.retention_answers || [];
    const answered = table(["When", "Product", "Rule", "Answer", "Message", "Offer"],
      answers.map((a) => [when(a.answered_at), a.product_id, show(a.rule), a.kind ? a.kind.replace("_", " ") : "Apple's default",
        show(a.message_identifier), show(a.offer_id)]));
    answered.id = "offers-retention";
    section.appendChild(el("details", { class: "card" },
      el("summary", {}, `Answered when they looked at cancelling (${answers.length})`), answered));
    return section;
  }

  /** What their app said of them through RevenueCat's SDKs ($email, $displayName, its own keys). */
  async function attributesSection(user) {
    const a = await api("GET", `/v1/subscribers/${enc(user)}/attributes`);
    const section = el("section", { id: "attributes" }, el("h2", {}, "Attributes"));
    const list = table(["Name", "Value", "Set on the device"], a.attributes.map((x) => [x.name, show(x.value), when(x.updated_at)]));
    list.id = "attributes-list";
    section.appendChild(a.attributes.length ? list : el("p", { class: "muted" }, "None set."));
    return section;
  }

  /** What the apps sell (Config/offerings.json), each store's packages as RevenueCat's SDKs are served them. */
  async function offerings(page) {
    page.appendChild(el("h1", {}, "Offerings"));
    const o = await api("GET", "/v1/admin/offerings");
    page.appendChild(el("p", { class: "muted" }, "Current offering: ", el("code", { id: "current-offering" }, show(o.current))));
    const rows = [];
    for (const [store, list] of [["App Store", o.app_store], ["Google Play", o.play_store]]) {
      for (const offering of list) {
        for (const p of offering.packages) {
          rows.push([offering.identifier, offering.description, store, p.identifier, p.platform_product_identifier,
            show(p.platform_product_plan_identifier)]);
        }
      }
    }
    const packages = table(["Offering", "Description", "Store", "Package", "Product", "Base plan"], rows);
    packages.id = "offerings-list";
    page.appendChild(rows.length ? packages : el("p", { class: "muted" }, "No offerings configured (offerings.file)."));
  }

  /** What they paid: each transaction's price, refund, tax, commission and proceeds; totals per currency. */
  async function moneySection(user, environment) {
    const m = await api("GET", `/v1/subscribers/${enc(user)}/money?environment=${environment}`);
    const price = (p) => (p ? `${p.amount} ${p.currency} (${p.source})` : "—");
    const why = { free_trial: "free trial", family_shared: "family shared", no_price: "no price known", free: "free" };
    const section = el("section", { id: "money" }, el("h2", {}, "Money"),
      el("p", { class: "muted" }, `What they paid in ${environment}; tax, commission and proceeds are estimates.`));
    const totals = table(["Currency", "Sales", "Gross", "Refunds", "Net", "Tax", "Commission", "Proceeds"],
      m.totals.map((t) => [t.currency, String(t.transactions), t.gross, t.refunds, t.net, t.tax, t.commission, t.proceeds]),
      [1, 2, 3, 4, 5, 6, 7]);
    totals.id = "money-totals";
    section.appendChild(totals);
    const lines = table(["Purchased", "Product", "Transaction", "Price", "Refunds", "Tax", "Commission", "Proceeds"],
      m.transactions.map((t) => [when(t.purchased_at), t.product_id, t.transaction_id, price(t.price),
        t.unpaid ? why[t.unpaid] || t.unpaid : t.refunds + (t.refund_kind ? ` (${t.refund_kind.replace("_", " ")})` : ""),
        t.unpaid ? "—" : show(t.tax), t.unpaid ? "—" : `${t.commission} (${t.commission_percent} %)`, t.unpaid ? "—" : t.proceeds]),
      [4, 5, 6, 7]);
    lines.id = "money-transactions";
    section.appendChild(el("details", { class: "card" }, el("summary", {}, `Every transaction (${m.transactions.length})`), lines));
    return section;
  }

  function eventList(events) {
    return el("ol", { class: "timeline", id: "timeline" }, events.length === 0 ? el("li", { class: "muted" }, "No events.") : events.map((e) =>
      el("li", {}, el("span", { class: "event-type" }, e.type), " ", el("time", { datetime: e.at }, when(e.at)),
        e.product_id ? [" · ", e.product_id] : null,
        el("details", {}, el("summary", {}, "Facts"), facts(e.facts)))));
  }

  function actions(user, doc) {
    const known = Object.keys(doc.entitlements).sort();
    const grant = el("form", { class: "row", id: "grant" },
      el("div", {}, el("label", { for: "grant-name" }, "Entitlement"),
        el("input", { id: "grant-name", list: "entitlement-names", value: known[0] || "premium", required: true }),
        el("datalist", { id: "entitlement-names" }, known.map((n) => el("option", { value: n })))),
      el("div", {}, el("label", { for: "grant-duration" }, "For"),
        el("select", { id: "grant-duration" }, [["P1D", "1 day"], ["P7D", "7 days"], ["P1M", "1 month"], ["P3M", "3 months"], ["P1Y", "1 year"]]
          .map(([v, t]) => el("option", { value: v, selected: v === "P7D" }, t)))),
      el("div", {}, el("label", { for: "grant-reason" }, "Reason"), el("input", { id: "grant-reason", required: true })),
      el("button", { type: "submit" }, "Grant promotional entitlement"));
    grant.addEventListener("submit", async (e) => {
      e.preventDefault();
      await act(() => api("POST", `/v1/subscribers/${enc(user)}/entitlements/${enc($("grant-name").value)}/promotional`,
        { duration: $("grant-duration").value, reason: $("grant-reason").value }), "Promotional entitlement granted.");
    });
    const extend = el("form", { class: "row", id: "extend" },
      el("div", {}, el("label", { for: "extend-days" }, "Extend by (days, at Apple)"), el("input", { id: "extend-days", type: "number", min: 1, max: 90, value: 7, required: true })),
      el("div", {}, el("label", { for: "extend-reason" }, "Reason code"),
        el("select", { id: "extend-reason" }, [["undeclared", "undeclared"], ["customer_satisfaction", "customer satisfaction"], ["other", "other"], ["service_issue", "service issue or outage"]]
          .map(([v, t]) => el("option", { value: v }, t)))),
      el("button", { type: "submit", class: "secondary" }, "Extend"));
    extend.addEventListener("submit", async (e) => {
      e.preventDefault();
      await act(() => api("POST", `/v1/subscribers/${enc(user)}/extend`, { days: Number($("extend-days").value), reason: $("extend-reason").value }), "Extended at Apple.");
    });
    return el("section", { class: "card", "aria-label": "Actions" },
      el("div", { class: "row" },
        el("button", { type: "button", id: "refresh", onclick: () => act(() => api("POST", `/v1/subscribers/${enc(user)}/refresh`), "Asked the store again.") }, "Refresh from the store")),
      grant, extend);
  }

  async function revoke(user, name) {
    await act(() => api("DELETE", `/v1/subscribers/${enc(user)}/entitlements/${enc(name)}/promotional`, { reason: "revoked in the console" }), "Promotion revoked.");
  }

  async function act(call, done) {
    try {
      await call();
      say(done);
      route();
    } catch (e) {
      say("Failed: " + e.message);
    }
  }

  // ---- Lists ---------------------------------------------------------------------------------

  function notificationTable(rows) {
    return table(["Received", "Type", "Subtype", "Outcome", "User", "Purchase", "Environment"],
      rows.map((n) => [when(n.received_at), n.type, show(n.subtype), n.outcome,
        n.app_user_id ? el("a", { href: "#/customer/" + enc(n.app_user_id) }, n.app_user_id) : "—",
        show(n.original_transaction_id), show(n.environment)]));
  }

  /** A filter form whose fields go to the hash, and a list that pages with `next_cursor`. */
  async function listPage(page, title, argument, fields, load) {
    const params = new URLSearchParams(argument || "");
    page.appendChild(el("h1", {}, title));
    const form = el("form", { class: "row card", "aria-label": "Filters" }, fields.map(([name, label, options]) =>
      el("div", {}, el("label", { for: "f-" + name }, label), options
        ? el("select", { id: "f-" + name }, options.map((o) => el("option", { value: o, selected: o === (params.get(name) || "") }, o || "any")))
        : el("input", { id: "f-" + name, value: params.get(name) || "" }))), el("button", { type: "submit" }, "Filter"));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const next = new URLSearchParams();
      for (const [name] of fields) if ($("f-" + name).value) next.set(name, $("f-" + name).value);
      location.hash = "#/" + location.hash.replace(/^#\/?/, "").split("/")[0] + "/" + enc(next.toString());
    });
    page.appendChild(form);
    await pagedList(page, (cursor) => {
      const query = new URLSearchParams(params);
      query.set("limit", "50");
      if (cursor) query.set("cursor", cursor);
      return load(query.toString());
    });
  }

  /** A list drawn a page at a time: `load(cursor)` gives `{node, next}`; **More** asks for the next. */
  async function pagedList(page, load) {
    const holder = el("div", {});
    page.appendChild(holder);
    let cursor = null;
    const more = el("button", { type: "button", class: "secondary", onclick: () => next().catch((e) => say(e.message)) }, "More");
    async function next() {
      const result = await load(cursor);
      holder.appendChild(result.node);
      cursor = result.next;
      more.hidden = !cursor;
    }
    page.appendChild(more);
    await next();
  }

  function notifications(page, argument) {
    return listPage(page, "Notifications", argument, [["type", "Type"], ["outcome", "Outcome"], ["app_user_id", "App user id"]],
      async (q) => { const r = await api("GET", "/v1/notifications?" + q); return { node: notificationTable(r.notifications), next: r.next_cursor }; });
  }

  function shared(page, argument) {
    return listPage(page, "Shared receipts", argument, [["more_than", "Moved between more than (users)"]], async (q) => {
      const r = await api("GET", "/v1/admin/shared-receipts?" + q);
      return {
        node: table(["Purchase", "Product", "Users", "Holder", "Transfers"], r.shared_receipts.map((s) => [s.original_transaction_id, show(s.product_id),
          String(s.users), s.holder ? el("a", { href: "#/customer/" + enc(s.holder) }, s.holder) : "—",
          (s.transfers || []).map((t) => `${show(t.from)} → ${show(t.to)} (${when(t.at)})`).join("; ")]), [2]),
        next: r.next_cursor,
      };
    });
  }

  function webhooks(page, argument) {
    return listPage(page, "Webhook deliveries", argument,
      [["status", "Status", ["", "pending", "delivered", "failed"]], ["endpoint", "Endpoint"], ["app_user_id", "App user id"]], async (q) => {
        const r = await api("GET", "/v1/admin/webhooks/deliveries?" + q);
        return {
          node: table(["Id", "Endpoint", "Event", "User", "Status", "Attempts", "Last answer", ""], r.deliveries.map((d) => [d.id, d.endpoint,
            show(d.type), el("a", { href: "#/customer/" + enc(d.app_user_id) }, d.app_user_id), d.status, String(d.attempts),
            show(d.last_status || d.last_error),
            d.status === "delivered" ? "" : el("button", { type: "button", class: "secondary", onclick: () => act(() => api("POST", `/v1/admin/webhooks/deliveries/${enc(d.id)}/retry`), "Queued again.") }, "Retry")]), [5]),
          next: r.next_cursor,
        };
      });
  }

  // ---- Mass extensions -----------------------------------------------------------------------

  /** A random UUID (v4) from the browser's CSPRNG: the request's id, kept until Apple has it. */
  function uuid() {
    const b = crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }

  /** Extend every active subscription to a product at Apple (an outage's compensation), and the list. */
  async function extensions(page) {
    page.appendChild(el("h1", {}, "Mass extensions"));
    // One id per form: sent again after a failure, it is the same request, never a second one.
    const requestID = uuid();
    const form = el("form", { class: "card row", id: "mass-extension", "aria-label": "Extend every active subscription" },
      el("div", {}, el("label", { for: "mass-product" }, "Product id"), el("input", { id: "mass-product", required: true })),
      el("div", {}, el("label", { for: "mass-days" }, "Days (1–90)"), el("input", { id: "mass-days", type: "number", min: 1, max: 90, value: 3, required: true })),
      el("div", {}, el("label", { for: "mass-reason" }, "Reason code"),
        el("select", { id: "mass-reason" }, [["service_issue", "service issue or outage"], ["customer_satisfaction", "customer satisfaction"], ["other", "other"], ["undeclared", "undeclared"]]
          .map(([v, t]) => el("option", { value: v }, t)))),
      el("div", {}, el("label", { for: "mass-storefronts" }, "Storefronts (e.g. USA CAN; empty: all)"), el("input", { id: "mass-storefronts" })),
      el("div", {}, el("label", { for: "mass-environment" }, "Environment"),
        el("select", { id: "mass-environment" }, ["production", "sandbox"].map((v) => el("option", { value: v }, v)))),
      el("button", { type: "submit" }, "Extend at Apple"));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const storefronts = $("mass-storefronts").value.split(/[\s,]+/).filter(Boolean).map((c) => c.toUpperCase());
      await act(() => api("POST", "/v1/admin/mass-extensions", {
        product_id: $("mass-product").value.trim(), days: Number($("mass-days").value), reason: $("mass-reason").value,
        storefronts, environment: $("mass-environment").value, request_id: requestID,
      }), "Asked Apple to extend every active subscription.");
    });
    page.appendChild(form);
    await pagedList(page, async (cursor) => {
      const r = await api("GET", "/v1/admin/mass-extensions?limit=50" + (cursor ? "&cursor=" + enc(cursor) : ""));
      return {
        node: table(["Requested", "Product", "Days", "Storefronts", "Status", "Apple: extended · failed", "Refreshed here", "By", "Last error"],
          r.mass_extensions.map((m) => [when(m.requested_at), m.product_id, String(m.days),
            m.storefronts.length ? m.storefronts.join(" ") : "all", el("span", { "data-status": m.status }, m.status),
            `${show(m.succeeded_count)} · ${show(m.failed_count)}`, String(m.subscriptions_refreshed), m.requested_by,
            show(m.last_error)]), [2, 6]),
        next: r.next_cursor,
      };
    });
  }

  // ---- Start ---------------------------------------------------------------------------------

  $("login").addEventListener("submit", login);
  $("logout").addEventListener("click", () => logout("Logged out."));
  window.addEventListener("hashchange", route);
  if (sessionStorage.getItem(KEY)) start(); else logout();
})();
