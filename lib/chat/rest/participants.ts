/** Participant routes. */
import type { ParticipantRole } from "../types.ts";
import { send } from "./http.ts";
import { ApiError } from "../../http/errors.ts";
import { body, register, responses, type RouteDeps, valid } from "./route.ts";
import {
  list,
  MarkReadBody,
  PageQuery,
  ParticipantCreateBody,
  ParticipantResource,
  RoleBody,
  single,
  TidIdParam,
  TidParam,
} from "./schemas.ts";
import { listDocument, pageQuery, participantResource } from "./serialize.ts";
import { created } from "./threads.ts";

const ParticipantDoc = single("ParticipantDocument", ParticipantResource);
const tags = ["Participants"];

/** Registers every participant route. */
export function participantRoutes({ router, services }: RouteDeps): void {
  const { store } = services;

  register(router, {
    method: "get",
    path: "/api/chat/threads/{tid}/participants",
    summary: "List a thread's participants (joining order)",
    tags,
    request: { params: TidParam, query: PageQuery },
    responses: responses(
      200,
      "A page of participants",
      list("ParticipantList", ParticipantResource),
      [400, 404],
    ),
  }, (c) => {
    const page = pageQuery(valid(c, "query"));
    const result = store.participants.list(c.get("app"), valid(c, "param").tid, page);
    return send(c, 200, listDocument(c.req.url, result, page.size, participantResource));
  });

  register(router, {
    method: "post",
    path: "/api/chat/threads/{tid}/participants",
    summary: "Add a participant (409 when the id or client_id is already in the thread)",
    tags,
    request: { params: TidParam, body: body(ParticipantCreateBody) },
    responses: responses(201, "The participant", ParticipantDoc, [404, 409, 415, 422]),
  }, async (c) => {
    const app = c.get("app");
    const { data } = valid(c, "json");
    const a = data.attributes ?? {};
    const botId = data.relationships?.bot?.data?.id ?? null;
    if (botId && !store.bots.get(app, botId)) {
      throw new ApiError(422, `Bot ${botId} does not exist.`, {
        source: { pointer: "/data/relationships/bot" },
      });
    }
    const p = await store.participants.add(app, valid(c, "param").tid, {
      id: data.id,
      clientId: a.client_id,
      displayName: a.display_name,
      role: a.role as ParticipantRole | undefined,
      metadata: a.metadata,
      botId,
    });
    return created(c, { data: participantResource(p) }, participantResource(p).links.self);
  });

  register(router, {
    method: "patch",
    path: "/api/chat/threads/{tid}/participants/{id}/mark-read",
    summary: "Set the participant's read marker (last_read_message_id)",
    tags,
    request: { params: TidIdParam, body: body(MarkReadBody) },
    responses: responses(200, "The participant", ParticipantDoc, [404, 415, 422]),
  }, async (c) => {
    const { tid, id } = valid(c, "param");
    const { data } = valid(c, "json");
    const p = await store.participants.markRead(
      c.get("app"),
      tid,
      id,
      data.attributes.last_read_message_id,
      store.messages,
    );
    return send(c, 200, { data: participantResource(p) });
  });

  register(router, {
    method: "patch",
    path: "/api/chat/threads/{tid}/participants/{id}/role",
    summary: "Change the participant's role",
    tags,
    request: { params: TidIdParam, body: body(RoleBody) },
    responses: responses(200, "The participant", ParticipantDoc, [404, 415, 422]),
  }, async (c) => {
    const { tid, id } = valid(c, "param");
    const { data } = valid(c, "json");
    const p = await store.participants.setRole(c.get("app"), tid, id, data.attributes.role);
    return send(c, 200, { data: participantResource(p) });
  });

  register(router, {
    method: "delete",
    path: "/api/chat/threads/{tid}/participants/{id}",
    summary: "Remove a participant",
    tags,
    request: { params: TidIdParam },
    responses: responses(204, "Removed", undefined, [404]),
  }, async (c) => {
    const { tid, id } = valid(c, "param");
    await store.participants.remove(c.get("app"), tid, id);
    return send(c, 204, null);
  });
}
