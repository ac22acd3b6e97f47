/**
 * The playground page (served at `GET /`): markup and styles only; the behaviour is the ES
 * module at `/playground/app.js` (page_script.ts), which imports the SDK from `/sdk/client.js`.
 */
export const PLAYGROUND_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Switchboard playground</title>
<link rel="icon" href="/favicon.ico">
<style>
  :root { font-family: system-ui, sans-serif; color: #1d2330; background: #f5f6f8; }
  body { margin: 0 auto; max-width: 1200px; padding: 16px; }
  header { display: flex; gap: 12px; align-items: baseline; flex-wrap: wrap; }
  header h1 { font-size: 1.3rem; margin: 0; }
  .muted { color: #6b7280; font-size: .85rem; }
  #notice { background: #fff4e5; border: 1px solid #f0b35b; padding: 8px 12px; border-radius: 6px; }
  main { display: grid; grid-template-columns: repeat(auto-fit, minmax(340px, 1fr)); gap: 16px; margin-top: 12px; }
  section { background: #fff; border: 1px solid #dfe3ea; border-radius: 8px; padding: 12px; min-width: 0; }
  section h2 { font-size: 1rem; margin: 0 0 8px; }
  .row { display: flex; gap: 6px; margin: 6px 0; flex-wrap: wrap; }
  input, textarea { font: inherit; padding: 4px 6px; border: 1px solid #c9ced8; border-radius: 4px; min-width: 0; flex: 1; }
  button { font: inherit; padding: 4px 10px; border-radius: 4px; border: 1px solid #3558d6; background: #3d63e8; color: #fff; cursor: pointer; }
  button.secondary { background: #fff; color: #3558d6; }
  button:disabled { opacity: .45; cursor: default; }
  ol.log { list-style: none; padding: 0; margin: 8px 0 0; max-height: 260px; overflow: auto; font: .8rem ui-monospace, monospace; }
  ol.log li { padding: 3px 4px; border-bottom: 1px solid #eef0f3; word-break: break-all; }
  pre { background: #f3f4f7; padding: 8px; border-radius: 4px; font-size: .8rem; overflow: auto; margin: 6px 0; }
  .error { color: #b42318; }
  #chat-messages { max-height: 420px; overflow: auto; display: flex; flex-direction: column; gap: 6px; margin: 8px 0; }
  .msg { padding: 6px 8px; border-radius: 6px; white-space: pre-wrap; word-break: break-word; }
  .msg.user { background: #e8eeff; align-self: flex-end; max-width: 85%; }
  .msg.assistant { background: #f1f2f4; max-width: 95%; }
  .msg .meta { display: flex; gap: 6px; align-items: center; font-size: .75rem; color: #6b7280; margin-top: 4px; }
  .msg .meta button { padding: 0 6px; font-size: .75rem; }
  #chat-tool { border: 1px solid #f0b35b; background: #fff8ec; padding: 8px; border-radius: 6px; }
</style>
</head>
<body>
<header>
  <h1>Switchboard playground</h1>
  <span class="muted">app key <code id="app-key">…</code></span>
  <span class="muted" id="status">loading…</span>
</header>
<p id="notice" hidden></p>
<main>
  <section id="channels">
    <h2>Channels</h2>
    <div class="row"><input id="ch-name" value="playground" aria-label="channel name"><button id="ch-sub">Subscribe</button></div>
    <div class="row"><input id="ch-event" value="greeting" aria-label="event name"><input id="ch-data" value='{"text":"hello"}' aria-label="event data (JSON)"><button id="ch-trigger">Trigger</button></div>
    <p class="muted">Trigger goes through the server's trigger API with the development app; subscribed events appear below.</p>
    <ol class="log" id="ch-log"></ol>
  </section>
  <section id="objects">
    <h2>Durable Object</h2>
    <div class="row"><input id="obj-type" value="counter" aria-label="object type"><input id="obj-key" value="demo" aria-label="object key"><button id="obj-watch">Watch</button></div>
    <div class="row"><input id="obj-slot" value="clicks" aria-label="slot"><input id="obj-value" value="1" aria-label="value (JSON)"><button id="obj-set">Set</button><button id="obj-inc" class="secondary">Increment</button></div>
    <div class="muted">log_id <span id="obj-logid">–</span></div>
    <pre id="obj-state">{}</pre>
    <ol class="log" id="obj-log"></ol>
  </section>
  <section id="chat">
    <h2>Chat with the demo agent</h2>
    <div class="row"><input id="chat-thread" aria-label="thread id"><button id="chat-connect">Connect</button></div>
    <div id="chat-messages" aria-live="polite"></div>
    <div id="chat-tool" hidden></div>
    <div class="row"><input id="chat-input" placeholder="Say something (mention the weather for a tool call)" aria-label="message"><button id="chat-send" disabled>Send</button><button id="chat-cancel" class="secondary" disabled>Cancel</button></div>
    <p class="muted">The agent runs inside the server and streams tokens over the thread channel. Cancel stops it; Regenerate opens a new branch; ‹ › switch branches.</p>
  </section>
  <section id="debug">
    <h2>Debug console</h2>
    <div class="row"><button id="debug-toggle">Start</button><span class="muted">every event, join, presence change and API call of the development app, live</span></div>
    <ol class="log" id="debug-log"></ol>
  </section>
</main>
<script type="module" src="/playground/app.js"></script>
</body>
</html>
`;
