/** Bot routes. The webhook secret appears only in `meta` of create and rotate-secret. */
import type { BotEventType } from "../types.ts";
import { send } from "./http.ts";
import { ApiError } from "../../http/errors.ts";
import { body, register, responses, type RouteDeps, valid } from "./route.ts";
import {
  BotCreateBody,
  BotPatchBody,
  BotResource,
  IdParam,
  list,
  PageQuery,
  single,
} from "./schemas.ts";
import { botResource, listDocument, pageQuery } from "./serialize.ts";
import { created } from "./threads.ts";

const BotDoc = single("BotDocument", BotResource);
const tags = ["Bots"];

/** Registers every bot route. */
export function botRoutes({ router, services }: RouteDeps): void {
  const { store } = services;

  register(router, {
    method: "get",
    path: "/api/chat/bots",
    summary: "List bots",
    tags,
    request: { query: PageQuery },
    responses: responses(200, "A page of bots", list("BotList", BotResource), [400]),
  }, (c) => {
    const page = pageQuery(valid(c, "query"));
    const result = store.bots.list(c.get("app"), page);
    return send(c, 200, listDocument(c.req.url, result, page.size, botResource));
  });

  register(router, {
    method: "post",
    path: "/api/chat/bots",
    summary: "Create a bot; meta.webhook_secret is returned only here and by rotate-secret",
    tags,
    request: { body: body(BotCreateBody) },
    responses: responses(201, "The bot, with meta.webhook_secret", BotDoc, [409, 415, 422]),
  }, async (c) => {
    const { data } = valid(c, "json");
    const a = data.attributes;
    const bot = await store.bots.create(c.get("app"), {
      id: data.id,
      name: a.name,
      webhookUrl: a.webhook_url,
      events: a.events as BotEventType[] | undefined,
      metadata: a.metadata,
    });
    return created(
      c,
      { data: botResource(bot), meta: { webhook_secret: bot.webhookSecret } },
      botResource(bot).links.self,
    );
  });

  register(
    router,
    {
      method: "get",
      path: "/api/chat/bots/{id}",
      summary: "Get a bot (never includes the secret)",
      tags,
      request: { params: IdParam },
      responses: responses(200, "The bot", BotDoc, [404]),
    },
    (c) =>
      send(c, 200, { data: botResource(store.bots.require(c.get("app"), valid(c, "param").id)) }),
  );

  register(router, {
    method: "patch",
    path: "/api/chat/bots/{id}",
    summary: "Update a bot's name, webhook_url, events or metadata",
    tags,
    request: { params: IdParam, body: body(BotPatchBody) },
    responses: responses(200, "The bot", BotDoc, [404, 409, 415, 422]),
  }, async (c) => {
    const id = valid(c, "param").id;
    const { data } = valid(c, "json");
    if (data.id !== undefined && data.id !== id) {
      throw new ApiError(409, "data.id does not match the URL.", {
        source: { pointer: "/data/id" },
      });
    }
    const a = data.attributes ?? {};
    const patch: Record<string, unknown> = {};
    if (a.name !== undefined) patch.name = a.name;
    if (a.webhook_url !== undefined) patch.webhookUrl = a.webhook_url;
    if (a.events !== undefined) patch.events = a.events;
    if (a.metadata !== undefined) patch.metadata = a.metadata;
    const bot = await store.bots.update(c.get("app"), id, patch);
    return send(c, 200, { data: botResource(bot) });
  });

  register(router, {
    method: "delete",
    path: "/api/chat/bots/{id}",
    summary: "Delete a bot (threads keep bot_id; deliveries stop)",
    tags,
    request: { params: IdParam },
    responses: responses(204, "Deleted", undefined, [404]),
  }, async (c) => {
    await store.bots.delete(c.get("app"), valid(c, "param").id);
    return send(c, 204, null);
  });

  register(router, {
    method: "patch",
    path: "/api/chat/bots/{id}/rotate-secret",
    summary: "Replace the webhook secret; the new one is in meta.webhook_secret, once",
    tags,
    request: { params: IdParam },
    responses: responses(200, "The bot, with meta.webhook_secret", BotDoc, [404]),
  }, async (c) => {
    const bot = await store.bots.rotateSecret(c.get("app"), valid(c, "param").id);
    return send(c, 200, { data: botResource(bot), meta: { webhook_secret: bot.webhookSecret } });
  });
}
