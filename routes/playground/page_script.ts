/**
 * The playground page's script, served at `GET /playground/app.js`. Plain browser JavaScript
 * using only the public SDK from `/sdk/client.js`; every backend action goes through
 * `/playground/api/*`, so the page never holds an app secret.
 * (Kept free of backticks and dollar-brace so it can live in this template literal.)
 */
export const PLAYGROUND_JS = String.raw`import * as sdk from "/sdk/client.js";

const $ = (id) => document.getElementById(id);
const endpoint = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/socket";
const setStatus = (text) => { $("status").textContent = text; };

/** POSTs to a playground route; throws with the server's error detail. */
async function api(path, body) {
  const res = await fetch("/playground/api/" + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = text; }
  if (!res.ok) {
    const e = json && json.errors && json.errors[0];
    throw new Error(e ? (e.detail || e.title) : (json && json.error) || ("HTTP " + res.status));
  }
  return json;
}

function addLine(listId, text, cls) {
  const li = document.createElement("li");
  li.textContent = new Date().toLocaleTimeString() + "  " + text;
  if (cls) li.className = cls;
  $(listId).prepend(li);
}

function parseValue(text) {
  try { return JSON.parse(text); } catch { return text; }
}

const info = await fetch("/playground/api/info").then((r) => r.json());
if (!info.app) {
  $("notice").textContent = info.reason;
  $("notice").hidden = false;
  setStatus("unavailable");
  for (const b of document.querySelectorAll("button")) b.disabled = true;
  throw new Error(info.reason);
}
$("app-key").textContent = info.app.key;
const realtime = new sdk.RealtimeClient(info.app.key, { endpoint, authEndpoint: "/playground/api/auth" });
realtime.socketIdReady().then((id) => setStatus("connected, socket " + id));

// ---- channels -------------------------------------------------------------------------
let channel = null;
const bound = new Set();
function bindEvent(name) {
  if (!channel || bound.has(name)) return;
  bound.add(name);
  channel.bind(name, (data, meta) => {
    addLine("ch-log", name + " #" + meta.serial + " " + JSON.stringify(data), "event");
  });
}
$("ch-sub").onclick = async () => {
  if (channel) channel.unsubscribe();
  bound.clear();
  const name = $("ch-name").value.trim();
  channel = realtime.subscribe(name);
  bindEvent($("ch-event").value.trim());
  channel.bind("switchboard:error", (e) => addLine("ch-log", "error: " + e.reason, "error"));
  try {
    await channel.ready;
    addLine("ch-log", "subscribed to " + name);
    $("ch-sub").textContent = "Resubscribe";
  } catch (err) {
    addLine("ch-log", "subscribe failed: " + (err.reason || err.message), "error");
  }
};
$("ch-trigger").onclick = async () => {
  const event = $("ch-event").value.trim();
  bindEvent(event);
  try {
    await api("trigger", { channel: $("ch-name").value.trim(), event, data: parseValue($("ch-data").value) });
  } catch (err) {
    addLine("ch-log", "trigger failed: " + err.message, "error");
  }
};

// ---- durable object ------------------------------------------------------------------
let object = null;
const objectTarget = () => ({ type: $("obj-type").value.trim(), key: $("obj-key").value.trim() });
function showObject() {
  $("obj-state").textContent = JSON.stringify(object.state, null, 2);
  $("obj-logid").textContent = String(object.logId);
}
$("obj-watch").onclick = () => {
  if (object) object.close();
  const t = objectTarget();
  object = realtime.object(t.type, t.key);
  object.on("change", (c) => {
    showObject();
    const what = c.type === "change" ? c.op + " " + c.key + " = " + JSON.stringify(c.value)
      : c.type === "batch" ? c.ops.length + " ops"
      : c.type === "snapshot" ? "snapshot" : c.type;
    addLine("obj-log", "log_id " + c.log_id + ": " + what);
  });
  object.on("error", (reason) => addLine("obj-log", "error: " + reason, "error"));
  addLine("obj-log", "watching " + t.type + "/" + t.key);
};
async function writeObject(op) {
  const t = objectTarget();
  const slot = $("obj-slot").value.trim();
  try {
    const body = op === "increment"
      ? { ...t, op, slot, by: Number(parseValue($("obj-value").value)) || 1 }
      : { ...t, op, slot, value: parseValue($("obj-value").value) };
    await api("object", body);
  } catch (err) {
    addLine("obj-log", op + " failed: " + err.message, "error");
  }
}
$("obj-set").onclick = () => writeObject("set");
$("obj-inc").onclick = () => writeObject("increment");

// ---- chat ----------------------------------------------------------------------------
// The thread and the visitor's id are kept in localStorage, so a reload (or a new tab) comes
// back to the same conversation, reconnected.
const kept = (name, make) => {
  try {
    const v = localStorage.getItem("switchboard.playground." + name);
    if (v) return v;
    localStorage.setItem("switchboard.playground." + name, make());
    return localStorage.getItem("switchboard.playground." + name) || make();
  } catch {
    return make(); // storage refused (private mode): a fresh one per load
  }
};
const keep = (name, value) => {
  try { localStorage.setItem("switchboard.playground." + name, value); } catch { /* see kept */ }
};
const clientId = kept("client", () => "visitor-" + Math.random().toString(36).slice(2, 8));
$("chat-thread").value = kept("thread", () => "playground-" + Math.random().toString(36).slice(2, 8));
const chat = sdk.ChatClient ? new sdk.ChatClient(info.app.key, { endpoint }) : null;
let session = null;
const LIVE = new Set(["pending", "active", "suspended"]);

function liveRun() {
  return session ? session.view.runs().find((r) => LIVE.has(r.status)) : undefined;
}

function renderChat() {
  const view = session.view;
  const box = $("chat-messages");
  box.textContent = "";
  for (const m of view.getMessages()) {
    const run = m.runId ? view.run(m.runId) : undefined;
    const streaming = m.role === "assistant" && run && LIVE.has(run.status);
    const div = document.createElement("div");
    div.className = "msg " + m.role;
    div.dataset.status = streaming ? "streaming" : m.status;
    div.dataset.messageId = m.messageId;
    const text = document.createElement("div");
    text.className = "text";
    const body = streaming ? view.getStream(m.runId) : m.content;
    text.textContent = typeof body === "string" ? body : JSON.stringify(body);
    div.append(text);
    const meta = document.createElement("div");
    meta.className = "meta";
    const label = document.createElement("span");
    label.textContent = m.role + (run ? " · " + run.status : "");
    meta.append(label);
    const siblings = view.siblings ? view.siblings(m.parentId) : [m.messageId];
    if (siblings.length > 1) {
      const at = siblings.indexOf(m.messageId);
      const nav = (delta, sign) => {
        const b = document.createElement("button");
        b.className = "secondary branch";
        b.textContent = sign;
        b.disabled = !siblings[at + delta];
        b.onclick = () => view.selectSibling(m.parentId, siblings[at + delta]);
        return b;
      };
      const pos = document.createElement("span");
      pos.className = "branch-pos";
      pos.textContent = (at + 1) + "/" + siblings.length;
      meta.append(nav(-1, "‹"), pos, nav(1, "›"));
    }
    if (m.role === "assistant" && !streaming) {
      const regen = document.createElement("button");
      regen.className = "secondary regenerate";
      regen.textContent = "Regenerate";
      regen.disabled = Boolean(liveRun());
      regen.onclick = () => view.regenerate(m.messageId).catch(chatError);
      meta.append(regen);
    }
    div.append(meta);
    box.append(div);
  }
  box.scrollTop = box.scrollHeight;
  const active = liveRun();
  $("chat-cancel").disabled = !active;
  const tool = $("chat-tool");
  const suspended = view.runs().find((r) => r.status === "suspended" && r.suspendedTool);
  tool.hidden = !suspended;
  if (suspended && tool.dataset.toolCallId !== suspended.suspendedTool.toolCallId) {
    const t = suspended.suspendedTool;
    tool.dataset.toolCallId = t.toolCallId;
    tool.textContent = "";
    const q = document.createElement("div");
    q.textContent = "The agent wants to call " + t.toolName + "(" + JSON.stringify(t.args) + ")";
    const approve = document.createElement("button");
    approve.id = "tool-approve";
    approve.textContent = "Approve";
    approve.onclick = () => view.approveTool(suspended.runId, t.toolCallId).catch(chatError);
    const reject = document.createElement("button");
    reject.id = "tool-reject";
    reject.className = "secondary";
    reject.textContent = "Reject";
    reject.onclick = () => view.rejectTool(suspended.runId, t.toolCallId).catch(chatError);
    tool.append(q, approve, reject);
  }
  if (!suspended) delete tool.dataset.toolCallId;
}

function chatError(err) {
  const div = document.createElement("div");
  div.className = "error";
  div.textContent = err.reason || err.message || String(err);
  $("chat-messages").append(div);
}

$("chat-connect").onclick = async () => {
  if (!chat) return chatError(new Error("this server's SDK has no ChatClient yet"));
  const threadId = $("chat-thread").value.trim();
  try {
    $("chat-connect").disabled = true;
    await api("chat", { thread_id: threadId });
    if (session) session.close();
    session = await chat.connect(threadId, { clientId });
    keep("thread", threadId);
    keep("connected", "1");
    session.view.on("update", renderChat);
    session.view.on("run", renderChat);
    renderChat();
    $("chat-send").disabled = false;
    $("chat-connect").textContent = "Reconnect";
  } catch (err) {
    chatError(err);
  } finally {
    $("chat-connect").disabled = false;
  }
};
async function sendChat() {
  const text = $("chat-input").value.trim();
  if (!session || !text) return;
  $("chat-input").value = "";
  try {
    const msgs = session.view.getMessages();
    const last = msgs[msgs.length - 1];
    await session.view.send(text, last ? { parentId: last.messageId } : {});
  } catch (err) {
    chatError(err);
  }
}
// Connected before this reload: reconnect to the kept thread straight away.
if (chat && kept("connected", () => "") === "1") $("chat-connect").click();
$("chat-send").onclick = sendChat;
$("chat-input").onkeydown = (e) => { if (e.key === "Enter") sendChat(); };
$("chat-cancel").onclick = () => {
  const run = liveRun();
  if (run) session.cancel(run.runId).catch(chatError);
};
// Debug console: a server-sent event stream of the development app's activity (the server's
// tap costs nothing while no console is open).
let debugSource = null;
$("debug-toggle").onclick = () => {
  if (debugSource) {
    debugSource.close();
    debugSource = null;
    $("debug-toggle").textContent = "Start";
    return;
  }
  debugSource = new EventSource("/playground/api/debug");
  $("debug-toggle").textContent = "Stop";
  debugSource.onmessage = (m) => {
    const e = JSON.parse(m.data);
    const what = e.kind === "event" ? e.topic + " " + e.event + " " + (e.payload || "")
      : e.kind === "join" ? e.topic + " " + e.outcome + " (socket " + e.socket_id + ")"
      : e.method + " " + e.path + " " + e.status + " (" + e.ms + " ms)";
    const list = $("debug-log");
    const li = document.createElement("li");
    li.textContent = new Date(e.time).toLocaleTimeString() + " " + e.kind + " " + what;
    list.prepend(li);
    while (list.children.length > 200) list.lastChild.remove();
  };
};
window.playground = { realtime, chat, get session() { return session; } };
`;
