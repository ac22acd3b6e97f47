/**
 * The playground's built-in demo agent. It joins chat threads of the development app as an
 * agent (`agent_secret` + `agent_id` join params) over this server's own WebSocket, exactly as
 * an external agent process would, and answers every pending run: `run:start`, `token` pushes,
 * `run:suspend` / `run:resume` around a tool approval, `run:end`. It stops streaming when the
 * run is cancelled (`run:cancel` signal or an `already_ended` reply).
 */
import { type Channel, Socket } from "phoenix";
import { type DemoPlan, planReply } from "./demo_replies.ts";
import { errorFields, log } from "../log/mod.ts";
import { Topic } from "../wire/topic.ts";

/** Where and as whom the agent connects. */
export interface AgentConnection {
  /** Socket URL as the Phoenix client takes it, e.g. `ws://127.0.0.1:4000/socket`. */
  endpoint: string;
  appKey: string;
  appSecret: string;
}

/** Delay between streamed tokens: slow enough to watch and to cancel. */
export const TOKEN_INTERVAL_MS = 60;

type Payload = Record<string, any>;

/** One demo agent socket, joined to the threads it was asked to serve. */
export class DemoAgents {
  /** The agent id the demo agent joins with. */
  readonly agentId = "demo-agent";
  #socket?: Socket;
  #endpoint?: string;
  #threads = new Map<string, Promise<ThreadAgent>>();
  #closed = false;

  /** Joins `threadId` as the demo agent unless it already has; rejects when the join fails. */
  async ensure(threadId: string, conn: AgentConnection): Promise<void> {
    if (this.#closed) throw new Error("the demo agent is shut down");
    if (!this.#socket || this.#endpoint !== conn.endpoint) {
      this.close();
      this.#closed = false;
      this.#endpoint = conn.endpoint;
      this.#socket = new Socket(conn.endpoint, {
        params: { app_key: conn.appKey },
        reconnectAfterMs: () => 1000,
      });
      this.#socket.connect();
    }
    let agent = this.#threads.get(threadId);
    if (!agent) {
      const topic = Topic.of("chat", conn.appKey, threadId).key;
      agent = ThreadAgent.join(
        this.#socket!.channel(topic, { agent_secret: conn.appSecret, agent_id: this.agentId }),
      );
      this.#threads.set(threadId, agent);
      agent.catch(() => this.#threads.delete(threadId));
    }
    await agent;
  }

  /** Leaves every thread and closes the socket. */
  close(): void {
    this.#closed = true;
    for (const agent of this.#threads.values()) agent.then((a) => a.stop(), () => {});
    this.#threads.clear();
    this.#socket?.disconnect();
    this.#socket = undefined;
  }
}

/** The agent of one thread: tracks messages and runs, answers pending runs one at a time. */
class ThreadAgent {
  #channel: Channel;
  #texts = new Map<string, string>();
  #seen = new Set<string>();
  #ended = new Set<string>();
  #variants = new Map<string, number>();
  #decisions = new Map<string, (approved: boolean | null) => void>();
  #queue: Promise<void> = Promise.resolve();
  #stopped = false;

  private constructor(channel: Channel) {
    this.#channel = channel;
  }

  /** Joins the thread channel; resolves once the first join reply is ok. */
  static join(channel: Channel): Promise<ThreadAgent> {
    const agent = new ThreadAgent(channel);
    agent.#listen();
    return new Promise((resolve, reject) => {
      let first = true;
      channel.join(10_000)
        .receive("ok", (snapshot: Payload) => {
          agent.#snapshot(snapshot);
          if (first) resolve(agent);
          first = false;
        })
        .receive("error", (e: Payload) => {
          if (first) reject(new Error(e?.reason ?? "join refused"));
          first = false;
          channel.leave();
        })
        .receive("timeout", () => first && reject(new Error("join timed out")));
    });
  }

  /** Stops answering and leaves the channel. */
  stop(): void {
    this.#stopped = true;
    for (const decide of this.#decisions.values()) decide(null);
    this.#channel.leave();
  }

  #listen() {
    const ch = this.#channel;
    ch.on(
      "message:created",
      (p: Payload) => this.#remember(p.message?.messageId, p.message?.content),
    );
    ch.on(
      "message:updated",
      (p: Payload) => this.#remember(p.message?.messageId, p.message?.content),
    );
    ch.on("run", (p: Payload) => this.#offer(p.run));
    ch.on("run:cancel", (p: Payload) => this.#end(p.runId));
    ch.on("run:end", (p: Payload) => this.#end(p.runId));
    ch.on("tool:approved", (p: Payload) => this.#decisions.get(p.runId)?.(true));
    ch.on("tool:rejected", (p: Payload) => this.#decisions.get(p.runId)?.(false));
  }

  #snapshot(s: Payload) {
    for (const m of s?.messages ?? []) this.#remember(m.messageId, m.content);
    for (const run of s?.runs ?? []) this.#offer(run);
  }

  #remember(id: unknown, content: unknown) {
    if (typeof id === "string") {
      this.#texts.set(id, typeof content === "string" ? content : JSON.stringify(content ?? ""));
    }
  }

  #end(runId: unknown) {
    if (typeof runId !== "string") return;
    this.#ended.add(runId);
    this.#decisions.get(runId)?.(null);
  }

  /** Queues a pending run (each run once, in arrival order: one active run per thread). */
  #offer(run: Payload | undefined) {
    if (!run || run.status !== "pending" || this.#seen.has(run.runId)) return;
    this.#seen.add(run.runId);
    const key = String(run.parentId);
    const variant = this.#variants.get(key) ?? 0;
    this.#variants.set(key, variant + 1);
    this.#queue = this.#queue.then(() => this.#answer(run, variant)).catch((err) => {
      log.warn("demo agent run failed", { run: run.runId, ...errorFields(err) });
    });
  }

  async #answer(run: Payload, variant: number) {
    const runId = run.runId as string;
    if (this.#stopped || this.#ended.has(runId)) return;
    const prompt = this.#texts.get(run.parentId) ?? "";
    const plan: DemoPlan = planReply(prompt, variant);
    if (!(await this.#push("run:start", { runId }))) return;
    if (!(await this.#stream(runId, plan.tokens))) return;
    if (plan.tool) {
      const toolCallId = crypto.randomUUID();
      const decision = new Promise<boolean | null>((resolve) =>
        this.#decisions.set(runId, resolve)
      );
      if (
        !(await this.#push("run:suspend", {
          runId,
          toolCallId,
          toolName: plan.tool.name,
          args: plan.tool.args,
        }))
      ) return;
      const approved = await decision;
      this.#decisions.delete(runId);
      if (approved === null || !(await this.#push("run:resume", { runId }))) return;
      if (!(await this.#stream(runId, approved ? plan.tool.approved : plan.tool.rejected))) return;
    }
    await this.#push("run:end", { runId, reason: "complete" });
  }

  /** Streams tokens; false once the run ended (cancelled) or the agent stopped. */
  async #stream(runId: string, tokens: string[]): Promise<boolean> {
    for (const text of tokens) {
      if (this.#stopped || this.#ended.has(runId)) return false;
      if (!(await this.#push("token", { runId, text }))) return false;
      await new Promise((r) => setTimeout(r, TOKEN_INTERVAL_MS));
    }
    return !this.#ended.has(runId);
  }

  /** Pushes and waits for the reply; false on an error reply (e.g. already_ended) or timeout. */
  #push(event: string, payload: Payload): Promise<boolean> {
    if (this.#stopped) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.#channel.push(event, payload, 10_000)
        .receive("ok", () => resolve(true))
        .receive("error", (e: Payload) => {
          if (e?.reason === "already_ended") this.#ended.add(payload.runId);
          resolve(false);
        })
        .receive("timeout", () => resolve(false));
    });
  }
}
