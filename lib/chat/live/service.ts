/**
 * The live thread operations: human pushes (send, edit, regenerate, cancel, tool decisions)
 * and agent pushes (run lifecycle, tokens). Every state change is one thread-log append, so it
 * is durable, ordered with REST writes, broadcast, and visible over REST.
 */
import { record } from "../../metrics/mod.ts";
import type { App } from "../../config/apps.ts";
import type { Hub } from "../../hub/hub.ts";
import type { ChatServices } from "../services.ts";
import type { ThreadEntry } from "../types.ts";
import { type PairInput, stagePair } from "./messages.ts";
import { RollupBuffers } from "./rollup.ts";
import { byteLength, MAX_MESSAGE_CONTENT_BYTES } from "../../limits.ts";
import type { Topic } from "../../streams/mod.ts";
import {
  decideTool,
  endRun,
  LiveError,
  newRun,
  resumeRun,
  type RunRecord,
  RunTable,
  startRun,
  type SuspendedTool,
  suspendRun,
} from "./runs.ts";
import { keyOf } from "../../wire/key.ts";

/** What send / edit / regenerate answer: the fields of the client's ActiveRun. */
export interface RunCreated {
  runId: string;
  messageId: string;
  forkOf: string | null;
  regeneratesMessageId: string | null;
  serial: number;
  status: "pending";
}

/** A `stream` delta as broadcast. */
interface StreamDelta {
  runId: string;
  text: string;
  offset: number;
}

/** Members that receive agent-only signals (`run:cancel`). */
export type AgentSink = (event: string, payload: unknown) => void;

/** Live operations over the shared chat services. */
export class LiveService {
  readonly runs: RunTable;
  readonly rollups: RollupBuffers;
  #svc: ChatServices;
  #agents = new Map<string, Set<AgentSink>>();
  /** Text each run has streamed so far, by `{topic}\n{runId}`: followed from the `stream`
   * deltas published, this node's roll-ups and, in clustered mode, those relayed from the node
   * of a run's agent alike. */
  #streamed = new Map<string, { text: string; at: number }>();
  #swept = Date.now();

  constructor(svc: ChatServices, runs: RunTable, hub: Hub, rollupMs = 40) {
    this.#svc = svc;
    this.runs = runs;
    this.rollups = new RollupBuffers((topic, runId, text, offset) => {
      hub.publish(topic, "stream", { runId, text, offset }, undefined, "cluster");
    }, rollupMs);
    hub.observe("stream", (topic, payload) => {
      if (topic.product === "chat") this.#follow(topic, payload as StreamDelta);
    });
    // A hard-deleted thread takes its runs and streaming buffers with it, so a thread
    // re-created with the same id starts clean.
    svc.threadLog.onPurge({
      apply: (app, threadId) => {
        const runIds = runs.all(app.id, threadId).map((r) => r.runId);
        runs.removeThread(app.id, threadId);
        return runIds;
      },
      after: (app, threadId, runIds) => {
        for (const runId of runIds as string[]) this.#dropStream(app, threadId, runId);
      },
    });
  }

  /** Text a run has streamed so far, whichever node its agent is on (for join snapshots). */
  streamText(topic: Topic, runId: string): string {
    return this.#streamed.get(keyOf(topic.key, runId))?.text ?? "";
  }

  /** Follows one published roll-up, made here or relayed; a run's text is dropped with its
   * buffer when it ends here, and after 10 minutes without a delta otherwise. */
  #follow(topic: Topic, d: StreamDelta): void {
    const key = keyOf(topic.key, d.runId);
    const now = Date.now();
    const known = this.#streamed.get(key)?.text ?? "";
    if (d.offset <= known.length) {
      this.#streamed.set(key, { text: known.slice(0, d.offset) + d.text, at: now });
    }
    if (now - this.#swept < 60_000) return;
    this.#swept = now;
    for (const [k, v] of this.#streamed) if (now - v.at > 600_000) this.#streamed.delete(k);
  }

  /** Drops a run's roll-up buffer and the text followed of it. */
  #dropStream(app: App, threadId: string, runId: string): void {
    this.rollups.drop(this.streamKey(app, threadId, runId));
    this.#streamed.delete(keyOf(this.#svc.threadLog.address(app, threadId).topic.key, runId));
  }

  /** The roll-up buffer key of a run. */
  streamKey(app: App, threadId: string, runId: string): string {
    return keyOf(app.id, threadId, runId);
  }

  /** Registers an agent member of a thread; returns the unregister function. */
  addAgent(app: App, threadId: string, sink: AgentSink): () => void {
    const key = keyOf(app.id, threadId);
    let set = this.#agents.get(key);
    if (!set) this.#agents.set(key, set = new Set());
    set.add(sink);
    return () => {
      set!.delete(sink);
      if (set!.size === 0) this.#agents.delete(key);
    };
  }

  // ---- human ---------------------------------------------------------------------------

  /** A user message and its pending run (queued behind any active run). */
  async send(app: App, threadId: string, clientId: string, p: {
    messageId: string;
    runId: string;
    content: unknown;
    parentId: string | null;
    role?: "user" | "system";
  }): Promise<RunCreated> {
    await this.#ensureThread(app, threadId);
    const assistantId = crypto.randomUUID();
    return await this.#createRun(app, threadId, clientId, p.runId, () => ({
      userMessage: { id: p.messageId, content: p.content, role: p.role, parentId: p.parentId },
      assistant: { id: assistantId, parentId: p.messageId },
    }));
  }

  /** Forks `messageId`: a new user message beside it (forkOf) and a new run. */
  edit(app: App, threadId: string, clientId: string, p: {
    messageId: string;
    newMessageId: string;
    runId: string;
    content: unknown;
  }): Promise<RunCreated> {
    const assistantId = crypto.randomUUID();
    return this.#createRun(app, threadId, clientId, p.runId, () => {
      const old = this.#svc.store.messages.get(app, threadId, p.messageId);
      if (!old) throw new LiveError("not_found");
      if (old.role === "assistant") throw new LiveError("invalid_state");
      return {
        userMessage: {
          id: p.newMessageId,
          content: p.content,
          parentId: old.parentId,
          forkOf: old.id,
        },
        assistant: { id: assistantId, parentId: p.newMessageId },
      };
    });
  }

  /** A new assistant answer next to `messageId` (msgRegenerate = messageId). */
  regenerate(app: App, threadId: string, clientId: string, p: {
    messageId: string;
    runId: string;
    parentId?: string;
  }): Promise<RunCreated> {
    const assistantId = crypto.randomUUID();
    return this.#createRun(app, threadId, clientId, p.runId, () => {
      const target = this.#svc.store.messages.get(app, threadId, p.messageId);
      if (!target) throw new LiveError("not_found");
      const parentId = p.parentId ?? (target.role === "assistant" ? target.parentId : target.id);
      return { assistant: { id: assistantId, parentId, msgRegenerate: target.id } };
    });
  }

  /** Cancels a run: ends it as `cancelled` and signals the thread's agents (`run:cancel`). */
  async cancel(
    app: App,
    threadId: string,
    who: { clientId: string; any: boolean },
    runId: string,
  ): Promise<void> {
    const run = this.runs.get(app.id, threadId, runId);
    if (!run) throw new LiveError("not_found");
    if (run.status === "complete" || run.status === "cancelled" || run.status === "error") {
      throw new LiveError("already_ended");
    }
    if (!who.any && run.ownerClientId !== who.clientId) throw new LiveError("forbidden");
    await this.end(app, threadId, runId, "cancelled");
    this.#signalAgents(app, threadId, "run:cancel", {
      runId,
      reason: "cancelled",
      by: who.clientId,
    });
  }

  /** Records the approval or rejection of a suspended tool call; agents get it as an event. */
  async decide(
    app: App,
    threadId: string,
    clientId: string,
    runId: string,
    toolCallId: string,
    approved: boolean,
    reason?: string,
  ) {
    await this.#transition(app, threadId, runId, (run) => {
      const next = decideTool(run, toolCallId, approved);
      const event = approved ? "tool:approved" : "tool:rejected";
      const data: Record<string, unknown> = { runId, toolCallId, clientId, run: next };
      if (!approved && reason) data.reason = reason;
      return { next, entries: [{ event, data }] };
    });
  }

  // ---- agent ---------------------------------------------------------------------------

  /** pending -> active (`run:start`); refused while another run of the thread is active. */
  async start(app: App, threadId: string, agentId: string, runId: string): Promise<RunRecord> {
    return await this.#transition(app, threadId, runId, (run) => {
      const next = startRun(run, this.runs.busy(app.id, threadId, runId), agentId);
      const data = {
        runId,
        ownerClientId: next.ownerClientId,
        startedAt: next.startedAt,
        run: next,
      };
      return { next, entries: [{ event: "run:start", data }] };
    });
  }

  /** Appends token text to an active run's roll-up buffer (synchronous: keeps token order). */
  token(app: App, threadId: string, runId: string, text: string): void {
    const run = this.runs.get(app.id, threadId, runId);
    if (!run) throw new LiveError("not_found");
    if (run.status === "complete" || run.status === "cancelled" || run.status === "error") {
      throw new LiveError("already_ended");
    }
    if (run.status !== "active") throw new LiveError("invalid_state");
    const topic = this.#svc.threadLog.address(app, threadId).topic;
    const key = this.streamKey(app, threadId, runId);
    // The stream becomes the final message's content: bounded like any content.
    if (this.rollups.bytes(key) + byteLength(text) > MAX_MESSAGE_CONTENT_BYTES) {
      throw new LiveError(
        `invalid_request: stream is larger than ${MAX_MESSAGE_CONTENT_BYTES} bytes`,
      );
    }
    if (!this.rollups.append(key, topic, runId, text)) {
      throw new LiveError("already_ended");
    }
    record.token();
  }

  /** active -> suspended; fires `run:suspend` then `run:suspended`. */
  async suspend(app: App, threadId: string, runId: string, tool: SuspendedTool): Promise<void> {
    this.rollups.flush(this.streamKey(app, threadId, runId), runId);
    await this.#transition(app, threadId, runId, (run) => {
      const next = suspendRun(run, tool);
      const data = { runId, ...tool, run: next };
      return { next, entries: [{ event: "run:suspend", data }, { event: "run:suspended", data }] };
    });
  }

  /** suspended -> active (`run:resume`). */
  async resume(app: App, threadId: string, runId: string): Promise<void> {
    await this.#transition(app, threadId, runId, (run) => {
      const next = resumeRun(run);
      return { next, entries: [{ event: "run:resume", data: { runId, run: next } }] };
    });
  }

  /**
   * Ends a run: one append of `run:end`, `message:updated` (the finalised assistant message
   * with the full text) and the compaction `batch` of four slot changes; then the run's
   * volatile stream buffer is dropped. `content` replaces the streamed text when given.
   */
  async end(
    app: App,
    threadId: string,
    runId: string,
    reason: "complete" | "cancelled" | "error",
    content?: unknown,
  ): Promise<void> {
    const key = this.streamKey(app, threadId, runId);
    const text = this.rollups.close(key, runId);
    const messages = this.#svc.store.messages;
    try {
      await this.#svc.threadLog.append(app, threadId, (head) => {
        const run = this.runs.get(app.id, threadId, runId);
        if (!run) throw new LiveError("not_found");
        const ended = endRun(run, reason);
        const msg = messages.get(app, threadId, run.messageId);
        const final = msg
          ? {
            ...msg,
            content: content !== undefined ? content : text,
            status: reason,
            updatedAt: ended.endedAt!,
          }
          : null;
        const head3 = head + 3;
        const ops = [
          final
            ? { op: "set", slot: `message:${run.messageId}`, value: final }
            : { op: "delete", slot: `message:${run.messageId}` },
          { op: "set", slot: `run:${runId}`, value: ended },
          { op: "delete", slot: `stream:${runId}` },
          { op: "set", slot: "head", value: { messageId: run.messageId, runId, logId: head3 } },
        ];
        const entries: ThreadEntry[] = [
          { event: "run:end", data: { runId, reason, endedAt: ended.endedAt } },
          {
            event: "message:updated",
            data: { message: final ?? { id: run.messageId, deleted: true } },
          },
          { event: "batch", data: { ops } },
        ];
        const writeFinal = final ? messages.stageReplace(app, threadId, final) : undefined;
        return {
          entries,
          apply: () => {
            writeFinal?.();
            this.runs.put(app.id, threadId, ended);
          },
          result: null,
        };
      });
    } catch (err) {
      if (err instanceof LiveError && err.reason === "already_ended") {
        this.#dropStream(app, threadId, runId);
      } else this.rollups.reopen(key);
      throw err;
    }
    this.#dropStream(app, threadId, runId);
    record.run(reason);
  }

  // ---- internals -----------------------------------------------------------------------

  async #ensureThread(app: App, threadId: string): Promise<void> {
    if (this.#svc.store.threads.get(app, threadId)) return;
    try {
      await this.#svc.store.threads.create(app, { id: threadId });
    } catch (err) {
      if (!this.#svc.store.threads.get(app, threadId)) throw err; // else created concurrently
    }
  }

  /**
   * One thread-log append that stages the messages `build` names (an optional user message and
   * the assistant message the new run streams into) and the run itself, owned by `clientId`.
   */
  async #createRun(
    app: App,
    threadId: string,
    clientId: string,
    runId: string,
    build: () => Pick<PairInput, "userMessage" | "assistant">,
  ): Promise<RunCreated> {
    const r = await this.#svc.threadLog.append(app, threadId, () => {
      if (typeof runId !== "string" || runId === "") {
        throw new LiveError("invalid_request: runId must be a non-empty string");
      }
      if (this.runs.get(app.id, threadId, runId)) {
        throw new LiveError(`invalid_request: run ${runId} already exists`);
      }
      const { userMessage, assistant } = build();
      const staged = stagePair(this.#svc.store, app, threadId, {
        userMessage,
        assistant,
        runId,
        ownerClientId: clientId,
      });
      const run = newRun({
        runId,
        ownerClientId: clientId,
        messageId: assistant.id,
        parentId: assistant.parentId,
        forkOf: userMessage?.forkOf,
        msgRegenerate: assistant.msgRegenerate,
      });
      const created = {
        messageId: userMessage?.id ?? assistant.id,
        forkOf: userMessage?.forkOf ?? null,
        regeneratesMessageId: assistant.msgRegenerate ?? null,
      };
      return {
        entries: [...staged.entries, { event: "run", data: { run } }],
        apply: () => {
          staged.apply();
          this.runs.put(app.id, threadId, run);
        },
        result: { created, count: staged.entries.length + 1 },
      };
    });
    const serial = r.position + r.result.count - 1;
    record.run("pending");
    return { runId, ...r.result.created, serial, status: "pending" };
  }

  async #transition(
    app: App,
    threadId: string,
    runId: string,
    step: (run: RunRecord) => { next: RunRecord; entries: ThreadEntry[] },
  ): Promise<RunRecord> {
    const r = await this.#svc.threadLog.append(app, threadId, () => {
      const run = this.runs.get(app.id, threadId, runId);
      if (!run) throw new LiveError("not_found");
      const { next, entries } = step(run);
      return { entries, apply: () => this.runs.put(app.id, threadId, next), result: next };
    });
    record.run(r.result.status);
    return r.result;
  }

  #signalAgents(app: App, threadId: string, event: string, payload: unknown): void {
    for (const sink of this.#agents.get(keyOf(app.id, threadId)) ?? []) sink(event, payload);
  }
}
