/**
 * The console's live debug stream of one app: the debug tap's entries, shaped the way
 * Pusher's debug console shows them (kind, channel, event, serial, payload preview, outcome
 * and reason, status, attempt), as server-sent events. Entries queue while the stream writes;
 * past `QUEUE` the oldest are dropped and counted. Nothing is built while nobody watches.
 */
import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import { type TapEntry, watchApp } from "../debug/tap.ts";
import { preview } from "./browse.ts";
import { Topic } from "../wire/topic.ts";

/** Most entries held while the stream writes. */
const QUEUE = 2000;
/** A comment line this often keeps proxies from closing an idle stream. */
const KEEPALIVE_MS = 15_000;

/** What the page shows of one entry. */
export function entryView(e: TapEntry): Record<string, unknown> {
  const out: Record<string, unknown> = { time: e.time, kind: e.kind };
  const topic = typeof e.topic === "string" ? Topic.parse(e.topic) : null;
  if (topic) {
    out.product = topic.product;
    out.channel = topic.name;
  }
  switch (e.kind) {
    case "event": {
      const event = String(e.event);
      out.event = event;
      if (event.startsWith("client-")) out.kind = "client";
      else if (event.startsWith("presence") || event.startsWith("pusher_internal:member_")) {
        out.kind = "presence";
      }
      const p = e.payload as Record<string, unknown> | undefined;
      const serial = p?.serial ?? p?.log_id;
      if (typeof serial === "number") out.serial = serial;
      out.payload = preview(p && "data" in p ? p.data : p);
      out.subscribers = e.subscribers;
      break;
    }
    case "join":
      out.socket_id = e.socket_id;
      out.outcome = e.outcome === "ok" ? "ok" : "refused";
      if (e.outcome !== "ok") out.reason = e.outcome;
      break;
    case "api":
      Object.assign(out, { method: e.method, path: e.path, status: e.status, ms: e.ms });
      break;
    case "connection":
      Object.assign(out, {
        what: e.what,
        protocol: e.protocol,
        origin: e.origin,
        socket_id: e.socket_id,
      });
      break;
    case "webhook":
      Object.assign(out, { url: e.url, attempt: e.attempt, status: e.status });
      break;
  }
  return out;
}

/** Streams `appKey`'s tap entries until the client goes away or `untilMs` (session end). */
export function liveStream(c: Context, appKey: string, untilMs: number): Response {
  return streamSSE(c, async (stream) => {
    const queue: TapEntry[] = [];
    let dropped = 0;
    let wake: (() => void) | undefined;
    let open = true;
    const stop = watchApp(appKey, (entry) => {
      queue.push(entry);
      if (queue.length > QUEUE) {
        queue.shift();
        dropped++;
      }
      wake?.();
    });
    const end = () => {
      open = false;
      wake?.();
    };
    stream.onAbort(end);
    const expiry = setTimeout(end, Math.max(0, Math.min(untilMs - Date.now(), 2 ** 31 - 1)));
    const keepalive = setInterval(() => {
      queue.length === 0 && open && void stream.write(": keepalive\n\n").catch(end);
    }, KEEPALIVE_MS);
    try {
      await stream.writeSSE({ event: "ready", data: "{}" });
      while (open) {
        while (queue.length && open) {
          await stream.writeSSE({
            data: JSON.stringify({ ...entryView(queue.shift()!), dropped }),
          });
        }
        if (open) await new Promise<void>((r) => (wake = r));
      }
    } finally {
      clearTimeout(expiry);
      clearInterval(keepalive);
      stop();
    }
  });
}
