/**
 * The console's page: plain HTML, a stylesheet and one small script, kept as strings so the
 * binary carries them (no build step, no framework). The script builds every element with
 * textContent (no HTML from data), talks to `/console/api/...` with the session cookie and
 * draws the charts as inline SVG.
 */

/** The page: the login form, then the app views (the script shows one or the other). */
export const CONSOLE_HTML = String.raw`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Switchboard console</title>
<link rel="stylesheet" href="/console/console.css">
<script src="/console/console.js" defer></script>
</head>
<body>
<header><b>Switchboard console</b> <span id="who"></span>
  <select id="app-select" hidden aria-label="app"></select>
  <button id="logout" hidden>Log out</button></header>
<main>
<form id="login" hidden>
  <h1>Log in</h1>
  <p>The console secret opens every app; an app's secret opens that app.</p>
  <label>Secret <input id="secret" name="secret" type="password" autocomplete="current-password" required></label>
  <button type="submit">Log in</button>
  <p id="login-error" class="error" role="alert"></p>
</form>
<div id="views" hidden>
  <nav id="tabs">
    <button data-tab="live">Live</button><button data-tab="channels">Channels</button><button data-tab="objects">Objects</button><button data-tab="threads">Threads</button><button data-tab="webhooks">Webhooks</button><button data-tab="charts">Charts</button><button data-tab="limits">Limits</button>
  </nav>
  <section id="tab-live">
    <div class="bar">
      <input id="f-channel" placeholder="channel contains" aria-label="channel filter">
      <input id="f-event" placeholder="event contains" aria-label="event filter">
      <span id="f-kinds"></span>
      <button id="pause">Pause</button> <button id="clear">Clear</button> <span id="live-state"></span>
    </div>
    <table><thead><tr><th>time</th><th>kind</th><th>channel</th><th>what</th><th>details</th></tr></thead><tbody id="live"></tbody></table>
  </section>
  <section id="tab-channels" hidden>
    <div class="bar"><button id="ch-refresh">Refresh</button> <input id="ch-name" placeholder="channel name" aria-label="channel name"> <button id="ch-show">Show</button></div>
    <table><thead><tr><th>channel</th><th>subscribers</th><th>presence members</th><th>serial</th></tr></thead><tbody id="channels"></tbody></table>
    <div id="channel"></div>
  </section>
  <section id="tab-objects" hidden>
    <div class="bar"><input id="ob-type" placeholder="type" aria-label="object type"> <input id="ob-key" placeholder="key" aria-label="object key"> <input id="ob-at" placeholder="state at log_id" aria-label="log_id" size="12"> <button id="ob-show">Show</button> <button id="ob-list">List (type prefix)</button></div>
    <div id="object"></div>
    <table><thead><tr><th>type</th><th>key</th><th>log_id</th></tr></thead><tbody id="objects"></tbody></table>
  </section>
  <section id="tab-threads" hidden>
    <div class="bar"><button id="th-refresh">Refresh</button></div>
    <table><thead><tr><th>thread</th><th>title</th><th>status</th><th>last message</th></tr></thead><tbody id="threads"></tbody></table>
    <div id="thread"></div>
  </section>
  <section id="tab-webhooks" hidden>
    <div class="bar"><button id="wh-refresh">Refresh</button> <button id="wh-retry">Retry all now</button> <span id="wh-state"></span></div>
    <table><thead><tr><th>url</th><th>pending</th><th>oldest</th><th>given up</th><th>last attempt</th><th>last error</th><th></th></tr></thead><tbody id="webhooks"></tbody></table>
  </section>
  <section id="tab-limits" hidden>
    <div class="bar"><button id="li-refresh">Refresh</button> <span class="muted">the app's per-app limits; refusals counted on this node since it started</span></div>
    <table><thead><tr><th>limit</th><th>value</th><th>set in the apps file</th><th>refused</th></tr></thead><tbody id="limits"></tbody></table>
  </section>
  <section id="tab-charts" hidden>
    <div class="bar"><label>Scope <select id="chart-scope"><option value="app">this app</option></select></label> <button id="charts-refresh">Refresh</button> <span class="muted">one bar per 10 s (up to the last hour); the rightmost is the current interval</span></div>
    <div id="charts"></div>
  </section>
</div>
</main>
</body>
</html>
`;

/** The stylesheet. */
export const CONSOLE_CSS = String.raw`
body{margin:0;font:14px/1.4 system-ui,sans-serif;color:#1b1f24;background:#f6f7f9}
header{display:flex;gap:12px;align-items:center;padding:8px 16px;background:#1b2a41;color:#fff}
header select,header button{font:inherit}
main{padding:12px 16px}
h1{font-size:20px}
form#login{max-width:360px;margin:60px auto;background:#fff;padding:20px;border-radius:8px;box-shadow:0 1px 3px #0002}
form#login input{display:block;width:100%;box-sizing:border-box;margin:6px 0 12px;padding:6px}
.error{color:#b00020}
.muted{color:#667}
nav{display:flex;gap:4px;margin-bottom:8px}
nav button{padding:6px 12px;border:1px solid #ccd;background:#fff;border-radius:6px 6px 0 0;cursor:pointer}
nav button.on{background:#1b2a41;color:#fff}
.bar{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin:6px 0}
.bar label{white-space:nowrap}
table{border-collapse:collapse;width:100%;background:#fff;font-size:13px}
th,td{border-bottom:1px solid #e3e5e8;padding:3px 6px;text-align:left;vertical-align:top}
td.mono,pre{font-family:ui-monospace,monospace;font-size:12px;white-space:pre-wrap;word-break:break-all}
tr.refused td,tr.failed td{background:#fdecee}
.webhook-given-up{color:#b00020;font-weight:600}
tr.clickable{cursor:pointer}
tr.clickable:hover td{background:#eef3ff}
.k{display:inline-block;padding:0 6px;border-radius:8px;background:#e8ecf3;font-size:12px}
.k-join{background:#e3f1ff}.k-event{background:#e9f7ec}.k-client{background:#fff4d6}.k-presence{background:#f1e6ff}.k-api{background:#eceff1}.k-connection{background:#e0f7f7}.k-webhook{background:#ffe9e0}
.panel{background:#fff;margin-top:10px;padding:10px;border-radius:6px;box-shadow:0 1px 2px #0001}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(320px,1fr));gap:10px}
.chart{background:#fff;border-radius:6px;padding:8px;box-shadow:0 1px 2px #0001}
.chart svg{width:100%;height:120px;display:block}
.chart .now{float:right;font-weight:bold}
`;

/** The script. */
export const CONSOLE_JS = String.raw`"use strict";
(function () {
  var $ = function (id) { return document.getElementById(id); };
  var state = { session: null, app: null, es: null, paused: false, held: [], rows: 0, threadTopic: null };
  var KINDS = ["connection", "join", "event", "client", "presence", "api", "webhook"];
  var MAX_ROWS = 500;

  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "on") e.addEventListener("click", attrs[k]);
      else e.setAttribute(k, attrs[k]);
    }
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) continue;
      e.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }
  function api(path, opts) {
    opts = opts || {};
    var init = { method: opts.method || "GET", credentials: "same-origin", headers: {} };
    if (opts.body !== undefined) { init.headers["content-type"] = "application/json"; init.body = JSON.stringify(opts.body); }
    return fetch(path, init).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (body) {
        if (res.status === 401 && path !== "/console/login") showLogin();
        if (!res.ok) throw new Error(body.error || ("HTTP " + res.status));
        return body;
      });
    });
  }
  function appPath(rest) { return "/console/api/apps/" + encodeURIComponent(state.app.id) + rest; }
  function time(ms) { return new Date(ms).toLocaleTimeString(); }
  function age(ms) { if (ms === null || ms === undefined) return "-"; var s = Math.round(ms / 1000); return s < 120 ? s + " s" : Math.round(s / 60) + " min"; }

  // Login.
  function showLogin() {
    if (state.es) { state.es.close(); state.es = null; }
    $("views").hidden = true; $("logout").hidden = true; $("app-select").hidden = true; $("who").textContent = "";
    $("login").hidden = false; $("secret").focus();
  }
  $("login").addEventListener("submit", function (ev) {
    ev.preventDefault();
    $("login-error").textContent = "";
    api("/console/login", { method: "POST", body: { secret: $("secret").value } }).then(function () {
      $("secret").value = "";
      start();
    }, function (e) { $("login-error").textContent = e.message; });
  });
  $("logout").addEventListener("click", function () { api("/console/logout", { method: "POST", body: {} }).then(showLogin, showLogin); });

  function start() {
    api("/console/api/session").then(function (s) {
      state.session = s;
      $("login").hidden = true; $("views").hidden = false; $("logout").hidden = false;
      $("who").textContent = (s.admin ? "admin" : "app") + " on node " + s.node;
      var sel = clear($("app-select"));
      s.apps.forEach(function (a) { sel.appendChild(el("option", { value: a.id, text: (a.name || a.id) + " (key " + a.key + ", secret " + a.secret + ")" })); });
      sel.hidden = false;
      var scope = clear($("chart-scope"));
      scope.appendChild(el("option", { value: "app", text: "this app" }));
      if (s.admin) scope.appendChild(el("option", { value: "node", text: "this node (all apps)" }));
      if (s.admin && s.clustered) scope.appendChild(el("option", { value: "cluster", text: "cluster: every node and their sum" }));
      if (s.apps.length) selectApp(s.apps[0].id);
    }, function () { showLogin(); });
  }
  $("app-select").addEventListener("change", function () { selectApp($("app-select").value); });

  function selectApp(id) {
    state.app = state.session.apps.filter(function (a) { return a.id === id; })[0];
    clear($("live")); state.rows = 0; state.held = [];
    clear($("channel")); clear($("object")); clear($("thread")); state.threadTopic = null;
    connectLive();
    showTab(state.tab || "live");
  }

  // Tabs.
  var loaders = {
    channels: loadChannels, threads: loadThreads, webhooks: loadWebhooks, charts: loadCharts, limits: loadLimits,
    live: function () {}, objects: loadObjects
  };
  function showTab(name) {
    state.tab = name;
    Array.prototype.forEach.call(document.querySelectorAll("#tabs button"), function (b) { b.className = b.dataset.tab === name ? "on" : ""; });
    Array.prototype.forEach.call(document.querySelectorAll("main section"), function (s) { s.hidden = s.id !== "tab-" + name; });
    loaders[name]();
  }
  Array.prototype.forEach.call(document.querySelectorAll("#tabs button"), function (b) {
    b.addEventListener("click", function () { showTab(b.dataset.tab); });
  });

  // Live.
  var kindBoxes = $("f-kinds");
  KINDS.forEach(function (k) {
    var box = el("input", { type: "checkbox", "data-kind": k });
    box.checked = true;
    box.addEventListener("change", refilter);
    kindBoxes.appendChild(el("label", null, box, " " + k + " "));
  });
  $("f-channel").addEventListener("input", refilter);
  $("f-event").addEventListener("input", refilter);
  $("pause").addEventListener("click", function () {
    state.paused = !state.paused;
    $("pause").textContent = state.paused ? "Resume" : "Pause";
    if (!state.paused) { state.held.forEach(addRow); state.held = []; }
    liveState();
  });
  $("clear").addEventListener("click", function () { clear($("live")); state.rows = 0; });
  function liveState(text) {
    $("live-state").textContent = text || (state.paused ? "paused, " + state.held.length + " held" : "live");
  }
  function connectLive() {
    if (state.es) state.es.close();
    var es = new EventSource(appPath("/live"));
    state.es = es;
    es.addEventListener("ready", function () { liveState(); });
    es.onmessage = function (m) {
      var e = JSON.parse(m.data);
      if (state.threadTopic && e.product === "chat" && state.threadTopic === e.channel) threadLive(e);
      if (state.paused) { state.held.push(e); if (state.held.length > MAX_ROWS) state.held.shift(); liveState(); return; }
      addRow(e);
    };
    es.onerror = function () { liveState("reconnecting…"); };
  }
  function matches(tr) {
    var ch = $("f-channel").value, ev = $("f-event").value;
    var box = kindBoxes.querySelector("[data-kind=" + tr.dataset.kind + "]");
    return (!box || box.checked) && (!ch || (tr.dataset.channel || "").indexOf(ch) >= 0) && (!ev || (tr.dataset.event || "").indexOf(ev) >= 0);
  }
  function refilter() {
    Array.prototype.forEach.call($("live").children, function (tr) { tr.hidden = !matches(tr); });
  }
  function describe(e) {
    switch (e.kind) {
      case "connection": return [e.what + " (" + e.protocol + ")", "socket " + e.socket_id + (e.origin ? ", origin " + e.origin : "")];
      case "join": return [e.outcome === "ok" ? "joined" : "refused: " + e.reason, "socket " + e.socket_id];
      case "api": return [e.method + " " + e.path + " -> " + e.status, e.ms + " ms"];
      case "webhook": return ["POST " + e.url + " -> " + e.status, "attempt " + e.attempt];
      default: return [e.event + (e.serial !== undefined ? " #" + e.serial : ""), e.payload + "  (" + e.subscribers + " subscribers)"];
    }
  }
  function addRow(e) {
    var d = describe(e);
    var failed = (e.kind === "join" && e.outcome !== "ok") || (e.kind === "webhook" && !(e.status >= 200 && e.status < 300)) || (e.kind === "api" && e.status >= 400);
    var tr = el("tr", { "data-kind": e.kind, "data-channel": e.channel || "", "data-event": e.event || "", class: failed ? "refused" : "" },
      el("td", { text: time(e.time) }), el("td", null, el("span", { class: "k k-" + e.kind, text: e.kind })),
      el("td", { class: "mono", text: e.channel ? (e.product === "pubsub" ? "" : e.product + ":") + e.channel : "" }),
      el("td", { class: "mono", text: d[0] }), el("td", { class: "mono", text: d[1] + (e.dropped ? "  [" + e.dropped + " dropped]" : "") }));
    tr.hidden = !matches(tr);
    var body = $("live");
    body.insertBefore(tr, body.firstChild);
    if (++state.rows > MAX_ROWS) { body.removeChild(body.lastChild); state.rows--; }
  }

  // Channels.
  function loadChannels() {
    api(appPath("/channels")).then(function (r) {
      var body = clear($("channels"));
      if (!r.channels.length) body.appendChild(el("tr", null, el("td", { colspan: 4, class: "muted", text: "no occupied channel" })));
      r.channels.forEach(function (c) {
        body.appendChild(el("tr", { class: "clickable", on: function () { showChannel(c.name); } },
          el("td", { class: "mono", text: c.name }), el("td", { text: c.subscribers }),
          el("td", { text: c.members === null ? "-" : c.members }), el("td", { text: c.serial === null ? "-" : c.serial })));
      });
    });
  }
  $("ch-refresh").addEventListener("click", loadChannels);
  $("ch-show").addEventListener("click", function () { if ($("ch-name").value) showChannel($("ch-name").value); });
  function showChannel(name) {
    var out = clear($("channel"));
    api(appPath("/channels/" + encodeURIComponent(name))).then(function (c) {
      var panel = el("div", { class: "panel", id: "channel-detail" }, el("h3", { text: c.name }),
        el("p", { text: (c.occupied ? "occupied" : "not occupied") + ", " + c.subscribers + " subscribers, serial " + (c.serial === null ? "-" : c.serial) }));
      if (c.members) panel.appendChild(el("p", { text: "presence members: " + (c.members.map(function (m) { return m.user_id; }).join(", ") || "none") }));
      var t = el("tbody");
      c.history.forEach(function (h) { t.appendChild(el("tr", null, el("td", { text: h.serial }), el("td", { text: time(h.published_at) }), el("td", { class: "mono", text: h.event }), el("td", { class: "mono", text: h.data }))); });
      panel.appendChild(el("h4", { text: "history (newest " + c.history.length + ")" }));
      panel.appendChild(el("table", null, el("thead", null, el("tr", null, el("th", { text: "serial" }), el("th", { text: "published" }), el("th", { text: "event" }), el("th", { text: "data" }))), t));
      out.appendChild(panel);
    }, function (e) { out.appendChild(el("p", { class: "error", text: e.message })); });
  }

  // Objects.
  $("ob-show").addEventListener("click", function () { showObject(); });
  $("ob-list").addEventListener("click", loadObjects);
  function loadObjects() {
    api(appPath("/objects?type=" + encodeURIComponent($("ob-type").value))).then(function (r) {
      var body = clear($("objects"));
      if (!r.objects.length) body.appendChild(el("tr", null, el("td", { colspan: 3, class: "muted", text: "no object" })));
      r.objects.forEach(function (o) {
        body.appendChild(el("tr", { class: "clickable", on: function () { $("ob-type").value = o.type; $("ob-key").value = o.key; $("ob-at").value = ""; showObject(); } },
          el("td", { class: "mono", text: o.type }), el("td", { class: "mono", text: o.key }), el("td", { text: o.log_id })));
      });
    });
  }
  function showObject(at) {
    var type = $("ob-type").value, key = $("ob-key").value;
    if (at !== undefined) $("ob-at").value = at;
    var atv = $("ob-at").value;
    var out = clear($("object"));
    api(appPath("/objects?type=" + encodeURIComponent(type) + "&key=" + encodeURIComponent(key) + (atv ? "&at=" + encodeURIComponent(atv) : ""))).then(function (o) {
      var panel = el("div", { class: "panel", id: "object-detail" }, el("h3", { text: o.type + " / " + o.key + " at head, log_id " + o.log_id }),
        el("pre", { id: "object-state", text: JSON.stringify(o.state, null, 2) }));
      if (o.at) panel.appendChild(el("div", null, el("h4", { text: "state at log_id " + o.at.log_id }), el("pre", { id: "object-state-at", text: JSON.stringify(o.at.state, null, 2) })));
      var t = el("tbody", { id: "object-log" });
      o.log.forEach(function (i) {
        t.appendChild(el("tr", { class: "clickable", title: "show the state at this log_id", on: function () { showObject(String(i.log_id)); } },
          el("td", { text: i.log_id }), el("td", { text: i.op }), el("td", { class: "mono", text: i.key }), el("td", { class: "mono", text: i.value })));
      });
      panel.appendChild(el("h4", { text: "log (newest " + o.log.length + " ops; click one for the state then)" }));
      panel.appendChild(el("table", null, el("thead", null, el("tr", null, el("th", { text: "log_id" }), el("th", { text: "op" }), el("th", { text: "slot" }), el("th", { text: "value" }))), t));
      out.appendChild(panel);
    }, function (e) { out.appendChild(el("p", { class: "error", text: e.message })); });
  }

  // Threads.
  function loadThreads() {
    api(appPath("/threads")).then(function (r) {
      var body = clear($("threads"));
      if (!r.threads.length) body.appendChild(el("tr", null, el("td", { colspan: 4, class: "muted", text: "no thread" })));
      r.threads.forEach(function (t) {
        body.appendChild(el("tr", { class: "clickable", on: function () { showThread(t.id); } },
          el("td", { class: "mono", text: t.id }), el("td", { text: t.title || "" }), el("td", { text: t.status }),
          el("td", { text: t.lastMessageAt ? time(t.lastMessageAt) : "-" })));
      });
    });
  }
  $("th-refresh").addEventListener("click", loadThreads);
  function showThread(id) {
    var out = clear($("thread"));
    api(appPath("/threads/" + encodeURIComponent(id))).then(function (r) {
      state.threadTopic = id;
      var runs = el("tbody");
      r.runs.forEach(function (run) { runs.appendChild(el("tr", null, el("td", { class: "mono", text: run.runId }), el("td", { text: run.status }), el("td", { text: run.agentId || "-" }), el("td", { text: time(run.startedAt) }))); });
      var msgs = el("tbody");
      r.messages.forEach(function (m) { msgs.appendChild(el("tr", null, el("td", { text: time(m.createdAt) }), el("td", { text: m.role }), el("td", { text: m.status }), el("td", { class: "mono", text: m.content }))); });
      out.appendChild(el("div", { class: "panel" }, el("h3", { text: "thread " + id + " (" + r.thread.status + ")" }),
        el("h4", { text: "runs" }), el("table", null, el("thead", null, el("tr", null, el("th", { text: "run" }), el("th", { text: "status" }), el("th", { text: "agent" }), el("th", { text: "started" }))), runs),
        el("h4", { text: "live (this thread's events as they stream)" }), el("pre", { id: "thread-live" }),
        el("h4", { text: "messages (newest " + r.messages.length + ")" }), el("table", null, msgs)));
    }, function (e) { out.appendChild(el("p", { class: "error", text: e.message })); });
  }
  function threadLive(e) {
    var pre = $("thread-live");
    if (pre) pre.textContent = (time(e.time) + " " + e.event + " " + e.payload + "\n" + pre.textContent).slice(0, 20000);
  }

  // Webhooks.
  function loadWebhooks() {
    api(appPath("/webhooks")).then(function (r) {
      var body = clear($("webhooks"));
      if (!r.webhooks.length) body.appendChild(el("tr", null, el("td", { colspan: 7, class: "muted", text: "no webhook configured" })));
      r.webhooks.forEach(function (w) {
        var last = w.last, err = last && last.lastError;
        body.appendChild(el("tr", { class: last && !last.ok ? "failed" : "" },
          el("td", { class: "mono", text: w.url }), el("td", { text: w.pending }), el("td", { text: age(w.oldest_age_ms) }),
          el("td", { class: w.given_up ? "webhook-given-up" : "", text: w.given_up }),
          el("td", { text: last ? time(last.at) + ": " + last.status + " (attempt " + last.attempt + ")" : "-" }),
          el("td", { class: "mono webhook-error", text: err ? time(err.at) + ": " + err.status + " (attempt " + err.attempt + ")" : "-" }),
          el("td", null, el("button", { text: "Retry now", on: function () { retry(w.url); } }))));
      });
    });
  }
  function retry(url) {
    api(appPath("/webhooks/retry"), { method: "POST", body: url ? { url: url } : {} }).then(function (r) {
      $("wh-state").textContent = r.moved + " made due now";
      setTimeout(loadWebhooks, 500);
    }, function (e) { $("wh-state").textContent = e.message; });
  }
  $("wh-refresh").addEventListener("click", loadWebhooks);
  $("wh-retry").addEventListener("click", function () { retry(); });

  // Limits.
  function loadLimits() {
    api(appPath("/limits")).then(function (r) {
      var body = clear($("limits"));
      r.limits.forEach(function (l) {
        body.appendChild(el("tr", { class: l.refused ? "failed" : "" },
          el("td", { class: "mono", text: l.name }), el("td", { text: l.value }),
          el("td", { text: l.set ? "yes" : "default" }), el("td", { text: l.refused })));
      });
    });
  }
  $("li-refresh").addEventListener("click", loadLimits);

  // Charts.
  var CHARTS = [
    ["connections", "connections"], ["published", "messages published"], ["delivered", "messages delivered"],
    ["joins_refused", "joins refused"], ["webhooks_ok", "webhooks delivered"], ["webhooks_failed", "webhooks failed"], ["http_p99_ms", "HTTP p99 (ms)"]
  ];
  $("charts-refresh").addEventListener("click", loadCharts);
  $("chart-scope").addEventListener("change", loadCharts);
  function chartGrid(series, node) {
    var grid = el("div", { class: "charts", "data-node": node });
    CHARTS.forEach(function (c) { grid.appendChild(chart(c[0], c[1], series.t, series[c[0]])); });
    return grid;
  }
  function loadCharts() {
    var scope = $("chart-scope").value;
    if (scope === "cluster") {
      return api("/console/api/cluster/stats").then(function (r) {
        var out = clear($("charts"));
        out.appendChild(el("h3", { text: "all nodes (sum; p99 is the largest node's)" }));
        out.appendChild(chartGrid(r.sum, "sum"));
        Object.keys(r.nodes).forEach(function (n) {
          out.appendChild(el("h3", { text: "node " + n }));
          out.appendChild(chartGrid(r.nodes[n], n));
        });
      });
    }
    var path = scope === "node" ? "/console/api/node/stats" : appPath("/stats");
    api(path).then(function (r) {
      var out = clear($("charts"));
      var grid = el("div", { class: "charts" });
      CHARTS.forEach(function (c) { grid.appendChild(chart(c[0], c[1], r.series.t, r.series[c[0]])); });
      out.appendChild(grid);
    });
  }
  function chart(name, title, t, v) {
    var NS = "http://www.w3.org/2000/svg", W = 300, H = 100;
    var max = Math.max.apply(null, [1].concat(v));
    var svg = document.createElementNS(NS, "svg");
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("preserveAspectRatio", "none");
    // One bar per point, the newest at the right edge: the last 10 minutes (60 slots), or as
    // much of the last hour as there are points.
    var n = v.length, slots = Math.max(60, n), slot = W / slots, d = [];
    for (var i = 0; i < n; i++) {
      var h = (v[i] / max) * (H - 8);
      if (h > 0) d.push("M" + (W - (n - i) * slot).toFixed(2) + " " + (H - 4) + "h" + Math.max(slot, 0.9).toFixed(2) + "v" + (-h).toFixed(2) + "h" + (-Math.max(slot, 0.9)).toFixed(2) + "z");
    }
    var line = document.createElementNS(NS, "path");
    line.setAttribute("d", d.join(""));
    line.setAttribute("fill", "#2f6fd6");
    var axis = document.createElementNS(NS, "line");
    axis.setAttribute("x1", "0"); axis.setAttribute("x2", String(W)); axis.setAttribute("y1", String(H - 4)); axis.setAttribute("y2", String(H - 4));
    axis.setAttribute("stroke", "#ccd");
    svg.appendChild(axis); svg.appendChild(line);
    var box = el("div", { class: "chart", "data-series": name, "data-points": String(n), "data-max": String(Math.max.apply(null, [0].concat(v))) },
      el("span", { class: "now", text: String(Math.round(v[n - 1] * 10) / 10) }), el("b", { text: title }), svg,
      el("div", { class: "muted", text: "last " + Math.round(slots / 6) + " min, max " + Math.round(max * 10) / 10 }));
    return box;
  }

  start();
})();
`;
