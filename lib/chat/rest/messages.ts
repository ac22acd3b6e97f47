/** Message and reaction routes. */
import { send } from "./http.ts";
import { ApiError } from "../../http/errors.ts";
import { body, register, responses, type RouteDeps, valid } from "./route.ts";
import {
  list,
  MessageCreateBody,
  MessageEditBody,
  MessageResource,
  PageQuery,
  ReactionCreateBody,
  ReactionResource,
  single,
  TidIdParam,
  TidMidIdParam,
  TidMidParam,
  TidParam,
} from "./schemas.ts";
import { listDocument, messageResource, pageQuery, reactionResource } from "./serialize.ts";
import { created } from "./threads.ts";

const MessageDoc = single("MessageDocument", MessageResource);
const ReactionDoc = single("ReactionDocument", ReactionResource);
const tags = ["Messages"];
const enc = encodeURIComponent;

/** Registers every message and reaction route. */
export function messageRoutes({ router, services }: RouteDeps): void {
  const { store } = services;

  register(router, {
    method: "get",
    path: "/api/chat/threads/{tid}/messages",
    summary: "List a thread's messages (creation order)",
    tags,
    request: { params: TidParam, query: PageQuery },
    responses: responses(200, "A page of messages", list("MessageList", MessageResource), [
      400,
      404,
    ]),
  }, (c) => {
    const page = pageQuery(valid(c, "query"));
    const result = store.listMessages(c.get("app"), valid(c, "param").tid, page);
    return send(c, 200, listDocument(c.req.url, result, page.size, messageResource));
  });

  register(router, {
    method: "post",
    path: "/api/chat/threads/{tid}/messages",
    summary: "Create a message with a caller-chosen id (409 when the id exists)",
    tags,
    request: { params: TidParam, body: body(MessageCreateBody) },
    responses: responses(201, "The created message", MessageDoc, [404, 409, 415, 422]),
  }, async (c) => {
    const tid = valid(c, "param").tid;
    const { data } = valid(c, "json");
    const a = data.attributes;
    const r = data.relationships ?? {};
    const { message } = await store.createMessage(c.get("app"), tid, {
      id: data.id,
      role: a.role,
      content: a.content ?? null,
      status: a.status,
      runId: a.run_id,
      ownerClientId: a.owner_client_id,
      forkOf: a.fork_of,
      msgRegenerate: a.msg_regenerate,
      parentId: r.parent?.data?.id ?? a.parent_id,
      authorParticipantId: r.author?.data?.id ?? a.author_participant_id,
      botId: r.bot?.data?.id ?? a.bot_id,
    });
    return created(
      c,
      { data: messageResource(message) },
      `/api/chat/threads/${enc(tid)}/messages/${enc(message.id)}`,
    );
  });

  register(router, {
    method: "get",
    path: "/api/chat/threads/{tid}/messages/{id}",
    summary: "Get a message",
    tags,
    request: { params: TidIdParam },
    responses: responses(200, "The message", MessageDoc, [404]),
  }, (c) => {
    const { tid, id } = valid(c, "param");
    return send(c, 200, { data: messageResource(store.messages.require(c.get("app"), tid, id)) });
  });

  register(router, {
    method: "delete",
    path: "/api/chat/threads/{tid}/messages/{id}",
    summary: "Hard-delete a message (and its reactions)",
    tags,
    request: { params: TidIdParam },
    responses: responses(204, "Deleted", undefined, [404]),
  }, async (c) => {
    const { tid, id } = valid(c, "param");
    await store.hardDeleteMessage(c.get("app"), tid, id);
    return send(c, 204, null);
  });

  register(router, {
    method: "patch",
    path: "/api/chat/threads/{tid}/messages/{id}/edit",
    summary: "Edit a message's content (sets edited_at)",
    tags,
    request: { params: TidIdParam, body: body(MessageEditBody) },
    responses: responses(200, "The edited message", MessageDoc, [404, 409, 415, 422]),
  }, async (c) => {
    const { tid, id } = valid(c, "param");
    const { data } = valid(c, "json");
    if (data.id !== undefined && data.id !== id) {
      throw new ApiError(409, "data.id does not match the URL.", {
        source: { pointer: "/data/id" },
      });
    }
    const { message } = await store.editMessage(c.get("app"), tid, id, data.attributes.content);
    return send(c, 200, { data: messageResource(message) });
  });

  register(router, {
    method: "patch",
    path: "/api/chat/threads/{tid}/messages/{id}/delete",
    summary: "Soft-delete a message (content removed, deleted_at set)",
    tags,
    request: { params: TidIdParam },
    responses: responses(200, "The tombstone", MessageDoc, [404, 409]),
  }, async (c) => {
    const { tid, id } = valid(c, "param");
    const { message } = await store.softDeleteMessage(c.get("app"), tid, id);
    return send(c, 200, { data: messageResource(message) });
  });

  register(router, {
    method: "get",
    path: "/api/chat/threads/{tid}/messages/{id}/replies",
    summary: "List the messages whose parent is this message",
    tags,
    request: { params: TidIdParam, query: PageQuery },
    responses: responses(200, "A page of replies", list("ReplyList", MessageResource), [400, 404]),
  }, (c) => {
    const app = c.get("app");
    const { tid, id } = valid(c, "param");
    store.messages.require(app, tid, id);
    const page = pageQuery(valid(c, "query"));
    const result = store.listMessages(app, tid, { ...page, parentId: id });
    return send(c, 200, listDocument(c.req.url, result, page.size, messageResource));
  });

  register(router, {
    method: "get",
    path: "/api/chat/threads/{tid}/messages/{mid}/reactions",
    summary: "List a message's reactions",
    tags: ["Reactions"],
    request: { params: TidMidParam, query: PageQuery },
    responses: responses(200, "A page of reactions", list("ReactionList", ReactionResource), [
      400,
      404,
    ]),
  }, (c) => {
    const { tid, mid } = valid(c, "param");
    const page = pageQuery(valid(c, "query"));
    const result = store.reactions.list(c.get("app"), tid, mid, page);
    return send(c, 200, listDocument(c.req.url, result, page.size, reactionResource));
  });

  register(router, {
    method: "post",
    path: "/api/chat/threads/{tid}/messages/{mid}/reactions",
    summary: "React (unique per message + participant + emoji; 409 otherwise)",
    tags: ["Reactions"],
    request: { params: TidMidParam, body: body(ReactionCreateBody) },
    responses: responses(201, "The reaction", ReactionDoc, [404, 409, 415, 422]),
  }, async (c) => {
    const { tid, mid } = valid(c, "param");
    const { data } = valid(c, "json");
    const participantId = data.relationships?.participant?.data?.id ??
      data.attributes.participant_id;
    if (!participantId) {
      throw new ApiError(422, "A participant is required.", {
        source: { pointer: "/data/relationships/participant" },
      });
    }
    const reaction = await store.reactions.add(c.get("app"), tid, mid, {
      participantId,
      emoji: data.attributes.emoji,
    });
    return created(c, { data: reactionResource(reaction) }, reactionResource(reaction).links.self);
  });

  register(router, {
    method: "delete",
    path: "/api/chat/threads/{tid}/messages/{mid}/reactions/{id}",
    summary: "Remove a reaction",
    tags: ["Reactions"],
    request: { params: TidMidIdParam },
    responses: responses(204, "Deleted", undefined, [404]),
  }, async (c) => {
    const { tid, mid, id } = valid(c, "param");
    await store.reactions.remove(c.get("app"), tid, mid, id);
    return send(c, 204, null);
  });
}
