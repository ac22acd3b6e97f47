/**
 * The console's read-only views of an app's data, over the products' own services: channels
 * (occupancy, presence, serial, history tail), Durable Objects (state at the head, the log,
 * the state at an earlier log_id), chat threads (messages, runs). Every answer is bounded.
 */
import type { App } from "../config/apps.ts";
import type { ChannelService } from "../pubsub/service.ts";
import { channelKind, validChannelName } from "../pubsub/names.ts";
import { addressOf, type ObjectStore } from "../objects/store.ts";
import { emptyRecord, foldOps, type ObjectRecord } from "../objects/ops.ts";
import { unpackEntry } from "../objects/entry.ts";
import type { ChatStore } from "../chat/store.ts";
import { RunTable } from "../chat/live/runs.ts";
import type { Storage } from "../store/storage.ts";
import type { Table } from "../store/table.ts";
import { objectOfStream, objectStreamPrefix, Topic } from "../streams/mod.ts";

/** A request the console refuses (bad name, unknown object): status and message. */
export class BrowseError extends Error {
  constructor(readonly status: 400 | 404, message: string) {
    super(message);
  }
}

/** Most entries of a log or history shown at once. */
const TAIL = 50;
/** Most objects listed at once. */
const LIST = 200;
/** Most log entries folded to show an earlier state. */
const MAX_FOLD = 200_000;

/** The services the views read. */
export interface BrowseSources {
  channels: ChannelService;
  objects: ObjectStore;
  chat: ChatStore;
  env: Storage;
}

/** The read-only views; see the module comment. */
export class Browse {
  #s: BrowseSources;
  #runs: RunTable;
  #objectIndex: Table<unknown>;

  constructor(sources: BrowseSources) {
    this.#s = sources;
    this.#runs = new RunTable(sources.env);
    this.#objectIndex = sources.env.db("objects:meta");
  }

  /** The app's occupied channels (this node's view of the cluster-wide occupancy). */
  channels(
    app: App,
  ): { name: string; subscribers: number; members: number | null; serial: number | null }[] {
    const svc = this.#s.channels;
    return svc.occupancy.topics(app.key).sort(Topic.order).slice(0, 1000).map((topic) => {
      const name = topic.name;
      const kind = channelKind(name);
      return {
        name,
        subscribers: svc.occupancy.count(topic),
        members: kind === "presence" ? svc.presence.count(topic) : null,
        serial: kind === "ephemeral" ? null : svc.serial(app, name),
      };
    });
  }

  /** One channel: occupancy, presence members, serial and the newest history. */
  channel(app: App, name: string) {
    if (!validChannelName(name)) throw new BrowseError(400, "invalid channel name");
    const svc = this.#s.channels;
    const topic = svc.topic(app, name);
    const kind = channelKind(name);
    const subscribers = svc.occupancy.count(topic);
    const serial = kind === "ephemeral" ? null : svc.serial(app, name);
    const history = serial === null
      ? []
      : svc.history(app, name, Math.max(0, serial - TAIL), TAIL).items;
    return {
      name,
      kind,
      occupied: subscribers > 0,
      subscribers,
      members: kind === "presence" ? svc.presence.members(topic).slice(0, 200) : null,
      serial,
      history: history.map((h) => ({ ...h, data: preview(h.data) })),
    };
  }

  /**
   * Objects of the app whose type starts with `typePrefix`, in key order, at most `LIST`, from
   * the objects log's stream index (`objects:meta`, one row per stream ever written; keys
   * `{appId}/{type}/{key}` with `/` and `%` in the type escaped).
   */
  objectList(app: App, typePrefix = ""): { type: string; key: string; log_id: number }[] {
    const start = objectStreamPrefix(app, typePrefix);
    const out: { type: string; key: string; log_id: number }[] = [];
    for (const k of this.#objectIndex.getKeys({ start, limit: LIST })) {
      const stream = k as string;
      if (typeof stream !== "string" || !stream.startsWith(start)) break;
      const object = objectOfStream(app, stream);
      if (object) out.push({ ...object, log_id: this.#s.objects.streams.log.head(stream) });
    }
    return out;
  }

  /** An object: state at the head, its newest log entries and, with `at`, the state then. */
  object(app: App, type: string, key: string, at?: number) {
    if (!type || !key || type.length > 200 || key.length > 1000) {
      throw new BrowseError(400, "invalid object address");
    }
    const store = this.#s.objects;
    const ref = { appId: app.id, appKey: app.key, type, key };
    const head = store.snapshot(ref);
    const log = store.items(ref, Math.max(0, head.log_id - TAIL), TAIL).map((i) => ({
      ...i,
      value: preview(i.value),
    }));
    const out: Record<string, unknown> = { type, key, log_id: head.log_id, state: head.state, log };
    if (at !== undefined) {
      if (!Number.isInteger(at) || at < 0 || at > head.log_id) {
        throw new BrowseError(400, `at must be a log_id from 0 to ${head.log_id}`);
      }
      if (at > MAX_FOLD) throw new BrowseError(400, `at most ${MAX_FOLD} entries are folded`);
      out.at = { log_id: at, state: this.#stateAt(store, ref, at).state };
    }
    return out;
  }

  /** The object's state after the entry `at`, folded from the start of its log. */
  #stateAt(store: ObjectStore, ref: Parameters<ObjectStore["items"]>[0], at: number): ObjectRecord {
    const { stream } = addressOf(ref);
    let record = emptyRecord();
    let position = 0;
    while (position < at) {
      const chunk = store.streams.log.after<Parameters<typeof unpackEntry>[0]>(
        stream,
        position,
        Math.min(1000, at - position),
      );
      if (chunk.length === 0) break;
      for (const rec of chunk) {
        if (rec.position > at) break;
        record = foldOps(record, unpackEntry(rec.entry).ops);
      }
      position = chunk[chunk.length - 1].position;
    }
    return record;
  }

  /** The app's threads, newest activity first (at most 100). */
  threads(app: App) {
    const page = this.#s.chat.threads.list(app, { size: 100 });
    return page.items
      .sort((a, b) => (b.lastMessageAt ?? b.updatedAt) - (a.lastMessageAt ?? a.updatedAt))
      .map((t) => ({
        id: t.id,
        title: t.title,
        status: t.status,
        botId: t.botId,
        updatedAt: t.updatedAt,
        lastMessageAt: t.lastMessageAt,
      }));
  }

  /** One thread: its newest messages and its runs with their status. */
  thread(app: App, id: string) {
    const thread = this.#s.chat.getThread(app, id);
    if (!thread) throw new BrowseError(404, "no such thread");
    const { messages } = this.#s.chat.messages.recent(app, id, TAIL);
    return {
      thread,
      topic: Topic.of("chat", app.key, id).key,
      messages: messages.map((m) => ({
        id: m.id,
        role: m.role,
        status: m.status,
        runId: m.runId,
        createdAt: m.createdAt,
        content: preview(m.content, 500),
      })),
      runs: this.#runs.all(app.id, id).slice(-TAIL),
    };
  }
}

/** A value as short JSON text for display. */
export function preview(value: unknown, max = 300): string {
  let text: string;
  try {
    text = typeof value === "string" ? value : JSON.stringify(value) ?? "null";
  } catch {
    text = String(value);
  }
  return text.length > max ? text.slice(0, max) + "…" : text;
}
