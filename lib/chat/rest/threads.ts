/** Thread routes: list, create, get, patch, delete and the status actions. */
import type { Context } from "hono";
import type { App } from "../../config/apps.ts";
import type { ThreadAction } from "../store_threads.ts";
import type { Thread, ThreadStatus } from "../types.ts";
import { type ChatEnv, send } from "./http.ts";
import { ApiError } from "../../http/errors.ts";
import { body, register, responses, type RouteDeps, valid } from "./route.ts";
import {
  AssignBotBody,
  IdParam,
  list,
  single,
  ThreadCreateBody,
  ThreadGetQuery,
  ThreadListQuery,
  ThreadPatchBody,
  ThreadResource,
} from "./schemas.ts";
import { listDocument, pageQuery, participantResource, threadResource } from "./serialize.ts";

const tags = ["Threads"];
const ThreadDoc = single("ThreadDocument", ThreadResource);

/** Registers every thread route. */
export function threadRoutes({ router, services }: RouteDeps): void {
  const { store, threadLog } = services;

  /** The thread document, with participants in `included` when asked. */
  const threadDoc = (app: App, t: Thread, include?: string) => {
    const participants = include === "participants" ? store.participants.all(app, t.id) : undefined;
    const doc: Record<string, unknown> = {
      data: threadResource(t, threadLog.head(app, t.id), participants),
    };
    if (participants) doc.included = participants.map(participantResource);
    return doc;
  };

  register(router, {
    method: "get",
    path: "/api/chat/threads",
    summary: "List threads (creation order; filters by status, participant, bot)",
    tags,
    request: { query: ThreadListQuery },
    responses: responses(200, "A page of threads", list("ThreadList", ThreadResource), [400]),
  }, (c) => {
    const app = c.get("app");
    const q = valid(c, "query");
    const page = pageQuery(q);
    const status = q["filter[status]"]?.split(",") as ThreadStatus[] | undefined;
    const result = store.threads.list(app, page, {
      status,
      participant: q["filter[participant]"],
      bot: q["filter[bot]"],
    });
    const include = q.include === "participants";
    const included = include
      ? result.items.flatMap((t) => store.participants.all(app, t.id)).map(participantResource)
      : undefined;
    return send(
      c,
      200,
      listDocument(
        c.req.url,
        result,
        page.size,
        (t) =>
          threadResource(
            t,
            threadLog.head(app, t.id),
            include ? store.participants.all(app, t.id) : undefined,
          ),
        included ? { included } : {},
      ),
    );
  });

  register(router, {
    method: "post",
    path: "/api/chat/threads",
    summary: "Create a thread (optional caller-chosen id; optional bot relationship)",
    tags,
    request: { body: body(ThreadCreateBody) },
    responses: responses(201, "The created thread", ThreadDoc, [409, 415, 422]),
  }, async (c) => {
    const { data } = valid(c, "json");
    const t = await store.threads.create(c.get("app"), {
      id: data.id,
      title: data.attributes?.title,
      metadata: data.attributes?.metadata,
      botId: data.relationships?.bot?.data?.id ?? null,
    });
    return created(c, threadDoc(c.get("app"), t), `/api/chat/threads/${encodeURIComponent(t.id)}`);
  });

  register(router, {
    method: "get",
    path: "/api/chat/threads/{id}",
    summary: "Get a thread",
    tags,
    request: { params: IdParam, query: ThreadGetQuery },
    responses: responses(200, "The thread", ThreadDoc, [400, 404]),
  }, (c) => {
    const app = c.get("app");
    const t = store.threads.require(app, valid(c, "param").id);
    return send(c, 200, threadDoc(app, t, valid(c, "query").include));
  });

  register(router, {
    method: "patch",
    path: "/api/chat/threads/{id}",
    summary: "Update title/metadata; status `open` reopens a resolved thread",
    tags,
    request: { params: IdParam, body: body(ThreadPatchBody) },
    responses: responses(200, "The updated thread", ThreadDoc, [404, 409, 415, 422]),
  }, async (c) => {
    const app = c.get("app");
    const id = valid(c, "param").id;
    const { data } = valid(c, "json");
    if (data.id !== undefined && data.id !== id) {
      throw new ApiError(409, "data.id does not match the URL.", {
        source: { pointer: "/data/id" },
      });
    }
    const attrs = data.attributes ?? {};
    const t = await store.threads.update(app, id, {
      title: attrs.title,
      metadata: attrs.metadata,
      status: attrs.status,
    });
    return send(c, 200, threadDoc(app, t));
  });

  register(router, {
    method: "delete",
    path: "/api/chat/threads/{id}",
    summary: "Hard-delete a thread with its messages, participants, reactions and log",
    tags,
    request: { params: IdParam },
    responses: responses(204, "Deleted", undefined, [404]),
  }, async (c) => {
    await store.threads.delete(c.get("app"), valid(c, "param").id);
    return send(c, 204, null);
  });

  register(router, {
    method: "patch",
    path: "/api/chat/threads/{id}/assign-bot",
    summary: "Assign a bot: open|bot|human -> bot",
    tags,
    request: { params: IdParam, body: body(AssignBotBody) },
    responses: responses(200, "The updated thread", ThreadDoc, [404, 409, 415, 422]),
  }, async (c) => {
    const app = c.get("app");
    const { data } = valid(c, "json");
    const botId = data.relationships?.bot?.data?.id ?? data.attributes?.bot_id;
    if (!botId) {
      throw new ApiError(422, "A bot is required (data.relationships.bot or attributes.bot_id).", {
        source: { pointer: "/data/relationships/bot" },
      });
    }
    const t = await store.threads.transition(app, valid(c, "param").id, "assign-bot", botId);
    return send(c, 200, threadDoc(app, t));
  });

  const actions: [string, ThreadAction, string][] = [
    ["handoff", "handoff", "Hand off to a human: open|bot -> human"],
    ["resolve", "resolve", "Resolve: open|bot|human -> resolved"],
    ["archive", "archive", "Archive: any status but archived -> archived (terminal)"],
  ];
  for (const [path, action, summary] of actions) {
    register(router, {
      method: "patch",
      path: `/api/chat/threads/{id}/${path}`,
      summary,
      tags,
      request: { params: IdParam },
      responses: responses(200, "The updated thread", ThreadDoc, [404, 409]),
    }, async (c) => {
      const app = c.get("app");
      const t = await store.threads.transition(app, valid(c, "param").id, action);
      return send(c, 200, threadDoc(app, t));
    });
  }
}

/** 201 with a Location header. */
export function created(c: Context<ChatEnv>, doc: unknown, location: string): Response {
  const res = send(c, 201, doc);
  res.headers.set("Location", location);
  return res;
}
