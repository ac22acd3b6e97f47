/** Record -> JSON:API resource objects, and cursor pagination documents. */
import type { Page } from "../store_collection.ts";
import type { Bot, MessageRecord, Participant, Reaction, Thread } from "../types.ts";

/** Base path of every chat REST route. */
export const BASE = "/api/chat";

type Rel = { data: { type: string; id: string } | null } | Record<string, unknown>;

const one = (type: string, id: string | null) => ({ data: id === null ? null : { type, id } });
const enc = encodeURIComponent;

/** A thread resource (`log_id` = current thread-log position). */
export function threadResource(t: Thread, logId: number, participants?: Participant[]) {
  const self = `${BASE}/threads/${enc(t.id)}`;
  const participantsRel: Rel = { links: { related: `${self}/participants` } };
  if (participants) {
    participantsRel.data = participants.map((p) => ({ type: "participants", id: p.id }));
  }
  return {
    type: "threads",
    id: t.id,
    attributes: {
      title: t.title,
      status: t.status,
      metadata: t.metadata,
      created_at: t.createdAt,
      updated_at: t.updatedAt,
      last_message_at: t.lastMessageAt,
      log_id: logId,
    },
    relationships: {
      bot: one("bots", t.botId),
      participants: participantsRel,
      messages: { links: { related: `${self}/messages` } },
    },
    links: { self },
  };
}

/** A message resource. */
export function messageResource(m: MessageRecord) {
  const self = `${BASE}/threads/${enc(m.threadId)}/messages/${enc(m.id)}`;
  return {
    type: "messages",
    id: m.id,
    attributes: {
      role: m.role,
      content: m.content,
      status: m.status,
      run_id: m.runId,
      owner_client_id: m.ownerClientId,
      parent_id: m.parentId,
      fork_of: m.forkOf,
      msg_regenerate: m.msgRegenerate,
      created_at: m.createdAt,
      updated_at: m.updatedAt,
      edited_at: m.editedAt,
      deleted_at: m.deletedAt,
    },
    relationships: {
      thread: one("threads", m.threadId),
      parent: one("messages", m.parentId),
      author: one("participants", m.authorParticipantId),
      bot: one("bots", m.botId),
      replies: { links: { related: `${self}/replies` } },
      reactions: { links: { related: `${self}/reactions` } },
    },
    links: { self },
  };
}

/** A participant resource. */
export function participantResource(p: Participant) {
  return {
    type: "participants",
    id: p.id,
    attributes: {
      client_id: p.clientId,
      display_name: p.displayName,
      role: p.role,
      metadata: p.metadata,
      last_read_message_id: p.lastReadMessageId,
      last_read_at: p.lastReadAt,
      created_at: p.createdAt,
      updated_at: p.updatedAt,
    },
    relationships: {
      thread: one("threads", p.threadId),
      bot: one("bots", p.botId),
      last_read_message: one("messages", p.lastReadMessageId),
    },
    links: { self: `${BASE}/threads/${enc(p.threadId)}/participants/${enc(p.id)}` },
  };
}

/** A reaction resource. */
export function reactionResource(r: Reaction) {
  return {
    type: "reactions",
    id: r.id,
    attributes: { emoji: r.emoji, created_at: r.createdAt },
    relationships: {
      message: one("messages", r.messageId),
      participant: one("participants", r.participantId),
    },
    links: {
      self: `${BASE}/threads/${enc(r.threadId)}/messages/${enc(r.messageId)}/reactions/${
        enc(r.id)
      }`,
    },
  };
}

/** A bot resource. Never includes the webhook secret. */
export function botResource(b: Bot) {
  return {
    type: "bots",
    id: b.id,
    attributes: {
      name: b.name,
      webhook_url: b.webhookUrl,
      events: b.events,
      metadata: b.metadata,
      created_at: b.createdAt,
      updated_at: b.updatedAt,
    },
    links: { self: `${BASE}/bots/${enc(b.id)}` },
  };
}

/** Reads `page[size]` / `page[after]` / `page[before]` (already validated). */
export function pageQuery(q: Record<string, unknown>) {
  return {
    size: (q["page[size]"] as number | undefined) ?? 20,
    after: q["page[after]"] as string | undefined,
    before: q["page[before]"] as string | undefined,
  };
}

/**
 * A collection document: `data`, `links.self` plus `links.next` / `links.prev` (relative URLs
 * of the neighbouring pages, same filters; null when there is none), `meta.page.size`.
 */
export function listDocument<T extends { id: string }, R>(
  url: string,
  page: Page<T>,
  size: number,
  toResource: (t: T) => R,
  extra: Record<string, unknown> = {},
) {
  const u = new URL(url);
  const link = (set: string, id: string) => {
    const l = new URL(u);
    l.searchParams.delete("page[after]");
    l.searchParams.delete("page[before]");
    l.searchParams.set(set, id);
    return l.pathname + l.search;
  };
  const first = page.items[0];
  const last = page.items.at(-1);
  return {
    data: page.items.map(toResource),
    links: {
      self: u.pathname + u.search,
      next: page.hasNext && last ? link("page[after]", last.id) : null,
      prev: page.hasPrev && first ? link("page[before]", first.id) : null,
    },
    meta: { page: { size } },
    ...extra,
  };
}
