/**
 * Server SDK: `ChatRestClient`, typed methods for every chat REST route (docs/chat-rest.md).
 * Methods resolve with the JSON:API document (`{ data, links?, meta?, included? }`) and throw
 * `SwitchboardError` (status + `{ errors }` body) on failures.
 */
import { type Connection, sendRequest } from "./auth.ts";
export { verifyWebhook } from "../shared/webhook_signature.ts";

/** A JSON:API resource object. */
export interface Resource<A = Record<string, unknown>> {
  type: string;
  id: string;
  attributes: A;
  relationships?: Record<string, unknown>;
  links?: Record<string, string | null>;
}

/** A single-resource document. */
export interface Document<A = Record<string, unknown>> {
  data: Resource<A>;
  meta?: Record<string, unknown>;
  included?: Resource[];
}

/** A collection document; follow `links.next` / `links.prev` with `page()`. */
export interface ListDocument<A = Record<string, unknown>> {
  data: Resource<A>[];
  links: { self: string; next: string | null; prev: string | null };
  meta?: Record<string, unknown>;
  included?: Resource[];
}

/** Cursor pagination options of every list call. */
export interface PageOptions {
  size?: number;
  after?: string;
  before?: string;
}

/** Filters and include of `listThreads`. */
export interface ThreadListOptions extends PageOptions {
  status?: string | string[];
  participant?: string;
  bot?: string;
  includeParticipants?: boolean;
}

/** Message creation attributes (snake_case, as on the wire). */
export interface MessageInput {
  role: "user" | "assistant" | "system";
  content?: unknown;
  status?: "streaming" | "complete" | "cancelled" | "error";
  run_id?: string | null;
  owner_client_id?: string | null;
  fork_of?: string | null;
  msg_regenerate?: string | null;
  parent_id?: string | null;
  author_participant_id?: string | null;
  bot_id?: string | null;
}

/** Bot attributes. */
export interface BotInput {
  name: string;
  webhook_url?: string | null;
  events?: string[];
  metadata?: Record<string, unknown>;
}

const enc = encodeURIComponent;
const T = "/api/chat/threads";

function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

function pageParams(o: PageOptions = {}) {
  return { "page[size]": o.size, "page[after]": o.after, "page[before]": o.before };
}

const body = (
  type: string,
  attributes?: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) => ({
  data: { type, ...(attributes ? { attributes } : {}), ...extra },
});

/** Typed client of `/api/chat` (threads, messages, participants, reactions, bots). */
export class ChatRestClient {
  #conn: Connection;

  /** Uses `conn` ({ baseUrl, appKey, appSecret }) for every call. */
  constructor(conn: Connection) {
    this.#conn = { ...conn, baseUrl: conn.baseUrl.replace(/\/+$/, "") };
  }

  #call<R>(method: string, path: string, payload?: unknown): Promise<R> {
    return sendRequest(this.#conn, method, path, payload) as Promise<R>;
  }

  /** Fetches a `links.next` / `links.prev` URL of a previous list answer. */
  page<A = Record<string, unknown>>(link: string): Promise<ListDocument<A>> {
    return this.#call("GET", link);
  }

  // ---- threads ----

  /** GET /threads with pagination and filters. */
  listThreads(o: ThreadListOptions = {}): Promise<ListDocument> {
    const status = Array.isArray(o.status) ? o.status.join(",") : o.status;
    return this.#call(
      "GET",
      T + query({
        ...pageParams(o),
        "filter[status]": status,
        "filter[participant]": o.participant,
        "filter[bot]": o.bot,
        include: o.includeParticipants ? "participants" : undefined,
      }),
    );
  }

  /** POST /threads (id optional; botId starts it in status bot). */
  createThread(
    o: { id?: string; title?: string | null; metadata?: Record<string, unknown>; botId?: string } =
      {},
  ): Promise<Document> {
    const extra: Record<string, unknown> = o.id ? { id: o.id } : {};
    if (o.botId) extra.relationships = { bot: { data: { type: "bots", id: o.botId } } };
    return this.#call("POST", T, body("threads", { title: o.title, metadata: o.metadata }, extra));
  }

  /** GET /threads/:id. */
  getThread(id: string, o: { includeParticipants?: boolean } = {}): Promise<Document> {
    return this.#call(
      "GET",
      `${T}/${enc(id)}` + query({ include: o.includeParticipants ? "participants" : undefined }),
    );
  }

  /** PATCH /threads/:id (title, metadata; status "open" reopens a resolved thread). */
  updateThread(
    id: string,
    attrs: { title?: string | null; metadata?: Record<string, unknown>; status?: "open" },
  ): Promise<Document> {
    return this.#call("PATCH", `${T}/${enc(id)}`, body("threads", attrs));
  }

  /** DELETE /threads/:id (hard delete). */
  async deleteThread(id: string): Promise<void> {
    await this.#call("DELETE", `${T}/${enc(id)}`);
  }

  /** PATCH /threads/:id/assign-bot. */
  assignBot(id: string, botId: string): Promise<Document> {
    return this.#call(
      "PATCH",
      `${T}/${enc(id)}/assign-bot`,
      body("threads", undefined, {
        relationships: { bot: { data: { type: "bots", id: botId } } },
      }),
    );
  }

  /** PATCH /threads/:id/handoff. */
  handoff(id: string): Promise<Document> {
    return this.#call("PATCH", `${T}/${enc(id)}/handoff`);
  }

  /** PATCH /threads/:id/resolve. */
  resolve(id: string): Promise<Document> {
    return this.#call("PATCH", `${T}/${enc(id)}/resolve`);
  }

  /** PATCH /threads/:id/archive. */
  archive(id: string): Promise<Document> {
    return this.#call("PATCH", `${T}/${enc(id)}/archive`);
  }

  // ---- messages ----

  /** GET /threads/:tid/messages. */
  listMessages(tid: string, o: PageOptions = {}): Promise<ListDocument> {
    return this.#call("GET", `${T}/${enc(tid)}/messages` + query(pageParams(o)));
  }

  /** POST /threads/:tid/messages with a caller-chosen id (409 when it exists). */
  createMessage(tid: string, id: string, attrs: MessageInput): Promise<Document> {
    return this.#call("POST", `${T}/${enc(tid)}/messages`, body("messages", { ...attrs }, { id }));
  }

  /** GET /threads/:tid/messages/:id. */
  getMessage(tid: string, id: string): Promise<Document> {
    return this.#call("GET", `${T}/${enc(tid)}/messages/${enc(id)}`);
  }

  /** DELETE /threads/:tid/messages/:id (hard delete). */
  async deleteMessage(tid: string, id: string): Promise<void> {
    await this.#call("DELETE", `${T}/${enc(tid)}/messages/${enc(id)}`);
  }

  /** PATCH /threads/:tid/messages/:id/edit. */
  editMessage(tid: string, id: string, content: unknown): Promise<Document> {
    return this.#call(
      "PATCH",
      `${T}/${enc(tid)}/messages/${enc(id)}/edit`,
      body("messages", { content }),
    );
  }

  /** PATCH /threads/:tid/messages/:id/delete (soft delete). */
  softDeleteMessage(tid: string, id: string): Promise<Document> {
    return this.#call("PATCH", `${T}/${enc(tid)}/messages/${enc(id)}/delete`);
  }

  /** GET /threads/:tid/messages/:id/replies. */
  listReplies(tid: string, id: string, o: PageOptions = {}): Promise<ListDocument> {
    return this.#call("GET", `${T}/${enc(tid)}/messages/${enc(id)}/replies` + query(pageParams(o)));
  }

  // ---- participants ----

  /** GET /threads/:tid/participants. */
  listParticipants(tid: string, o: PageOptions = {}): Promise<ListDocument> {
    return this.#call("GET", `${T}/${enc(tid)}/participants` + query(pageParams(o)));
  }

  /** POST /threads/:tid/participants. */
  addParticipant(
    tid: string,
    o: {
      id?: string;
      client_id?: string;
      display_name?: string;
      role?: string;
      metadata?: Record<string, unknown>;
    } = {},
  ): Promise<Document> {
    const { id, ...attrs } = o;
    return this.#call(
      "POST",
      `${T}/${enc(tid)}/participants`,
      body("participants", attrs, id ? { id } : {}),
    );
  }

  /** PATCH /threads/:tid/participants/:id/mark-read. */
  markRead(tid: string, id: string, lastReadMessageId: string): Promise<Document> {
    return this.#call(
      "PATCH",
      `${T}/${enc(tid)}/participants/${enc(id)}/mark-read`,
      body("participants", {
        last_read_message_id: lastReadMessageId,
      }),
    );
  }

  /** PATCH /threads/:tid/participants/:id/role. */
  setParticipantRole(tid: string, id: string, role: string): Promise<Document> {
    return this.#call(
      "PATCH",
      `${T}/${enc(tid)}/participants/${enc(id)}/role`,
      body("participants", { role }),
    );
  }

  /** DELETE /threads/:tid/participants/:id. */
  async removeParticipant(tid: string, id: string): Promise<void> {
    await this.#call("DELETE", `${T}/${enc(tid)}/participants/${enc(id)}`);
  }

  // ---- reactions ----

  /** GET /threads/:tid/messages/:mid/reactions. */
  listReactions(tid: string, mid: string, o: PageOptions = {}): Promise<ListDocument> {
    return this.#call(
      "GET",
      `${T}/${enc(tid)}/messages/${enc(mid)}/reactions` + query(pageParams(o)),
    );
  }

  /** POST /threads/:tid/messages/:mid/reactions (409 for a repeated participant+emoji). */
  addReaction(tid: string, mid: string, participantId: string, emoji: string): Promise<Document> {
    return this.#call(
      "POST",
      `${T}/${enc(tid)}/messages/${enc(mid)}/reactions`,
      body("reactions", { emoji }, {
        relationships: { participant: { data: { type: "participants", id: participantId } } },
      }),
    );
  }

  /** DELETE /threads/:tid/messages/:mid/reactions/:id. */
  async removeReaction(tid: string, mid: string, id: string): Promise<void> {
    await this.#call("DELETE", `${T}/${enc(tid)}/messages/${enc(mid)}/reactions/${enc(id)}`);
  }

  // ---- bots ----

  /** GET /bots. */
  listBots(o: PageOptions = {}): Promise<ListDocument> {
    return this.#call("GET", "/api/chat/bots" + query(pageParams(o)));
  }

  /** POST /bots; `meta.webhook_secret` is in this answer only (and in rotateBotSecret's). */
  createBot(
    attrs: BotInput,
    id?: string,
  ): Promise<Document & { meta: { webhook_secret: string } }> {
    return this.#call("POST", "/api/chat/bots", body("bots", { ...attrs }, id ? { id } : {}));
  }

  /** GET /bots/:id. */
  getBot(id: string): Promise<Document> {
    return this.#call("GET", `/api/chat/bots/${enc(id)}`);
  }

  /** PATCH /bots/:id. */
  updateBot(id: string, attrs: Partial<BotInput>): Promise<Document> {
    return this.#call("PATCH", `/api/chat/bots/${enc(id)}`, body("bots", { ...attrs }));
  }

  /** DELETE /bots/:id. */
  async deleteBot(id: string): Promise<void> {
    await this.#call("DELETE", `/api/chat/bots/${enc(id)}`);
  }

  /** PATCH /bots/:id/rotate-secret; the new secret is in `meta.webhook_secret`, once. */
  rotateBotSecret(id: string): Promise<Document & { meta: { webhook_secret: string } }> {
    return this.#call("PATCH", `/api/chat/bots/${enc(id)}/rotate-secret`);
  }

  /** GET /api/chat/open_api (the OpenAPI 3.1 document). */
  openApi(): Promise<Record<string, unknown>> {
    return this.#call("GET", "/api/chat/open_api");
  }
}
