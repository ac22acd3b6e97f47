/**
 * The chat REST surface under `/api/chat` (JSON:API). `GET /api/chat/open_api` serves the
 * OpenAPI 3.1 description without credentials (it holds no tenant data); every other route
 * needs X-App-Key / X-App-Secret.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Hono } from "hono";
import type { AppRegistry } from "../../config/apps.ts";
import { VERSION } from "../../version.ts";
import type { ChatServices } from "../services.ts";
import { botRoutes } from "./bots.ts";
import { appCredentials } from "../../http/credentials.ts";
import { ApiError } from "../../http/errors.ts";
import { CHAT } from "../../http/surfaces.ts";
import { type ChatEnv, contentTypeGate, validationHook } from "./http.ts";
import { messageRoutes } from "./messages.ts";
import { participantRoutes } from "./participants.ts";
import { threadRoutes } from "./threads.ts";

/** Builds the chat REST routes (mount at "/"). */
export function chatRestRoutes(apps: AppRegistry, services: ChatServices): Hono {
  const router = new OpenAPIHono<ChatEnv>({ defaultHook: validationHook as never });
  router.get("/api/chat/open_api", (c) =>
    c.json(router.getOpenAPI31Document({
      openapi: "3.1.0",
      info: {
        title: "Switchboard Chat REST API",
        version: VERSION,
        description: "JSON:API surface for threads, messages, participants, reactions and bots.",
      },
      security: [{ AppKey: [], AppSecret: [] }],
    })));
  router.use("/api/chat/*", appCredentials(apps, CHAT));
  router.use("/api/chat/*", contentTypeGate);
  const deps = { router, services };
  threadRoutes(deps);
  messageRoutes(deps);
  participantRoutes(deps);
  botRoutes(deps);
  router.all("/api/chat/*", (c) => {
    throw new ApiError(404, `No route ${c.req.method} ${c.req.path}.`);
  });
  router.openAPIRegistry.registerPath({
    method: "get",
    path: "/api/chat/open_api",
    summary: "This OpenAPI 3.1 document (no credentials needed)",
    tags: ["Spec"],
    security: [],
    responses: { 200: { description: "The OpenAPI document" } },
  });
  router.openAPIRegistry.registerComponent("securitySchemes", "AppKey", {
    type: "apiKey",
    in: "header",
    name: "X-App-Key",
  });
  router.openAPIRegistry.registerComponent("securitySchemes", "AppSecret", {
    type: "apiKey",
    in: "header",
    name: "X-App-Secret",
  });
  return router as unknown as Hono;
}
