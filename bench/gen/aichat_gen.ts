// AI chat load generator (Deno: it runs the SDK's TypeScript with the `ai` package): `users`
// threads, each with one user and one agent streaming tokens at `tokensPerSecond` (pushed
// every tick, as the due tokens, the way pipeUIMessageStream coalesces). The user is either
// the AI SDK's chat state machine over SwitchboardChatTransport (`mode: "transport"`, what
// `useChat` runs) or a plain ChatClient session (`mode: "chatclient"`). Latency is per token,
// from the agent pushing it to the user's state holding it (fixed-length tokens map text
// length back to token indexes).
import { AbstractChat, type ChatState, type ChatStatus, type UIMessage } from "ai";
import { SwitchboardChatTransport } from "../../sdk/ai/mod.ts";
import { ChatClient } from "../../sdk/client/mod.ts";
import type { ChatAgent } from "../../sdk/client/chat_client.ts";
import { config, done, log, mark, pool, SelfCpu, sleep } from "./common.ts";

interface Cfg {
  base: string;
  users: number;
  mode: "transport" | "chatclient";
  tokensPerSecond: number;
  seconds: number;
  warmup: number;
  tag: string;
}

const cfg = config<Cfg>();
const TOKEN = "tok ";
const L = TOKEN.length;
const endpoint = `${cfg.base.replace("http", "ws")}/socket`;

/** Latency histogram in 0.1 ms buckets up to 10 s. */
const hist = new Uint32Array(100_001);
let histCount = 0;
const pct = (p: number) => {
  const want = Math.ceil((p / 100) * histCount);
  let acc = 0;
  for (let i = 0; i < hist.length; i++) if ((acc += hist[i]) >= want) return i / 10;
  return NaN;
};

interface User {
  thread: string;
  agent: ChatAgent;
  runId?: string;
  sent: number;
  sendTimes: Float64Array;
  received: number;
  close(): void;
}

const capacity = Math.ceil(cfg.tokensPerSecond * (cfg.seconds + cfg.warmup + 5));
let measureFrom = Infinity;
let measureTo = Infinity;

/** Records the tokens newly held by `u`'s state, given its text length. */
function seen(u: User, length: number) {
  const now = performance.now();
  const end = Math.floor(length / L);
  for (let k = u.received; k < end; k++) {
    const t = u.sendTimes[k];
    if (t >= measureFrom && t < measureTo) {
      hist[Math.min(100_000, Math.round((now - t) * 10))]++;
      histCount++;
    }
  }
  u.received = Math.max(u.received, end);
}

/** A plain ChatState whose updates report the assistant text length. */
class MeasuredState implements ChatState<UIMessage> {
  status: ChatStatus = "ready";
  error: Error | undefined;
  messages: UIMessage[] = [];
  constructor(private onText: (length: number) => void) {}
  pushMessage = (m: UIMessage) => {
    this.messages = [...this.messages, m];
    this.#report(m);
  };
  popMessage = () => void (this.messages = this.messages.slice(0, -1));
  replaceMessage = (i: number, m: UIMessage) => {
    this.messages = this.messages.map((x, j) => (j === i ? m : x));
    this.#report(m);
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
  #report(m: UIMessage) {
    if (m.role !== "assistant") return;
    this.onText(m.parts.reduce((n, p) => n + (p.type === "text" ? p.text.length : 0), 0));
  }
}

class MeasuredChat extends AbstractChat<UIMessage> {}

const agents = new ChatClient("key1", { endpoint });
const users: User[] = await pool(cfg.users, 8, async (i) => {
  const thread = `ai-${cfg.tag}-${i}`;
  const agent = await agents.connectAgent(thread, { secret: "secret1", agentId: "bench" });
  const u: User = {
    thread,
    agent,
    sent: 0,
    sendTimes: new Float64Array(capacity),
    received: 0,
    close: () => {},
  };
  const started = new Promise<void>((resolve) => {
    agent.on("run:pending", async (run: { runId: string }) => {
      await agent.startRun(run.runId);
      u.runId = run.runId;
      resolve();
    });
  });
  if (cfg.mode === "transport") {
    const transport = new SwitchboardChatTransport({
      endpoint,
      appKey: "key1",
      clientId: `user-${i}`,
    });
    const chat = new MeasuredChat({
      id: thread,
      transport,
      state: new MeasuredState((n) => seen(u, n)),
    });
    void chat.sendMessage({ text: "go" }).catch((e) => log(`send failed: ${e}`));
    u.close = () => transport.close();
  } else {
    const client = new ChatClient("key1", { endpoint });
    const session = await client.connect(thread, { clientId: `user-${i}` });
    session.on("update", () => u.runId && seen(u, session.view.getStream(u.runId).length));
    await session.view.send("go");
    u.close = () => client.disconnect();
  }
  await started;
  return u;
});
log(`${cfg.users} ${cfg.mode} users streaming`);

let running = true;
let pushErrors = 0;
const begin = performance.now();
async function pace() {
  while (running) {
    const due = Math.min(
      capacity,
      Math.floor(((performance.now() - begin) / 1000) * cfg.tokensPerSecond),
    );
    for (const u of users) {
      if (u.sent >= due) continue;
      const n = due - u.sent;
      const now = performance.now();
      for (let k = 0; k < n; k++) u.sendTimes[u.sent + k] = now;
      u.sent = due;
      u.agent.token(u.runId!, TOKEN.repeat(n)).catch(() => void pushErrors++);
    }
    await sleep(10);
  }
}
const pacing = pace();
await sleep(cfg.warmup * 1000);
const cpu = new SelfCpu();
mark("start");
measureFrom = performance.now();
const sent0 = users.reduce((a, u) => a + u.sent, 0);
await sleep(cfg.seconds * 1000);
measureTo = performance.now();
const sent1 = users.reduce((a, u) => a + u.sent, 0);
mark("end");
const genCpu = cpu.share();
running = false;
await pacing;
await sleep(400); // the last roll-ups (40 ms) arrive
const lagging = users.filter((u) => u.received < u.sent - cfg.tokensPerSecond * 0.2).length;
for (const u of users) await u.agent.end(u.runId!, "complete").catch(() => {});
for (const u of users) u.close();
agents.disconnect();
done({
  users: cfg.users,
  mode: cfg.mode,
  tokensPerSecond: (sent1 - sent0) / ((measureTo - measureFrom) / 1000),
  samples: histCount,
  p50: pct(50),
  p99: pct(99),
  max: pct(100),
  laggingUsers: lagging,
  pushErrors,
  genCpu,
});
// The SDK's sockets may keep timers; the result is out.
Deno.exit(0);
