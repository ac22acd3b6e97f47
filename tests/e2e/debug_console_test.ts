// The playground's live debug console: the development app's broadcast events (presence
// changes are events too), joins and API calls arrive on GET /playground/api/debug as SSE.
import assert from "node:assert/strict";
import { RawSocket } from "../helpers/raw_socket.ts";
import { startInProcess } from "../helpers/in_process.ts";

Deno.test("debug console: events, joins and API calls of the development app, live", async () => {
  const server = await startInProcess({ apps: null });
  const { key, secret } = server.devApp!;
  const abort = new AbortController();
  const sock = await RawSocket.connect(server.wsUrl(key));
  try {
    const res = await fetch(`${server.baseUrl}/playground/api/debug`, { signal: abort.signal });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /text\/event-stream/);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    const entries = () =>
      text.split("\n").filter((l) => l.startsWith("data: {") && !l.includes('"ready"')).map((l) =>
        JSON.parse(l.slice(6))
      );
    const until = async (pred: (es: Record<string, unknown>[]) => boolean) => {
      const deadline = Date.now() + 5000;
      while (!pred(entries())) {
        if (Date.now() > deadline) throw new Error(`console saw: ${text.slice(-2000)}`);
        const { value, done } = await reader.read();
        if (done) throw new Error("stream ended");
        text += value;
      }
    };
    await until(() => text.includes("event: ready"));
    assert.equal((await sock.join(`pubsub:${key}:debug-news`, {})).status, "ok");
    const trig = await fetch(`${server.baseUrl}/api/apps/${key}/trigger`, {
      method: "POST",
      headers: { "x-app-key": key, "x-app-secret": secret, "content-type": "application/json" },
      body: JSON.stringify({ channel: "debug-news", event: "hello", data: { n: 1 } }),
    });
    assert.equal(trig.status, 200);
    await trig.body?.cancel();
    await until((es) => es.some((e) => e.kind === "api"));
    const es = entries();
    const join = es.find((e) => e.kind === "join");
    assert.deepEqual([join?.topic, join?.outcome, join?.socket_id], [
      `pubsub:${key}:debug-news`,
      "ok",
      sock.socketId,
    ]);
    const ev = es.find((e) => e.kind === "event");
    assert.deepEqual([ev?.topic, ev?.event, ev?.payload], [
      `pubsub:${key}:debug-news`,
      "hello",
      '{"serial":1,"data":{"n":1}}',
    ]);
    const call = es.find((e) => e.kind === "api");
    assert.deepEqual([call?.method, call?.path, call?.status], [
      "POST",
      `/api/apps/${key}/trigger`,
      200,
    ]);
    assert.ok(!text.includes(secret), "the console never shows the secret");
  } finally {
    abort.abort();
    await sock.close();
    await server.stop();
  }
});
