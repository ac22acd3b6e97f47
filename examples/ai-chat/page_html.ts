/**
 * The example page's HTML and styles: a chat layout (header with the thread and the run's
 * status, message bubbles, a composer pinned to the bottom). serve.ts puts the app key and
 * socket in place of the CONFIG comment; page.ts renders into #root.
 */
export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Switchboard + AI SDK</title>
<style>
  :root { font: 15px/1.45 system-ui, sans-serif; color: #1d2330; background: #f3f4f7; }
  body { margin: 0; }
  .app { max-width: 760px; margin: 0 auto; min-height: 100vh; display: flex; flex-direction: column; background: #fff; box-shadow: 0 0 0 1px #e3e6ec; }
  header { display: flex; align-items: center; gap: 10px; padding: 12px 16px; border-bottom: 1px solid #e3e6ec; position: sticky; top: 0; background: #fff; z-index: 1; }
  header h1 { font-size: 1rem; margin: 0; }
  header .thread { color: #6b7280; font: .8rem ui-monospace, monospace; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; flex: 1; }
  header a { color: #3558d6; font-size: .85rem; text-decoration: none; }
  .pill { font-size: .75rem; padding: 2px 8px; border-radius: 999px; background: #e8f5ec; color: #1a7f37; }
  .pill.submitted, .pill.streaming { background: #eef2ff; color: #3558d6; }
  .pill.error { background: #fdecea; color: #b42318; }
  #log { flex: 1; padding: 16px; display: flex; flex-direction: column; gap: 12px; }
  .empty { color: #6b7280; text-align: center; margin: auto; }
  .msg { max-width: 82%; padding: 10px 14px; border-radius: 16px; white-space: pre-wrap; overflow-wrap: anywhere; }
  .msg.user { align-self: flex-end; background: #3d63e8; color: #fff; border-bottom-right-radius: 4px; }
  .msg.assistant { align-self: flex-start; background: #f1f3f6; border-bottom-left-radius: 4px; }
  .reasoning { color: #6b7280; font-size: .85rem; border-left: 3px solid #c9ced8; padding-left: 8px; margin-bottom: 6px; }
  .reasoning::before { content: "Thinking: "; font-weight: 600; }
  .tool { background: #fff; border: 1px solid #dfe3ea; border-radius: 10px; padding: 8px 10px; margin: 6px 0; font-size: .9rem; }
  .tool .state { color: #6b7280; font-size: .8rem; margin-left: 6px; }
  .tool code { display: block; font-size: .8rem; color: #374151; margin-top: 4px; }
  .tool button { margin: 6px 6px 0 0; }
  .cursor { display: inline-block; width: .55em; height: 1em; margin-left: 2px; vertical-align: -2px; background: #3d63e8; animation: blink 1s steps(2) infinite; }
  .typing span { display: inline-block; width: 6px; height: 6px; margin-right: 4px; border-radius: 50%; background: #9aa3b2; animation: blink 1s infinite; }
  .typing span:nth-child(2) { animation-delay: .2s; } .typing span:nth-child(3) { animation-delay: .4s; }
  @keyframes blink { 50% { opacity: 0; } }
  .actions { align-self: flex-start; margin-top: -6px; }
  .actions button { font-size: .8rem; padding: 3px 12px; }
  #error { margin: 0 16px; padding: 8px 12px; border-radius: 8px; background: #fdecea; color: #b42318; }
  form { display: flex; gap: 8px; padding: 12px 16px; border-top: 1px solid #e3e6ec; position: sticky; bottom: 0; background: #fff; }
  input { flex: 1; font: inherit; padding: 9px 12px; border: 1px solid #c9ced8; border-radius: 999px; outline-color: #3d63e8; }
  button { font: inherit; padding: 8px 16px; border-radius: 999px; border: 1px solid #3558d6; background: #3d63e8; color: #fff; cursor: pointer; }
  button.secondary { background: #fff; color: #3558d6; }
  button:disabled { opacity: .4; cursor: default; }
</style>
</head>
<body>
<div id="root"><p class="empty">connecting…</p></div>
<script>/*CONFIG*/</script>
<script type="module" src="/page.js"></script>
</body>
</html>
`;
