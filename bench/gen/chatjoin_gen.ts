// Chat join load generator (Bun): posts `messages` messages to one thread over the chat REST
// API, then joins the thread channel `rounds` times without a position (the snapshot of the
// newest 50 messages) and `rounds` times with after_log_id 0 (every log entry replayed before
// the reply); reports the median time from phx_join to the reply and the entries received.
import { config, done, mark, pool, SelfCpu } from "./common.ts";

interface Cfg {
  base: string;
  messages: number;
  rounds: number;
  tag: string;
}

const cfg = config<Cfg>();
const headers = {
  "content-type": "application/vnd.api+json",
  "x-app-key": "key1",
  "x-app-secret": "secret1",
};
const thread = `join-${cfg.tag}`;
const post = (path: string, body: unknown) =>
  fetch(`${cfg.base}${path}`, { method: "POST", headers, body: JSON.stringify(body) }).then(
    async (r) => {
      await r.arrayBuffer();
      if (!r.ok) throw new Error(`${path}: ${r.status}`);
    },
  );

await post("/api/chat/threads", {
  data: { type: "threads", id: thread, attributes: { title: "bench" } },
});
const t0 = performance.now();
// Sequential per worker keeps the thread's order; 16 workers share the log.
await pool(cfg.messages, 16, (i) =>
  post(`/api/chat/threads/${thread}/messages`, {
    data: {
      type: "messages",
      id: `m${i}`,
      attributes: { role: "user", content: `message ${i} ${"x".repeat(80)}` },
    },
  }));
const preloadSeconds = (performance.now() - t0) / 1000;

/** One join; resolves with the ms to the reply and the frames pushed before it. */
function join(params: Record<string, unknown>): Promise<{ ms: number; entries: number }> {
  const ws = new WebSocket(
    `${cfg.base.replace("http", "ws")}/socket/websocket?app_key=key1&vsn=2.0.0`,
  );
  return new Promise((resolve, reject) => {
    let start = 0;
    let entries = 0;
    const timer = setTimeout(() => reject(new Error("join timed out")), 120_000);
    ws.onmessage = (e) => {
      const s = e.data as string;
      if (s.startsWith('[null,null,"phoenix"')) {
        start = performance.now();
        ws.send(
          JSON.stringify(["1", "1", `chat:key1:${thread}`, "phx_join", {
            client_id: "bench",
            ...params,
          }]),
        );
      } else if (s.startsWith('["1","1"')) {
        clearTimeout(timer);
        const ms = performance.now() - start;
        ws.onclose = null;
        ws.close();
        if (!s.includes('"status":"ok"')) {
          return reject(new Error(`join refused: ${s.slice(0, 200)}`));
        }
        resolve({ ms, entries });
      } else entries++;
    };
    ws.onclose = (e) => reject(new Error(`socket closed: ${e.code}`));
  });
}

const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const cpu = new SelfCpu();
mark("start");
const snapshot: number[] = [];
const replay: { ms: number; entries: number }[] = [];
for (let i = 0; i < cfg.rounds; i++) snapshot.push((await join({})).ms);
for (let i = 0; i < cfg.rounds; i++) replay.push(await join({ after_log_id: 0 }));
mark("end");
done({
  messages: cfg.messages,
  preloadSeconds,
  snapshotMs: median(snapshot),
  replayMs: median(replay.map((r) => r.ms)),
  replayEntries: replay[0].entries,
  genCpu: cpu.share(),
});
