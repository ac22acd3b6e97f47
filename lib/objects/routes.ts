/** Durable Object HTTP API under `/api/v1/objects/{app_id}/{type}/{key}` (docs/objects.md). */
import { type Context, Hono } from "hono";
import type { AppRegistry } from "../config/apps.ts";
import { appCredentials, type AppEnv } from "../auth/credentials.ts";
import { MAX_BODY_BYTES, MAX_NAME_BYTES, objectTypeProblem } from "./limits.ts";
import {
  byteLength,
  checkSlotName,
  ObjectError,
  type Op,
  parseAppend,
  parseIncrement,
  parsePatch,
  parseSet,
  parseTransaction,
} from "./ops.ts";
import type { ObjectRef, ObjectStore } from "./store.ts";

const BASE = "/api/v1/objects";
const OBJECT = `${BASE}/:app_id/:type/:key`;
const SLOT = `${OBJECT}/:slot`;

type C = Context<AppEnv>;

/** The object the path names; throws 422 for an over-long type or key. */
function refOf(c: C): ObjectRef {
  const app = c.get("app");
  const type = c.req.param("type")!;
  const key = c.req.param("key")!;
  for (const [what, v] of [["type", type], ["key", key]]) {
    if (byteLength(v) > MAX_NAME_BYTES) {
      throw new ObjectError(422, `object ${what} is longer than ${MAX_NAME_BYTES} bytes`);
    }
  }
  const problem = objectTypeProblem(type);
  if (problem) throw new ObjectError(422, problem);
  return { appId: app.id, appKey: app.key, type, key };
}

function slotOf(c: C): string {
  return c.req.param("slot") ?? "";
}

/** Reads the JSON body: 413 when too large, 400 when not JSON. */
async function body(c: C): Promise<unknown> {
  const declared = Number(c.req.header("content-length") ?? 0);
  if (declared > MAX_BODY_BYTES) throw new ObjectError(413, "request body too large");
  const text = await c.req.text();
  if (byteLength(text) > MAX_BODY_BYTES) throw new ObjectError(413, "request body too large");
  try {
    return JSON.parse(text);
  } catch {
    throw new ObjectError(400, "request body is not valid JSON");
  }
}

function afterParam(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === "") return undefined;
  if (!/^\d+$/.test(value)) throw new ObjectError(400, `${name} must be a non-negative integer`);
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

  const write = (c: C, ops: Op[], batch: boolean) => store.write(refOf(c), ops, batch);

  r.get(OBJECT, (c) => c.json(store.snapshot(refOf(c))));
  r.get(`${OBJECT}/log`, (c) => {
    const after = afterParam(c.req.query("after"), "after") ?? 0;
    const limit = afterParam(c.req.query("limit"), "limit");
    return c.json({ items: store.items(refOf(c), after, limit || undefined) });
  });
  r.get(SLOT, (c) => c.json({ value: store.slot(refOf(c), checkSlotName(slotOf(c))) }));
  r.put(SLOT, async (c) => {
    const { log_id } = await write(c, parseSet(slotOf(c), await body(c)), false);
    return c.json({ log_id });
  });
  r.patch(OBJECT, async (c) => {
    const { log_id } = await write(c, parsePatch(await body(c)), true);
    return c.json({ log_id });
  });
  r.post(`${OBJECT}/increment`, async (c) => {
    const { log_id, ops } = await write(c, parseIncrement(await body(c)), false);
    return c.json({ log_id, value: ops[0].value });
  });
  r.post(`${OBJECT}/append`, async (c) => {
    const { log_id } = await write(c, parseAppend(await body(c)), false);
    return c.json({ log_id });
  });
  r.post(`${OBJECT}/transaction`, async (c) => {
    const { log_id } = await write(c, parseTransaction(await body(c)), true);
    return c.json({ log_id });
  });
  r.delete(SLOT, async (c) => {
    const { log_id } = await write(c, [{ op: "delete", key: checkSlotName(slotOf(c)) }], false);
    return c.json({ log_id });
  });
  r.delete(OBJECT, async (c) => {
    await store.purge(refOf(c));
    return c.body(null, 204);
  });

  const notFound = () => {
    throw new ObjectError(404, "not found");
  };
  r.all(BASE, notFound);
  r.all(`${BASE}/*`, notFound);
  // Mounted as a plain Hono (ProductModule.routes); the app variable stays internal.
  return new Hono().route("/", r);
}
