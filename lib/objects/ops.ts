/**
 * Durable Object operations as pure values: parsing request bodies into operations, and
 * applying operations to an object's state into materialised `set` / `delete` entries.
 * Everything here validates before anything is written (lmdb-js does not roll back).
 */
import { ApiError } from "../http/errors.ts";
import {
  MAX_OBJECT_BYTES,
  MAX_OPS_PER_WRITE,
  MAX_SLOT_NAME_BYTES,
  MAX_VALUE_BYTES,
} from "./limits.ts";

/** A requested operation (HTTP route or transaction element). */
export type Op =
  | { op: "set"; key: string; value: unknown }
  | { op: "delete"; key: string }
  | { op: "increment"; key: string; by: number }
  | { op: "append"; key: string; value: unknown };

/** What a write leaves in the log: increments and appends become `set` of the result. */
export interface MaterialOp {
  op: "set" | "delete";
  key: string;
  /** The stored value after the op; null for a delete. */
  value: unknown;
}

import { byteLength, jsonBytes } from "../limits.ts";

export { byteLength, jsonBytes };

/** Throws 422 unless `key` is a valid slot name (non-empty string within the length limit). */
export function checkSlotName(key: unknown, where = "slot"): string {
  if (typeof key !== "string" || key === "") {
    throw new ApiError(422, `${where} must be a non-empty string`);
  }
  if (key.length * 3 > MAX_SLOT_NAME_BYTES && byteLength(key) > MAX_SLOT_NAME_BYTES) {
    throw new ApiError(422, `${where} is longer than ${MAX_SLOT_NAME_BYTES} bytes`);
  }
  return key;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function checkCount(n: number): void {
  if (n === 0) throw new ApiError(422, "a write must contain at least one operation");
  if (n > MAX_OPS_PER_WRITE) {
    throw new ApiError(413, `too many operations: at most ${MAX_OPS_PER_WRITE} per write`);
  }
}

/** `PUT /{slot}` body: `{ value }` -> a set op. */
export function parseSet(slot: string, body: unknown): Op[] {
  if (!isPlainObject(body) || !("value" in body)) {
    throw new ApiError(422, 'body must be an object with a "value" field');
  }
  return [{ op: "set", key: checkSlotName(slot), value: body.value }];
}

/** `PATCH` body: plain object, each key a slot -> set ops in key order. */
export function parsePatch(body: unknown): Op[] {
  if (!isPlainObject(body)) throw new ApiError(422, "body must be a plain JSON object");
  const keys = Object.keys(body);
  checkCount(keys.length);
  return keys.map((k) => ({ op: "set", key: checkSlotName(k, "slot name"), value: body[k] }));
}

/** `POST /increment` body: `{ slot, by? }`. */
export function parseIncrement(body: unknown): Op[] {
  if (!isPlainObject(body)) throw new ApiError(422, "body must be a JSON object");
  return [{ op: "increment", key: checkSlotName(body.slot), by: parseBy(body.by, "by") }];
}

/** `POST /append` body: `{ slot, value }`. */
export function parseAppend(body: unknown): Op[] {
  if (!isPlainObject(body) || !("value" in body)) {
    throw new ApiError(422, 'body must be an object with "slot" and "value" fields');
  }
  return [{ op: "append", key: checkSlotName(body.slot), value: body.value }];
}

function parseBy(by: unknown, where: string): number {
  if (by === undefined) return 1;
  if (typeof by !== "number" || !Number.isFinite(by)) {
    throw new ApiError(422, `${where} must be a finite number`);
  }
  return by;
}

/** `POST /transaction` body: a bare array of `{ op, key, value?, by? }`. */
export function parseTransaction(body: unknown): Op[] {
  if (!Array.isArray(body)) throw new ApiError(422, "transaction body must be a JSON array");
  checkCount(body.length);
  return body.map((raw, i): Op => {
    const at = `operation ${i}`;
    if (!isPlainObject(raw)) throw new ApiError(422, `${at} must be an object`);
    const key = checkSlotName(raw.key, `${at}: key`);
    switch (raw.op) {
      case "set":
      case "append":
        if (!("value" in raw)) throw new ApiError(422, `${at}: ${raw.op} needs a value`);
        return { op: raw.op, key, value: raw.value };
      case "delete":
        return { op: "delete", key };
      case "increment":
        return { op: "increment", key, by: parseBy(raw.by, `${at}: by`) };
      default:
        throw new ApiError(
          422,
          `${at}: unknown op ${JSON.stringify(raw.op)} (expected set, delete, increment or append)`,
        );
    }
  });
}

/** An object's stored record: slot values, per-slot sizes and their total. */
export interface ObjectRecord {
  state: Record<string, unknown>;
  sizes: Record<string, number>;
  total: number;
}

/** A copy of `record` that `place` may change. */
function copyRecord(record: ObjectRecord): ObjectRecord {
  return { state: { ...record.state }, sizes: { ...record.sizes }, total: record.total };
}

/** Sets one slot of `r` (a copy) to `value` of `bytes` JSON bytes, or deletes it when `bytes`
 * is undefined, keeping its sizes and total. */
function place(r: ObjectRecord, key: string, value: unknown, bytes?: number): void {
  if (Object.hasOwn(r.sizes, key)) r.total -= r.sizes[key];
  if (bytes === undefined) {
    delete r.state[key];
    delete r.sizes[key];
    return;
  }
  r.sizes[key] = byteLength(key) + bytes;
  r.total += r.sizes[key];
  r.state[key] = value;
}

/**
 * `record` (not mutated) with materialised ops applied as they were stored: no checks, since
 * they passed them when written (used to bring a checkpoint up to the log's head).
 */
export function foldOps(record: ObjectRecord, ops: MaterialOp[]): ObjectRecord {
  const r = copyRecord(record);
  for (const { op, key, value } of ops) {
    place(r, key, value, op === "delete" ? undefined : jsonBytes(value));
  }
  return r;
}

/** The record of a never-written object. */
export function emptyRecord(): ObjectRecord {
  return { state: {}, sizes: {}, total: 0 };
}

/**
 * Applies `ops` in order to `record` (not mutated) and returns the new record and the
 * materialised ops. Throws `ApiError` (422 / 413) before producing anything when an op
 * does not fit the current values or a limit.
 */
export function applyOps(
  record: ObjectRecord,
  ops: Op[],
): { record: ObjectRecord; material: MaterialOp[] } {
  const r = copyRecord(record);
  const material: MaterialOp[] = [];
  for (const op of ops) {
    const has = Object.hasOwn(r.state, op.key);
    const current = has ? r.state[op.key] : undefined;
    let next: unknown;
    if (op.op === "delete") {
      place(r, op.key, undefined);
      material.push({ op: "delete", key: op.key, value: null });
      continue;
    } else if (op.op === "set") {
      next = op.value;
    } else if (op.op === "increment") {
      if (has && typeof current !== "number") {
        throw new ApiError(422, `cannot increment slot "${op.key}": value is not a number`);
      }
      next = ((current as number | undefined) ?? 0) + op.by;
      if (!Number.isFinite(next)) {
        throw new ApiError(422, `cannot increment slot "${op.key}": result is not finite`);
      }
    } else {
      if (has && !Array.isArray(current)) {
        throw new ApiError(422, `cannot append to slot "${op.key}": value is not a list`);
      }
      next = [...((current as unknown[] | undefined) ?? []), op.value];
    }
    const valueBytes = jsonBytes(next);
    if (valueBytes > MAX_VALUE_BYTES) {
      throw new ApiError(413, `value of slot "${op.key}" exceeds ${MAX_VALUE_BYTES} bytes`);
    }
    place(r, op.key, next, valueBytes);
    material.push({ op: "set", key: op.key, value: next });
  }
  if (r.total > MAX_OBJECT_BYTES) {
    throw new ApiError(413, `object would exceed ${MAX_OBJECT_BYTES} bytes`);
  }
  return { record: r, material };
}
