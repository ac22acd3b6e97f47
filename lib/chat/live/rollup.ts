/**
 * Token roll-ups: agent tokens are buffered per run and flushed every `intervalMs` (40 ms) as
 * one `stream` delta. Stream text lives only in memory (volatile by design, see
 * docs/chat-live.md "Streaming"): it is written durably once, inside the final message, when
 * the run ends.
 */
import { byteLength } from "../../limits.ts";
import type { Topic } from "../../streams/mod.ts";

/** One run's stream: text already broadcast plus text waiting for the next roll-up. */
interface RunStream {
  flushed: string;
  pending: string;
  timer: ReturnType<typeof setTimeout> | null;
  /** Set when the run is ending: further tokens are refused. */
  closed: boolean;
  /** UTF-8 bytes of flushed + pending text. */
  bytes: number;
  topic: Topic;
}

/** Sends one delta: `{ runId, text, offset }` where offset is the delta's start in the text. */
export type FlushFn = (topic: Topic, runId: string, text: string, offset: number) => void;

/** Per-run token buffers with a fixed roll-up interval. */
export class RollupBuffers {
  #streams = new Map<string, RunStream>();
  #flush: FlushFn;
  #intervalMs: number;

  /** `intervalMs` defaults to the spec's 40 ms. */
  constructor(flush: FlushFn, intervalMs = 40) {
    this.#flush = flush;
    this.#intervalMs = intervalMs;
  }

  /** Adds token text to a run's buffer; false when the run's stream is closed. */
  append(key: string, topic: Topic, runId: string, text: string): boolean {
    let s = this.#streams.get(key);
    if (!s) {
      this.#streams.set(
        key,
        s = { flushed: "", pending: "", timer: null, closed: false, bytes: 0, topic },
      );
    }
    if (s.closed) return false;
    if (text === "") return true;
    s.pending += text;
    s.bytes += byteLength(text);
    s.timer ??= setTimeout(() => this.#flushNow(key, runId), this.#intervalMs);
    return true;
  }

  /** Text broadcast so far (what a joining viewer gets in its snapshot). */
  flushed(key: string): string {
    return this.#streams.get(key)?.flushed ?? "";
  }

  /** UTF-8 bytes a run has streamed so far (flushed and pending); 0 without a buffer. */
  bytes(key: string): number {
    return this.#streams.get(key)?.bytes ?? 0;
  }

  /** Whether a buffer exists for the key. */
  has(key: string): boolean {
    return this.#streams.has(key);
  }

  /** Flushes now and refuses further tokens; returns the full text. */
  close(key: string, runId: string): string {
    const s = this.#streams.get(key);
    if (!s) return "";
    this.#flushNow(key, runId);
    s.closed = true;
    return s.flushed;
  }

  /** Broadcasts the pending text now (before a suspend, so viewers see it first). */
  flush(key: string, runId: string): void {
    this.#flushNow(key, runId);
  }

  /** Reopens a closed stream (an end that failed to commit). */
  reopen(key: string): void {
    const s = this.#streams.get(key);
    if (s) s.closed = false;
  }

  /** Drops a run's buffer (after its end was published). */
  drop(key: string): void {
    const s = this.#streams.get(key);
    if (s?.timer) clearTimeout(s.timer);
    this.#streams.delete(key);
  }

  /** Stops every timer (shutdown). */
  clear(): void {
    for (const key of [...this.#streams.keys()]) this.drop(key);
  }

  #flushNow(key: string, runId: string): void {
    const s = this.#streams.get(key);
    if (!s) return;
    if (s.timer) clearTimeout(s.timer);
    s.timer = null;
    if (s.pending === "") return;
    const offset = s.flushed.length;
    const text = s.pending;
    s.flushed += text;
    s.pending = "";
    this.#flush(s.topic, runId, text, offset);
  }
}
