/** Durable Object HTTP API under `/api/v1/objects/{app_id}/{type}/{key}` (docs/objects.md). */
import { type Context, Hono } from "hono";
import type { App, AppRegistry } from "../config/apps.ts";
import { appCredentials, type AppEnv, appFromCredentials } from "../http/credentials.ts";
import type { DirectRoute } from "../product.ts";
import { PROTO_PROBLEM, protoProblem } from "../wire/codec.ts";
import { MAX_BODY_BYTES, MAX_NAME_BYTES, objectTypeProblem } from "./limits.ts";
import { ApiError } from "../http/errors.ts";
import {
  byteLength,
  checkSlotName,
  type Op,
  parseAppend,
  parseIncrement,
  parsePatch,
  parseSet,
  parseTransaction,
} from "./ops.ts";
import type { ObjectRef, ObjectStore, WriteDone } from "./store.ts";

const BASE = "/api/v1/objects";
const OBJECT = `${BASE}/:app_id/:type/:key`;
const SLOT = `${OBJECT}/:slot`;

type C = Context<AppEnv>;

/** The object the path names; throws 422 for an over-long type or key. */
function refOf(c: C): ObjectRef {
  return refFrom(c.get("app"), c.req.param("type")!, c.req.param("key")!);
}

/** The object `type`/`key` of `app` names; throws 422 for an over-long type or key. */
function refFrom(app: App, type: string, key: string): ObjectRef {
  // A UTF-16 code unit is at most 3 UTF-8 bytes: short names need no byte count (every write).
  if (type.length * 3 > MAX_NAME_BYTES || key.length * 3 > MAX_NAME_BYTES) {
    for (const [what, v] of [["type", type], ["key", key]]) {
      if (byteLength(v) > MAX_NAME_BYTES) {
        throw new ApiError(422, `object ${what} is longer than ${MAX_NAME_BYTES} bytes`);
      }
    }
  }
  const problem = objectTypeProblem(type);
  if (problem) throw new ApiError(422, problem);
  return { appId: app.id, appKey: app.key, type, key };
}

function slotOf(c: C): string {
  return c.req.param("slot") ?? "";
}

/** Reads the JSON body: 413 when too large, 400 when not JSON. */
async function body(c: C): Promise<unknown> {
  const declared = Number(c.req.header("content-length") ?? 0);
  if (declared > MAX_BODY_BYTES) throw new ApiError(413, "request body too large");
  return parseBody(await c.req.text());
}

/** The body text as JSON: 413 when too large, 400 when not JSON. */
function parseBody(text: string): unknown {
  // A UTF-16 code unit is at most 3 UTF-8 bytes: short texts need no byte count.
  if (text.length * 3 > MAX_BODY_BYTES && byteLength(text) > MAX_BODY_BYTES) {
    throw new ApiError(413, "request body too large");
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, "request body is not valid JSON");
  }
}

/** A route that writes: its method and path, how its body becomes operations, whether they
 * are one batch entry, and the reply. */
interface WriteRoute {
  method: "PUT" | "PATCH" | "POST";
  path: string;
  parse(body: unknown, slot: string): Op[];
  batch: boolean;
  reply(done: WriteDone): unknown;
}

const logId = ({ log_id }: { log_id: number }) => ({ log_id });

/** Every write route but the deletes (which have no body). */
const WRITES: WriteRoute[] = [
  { method: "PUT", path: SLOT, parse: (b, slot) => parseSet(slot, b), batch: false, reply: logId },
  { method: "PATCH", path: OBJECT, parse: parsePatch, batch: true, reply: logId },
  {
    method: "POST",
    path: `${OBJECT}/increment`,
    parse: parseIncrement,
    batch: false,
    reply: ({ log_id, ops }) => ({ log_id, value: ops[0].value }),
  },
  { method: "POST", path: `${OBJECT}/append`, parse: parseAppend, batch: false, reply: logId },
  {
    method: "POST",
    path: `${OBJECT}/transaction`,
    parse: parseTransaction,
    batch: true,
    reply: logId,
  },
];

/** Runs one write route: parse (400/413/422 before anything is written), write, reply (then
 * `respond` to it, when given, in the same promise reaction). */
function runWrite<T = unknown>(
  store: ObjectStore,
  route: WriteRoute,
  ref: () => ObjectRef,
  slot: string,
  body: unknown,
  respond?: (reply: unknown) => T,
): Promise<T> {
  const ops = route.parse(body, slot);
  const reply = respond ? (done: WriteDone) => respond(route.reply(done)) : route.reply;
  return store.write(ref(), ops, route.batch, reply as (done: WriteDone) => T);
}

function afterParam(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === "") return undefined;
  if (!/^\d+$/.test(value)) throw new ApiError(400, `${name} must be a non-negative integer`);
  return Number(value);
}

/**
 * The routes. Credentials (401, JSON:API body) run first for anything under
 * `/api/v1/objects/{app_id}/`; unmatched paths under the prefix answer 404 `{ error }`.
 */
export function objectRoutes(apps: AppRegistry, store: ObjectStore): Hono {
  const r = new Hono<AppEnv>();
  r.use(`${BASE}/:app_id/*`, appCredentials(apps));
  r.use(`${BASE}/:app_id`, appCredentials(apps));

  r.get(OBJECT, (c) => c.json(store.snapshot(refOf(c))));
  r.get(`${OBJECT}/log`, (c) => {
    const after = afterParam(c.req.query("after"), "after") ?? 0;
    const limit = afterParam(c.req.query("limit"), "limit");
    return c.json({ items: store.items(refOf(c), after, limit || undefined) });
  });
  r.get(SLOT, (c) => c.json({ value: store.slot(refOf(c), checkSlotName(slotOf(c))) }));
  for (const route of WRITES) {
    r.on(route.method, route.path, async (c) => {
      return c.json(await runWrite(store, route, () => refOf(c), slotOf(c), await body(c)));
    });
  }
  r.delete(SLOT, async (c) => {
    const { log_id } = await store.write(refOf(c), [{
      op: "delete",
      key: checkSlotName(slotOf(c)),
    }], false);
    return c.json({ log_id });
  });
  r.delete(OBJECT, async (c) => {
    await store.purge(refOf(c));
    return c.body(null, 204);
  });

  const notFound = () => {
    throw new ApiError(404, "not found");
  };
  r.all(BASE, notFound);
  r.all(`${BASE}/*`, notFound);
  // Mounted as a plain Hono (ProductModule.routes); the app variable stays internal.
  return new Hono().route("/", r);
}

/** The direct routes' response options: one object, its headers copied into each response. */
const JSON_INIT = { headers: new Headers({ "content-type": "application/json" }) };

/** A 200 JSON reply of a direct route. */
function jsonResponse(reply: unknown): Response {
  return new Response(JSON.stringify(reply), JSON_INIT);
}

/**
 * The write routes served before the router (`ProductModule.direct`), for speed: the same
 * parsing, limits, errors and replies as the routes above. A request out of the ordinary (bad
 * or missing credentials, a percent-encoded or empty path segment, no Content-Length) is left
 * to the routes.
 */
export function objectDirect(apps: AppRegistry, store: ObjectStore): DirectRoute {
  const [set, patch, ...posts] = WRITES;
  const byAction = new Map(posts.map((w) => [w.path.slice(OBJECT.length + 1), w]));
  // Each route's reply as a response, made once (not a closure per request).
  const responses = new Map(
    WRITES.map((w) => [w, (done: WriteDone) => jsonResponse(w.reply(done))]),
  );
  return (req, path) => {
    if (!path.startsWith(`${BASE}/`) || path.includes("%")) return undefined;
    // ["", "api", "v1", "objects", app_id, type, key, slot or action?]
    const parts = path.split("/");
    const route = parts.length === 7
      ? (req.method === "PATCH" ? patch : undefined)
      : parts.length !== 8
      ? undefined
      : req.method === "PUT"
      ? set
      : req.method === "POST"
      ? byAction.get(parts[7])
      : undefined;
    if (!route || parts.indexOf("", 1) > 0) return undefined;
    const h = req.headers;
    const app = appFromCredentials(
      apps,
      h.get("x-app-key") ?? undefined,
      h.get("x-app-secret") ?? undefined,
    );
    const declared = h.get("content-length");
    // A disabled app falls through to the router, whose credentials check answers 403.
    if (!app || app.enabled === false || apps.byIdOrKey(parts[4]) !== app || declared === null) {
      return undefined;
    }
    return {
      route: route.path,
      app: app.key,
      // A promise chain, not an async function: every durable write passes here.
      respond: () => {
        if (Number(declared) > MAX_BODY_BYTES) {
          return Promise.reject(new ApiError(413, "request body too large"));
        }
        return req.text().then((text) => {
          if (protoProblem(text, h.get("content-type"))) throw new ApiError(422, PROTO_PROBLEM);
          const ops = route.parse(parseBody(text), parts[7] ?? "");
          return store.write(
            refFrom(app, parts[5], parts[6]),
            ops,
            route.batch,
            responses.get(route)!,
          );
        });
      },
    };
  };
}
