/**
 * How a Durable Object's log entry is stored: one flat MessagePack array
 * `[batch, op, key, value, op, key, value, ...]` (`batch` 1 or 0), which msgpackr decodes about
 * twice as fast as the `{ batch, ops: [{ op, key, value }] }` maps that releases before
 * 2026-11-25 stored; those still read the same. Replay is mostly decoding, so the format is
 * the replay rate.
 */
import type { MaterialOp } from "./ops.ts";

/** One log entry as the product sees it: `batch` marks PATCH / transaction writes. */
export interface ObjectEntry {
  batch: boolean;
  ops: MaterialOp[];
}

/** An entry as stored: the flat array, or the map an earlier release stored. */
export type StoredObjectEntry = unknown[] | ObjectEntry;

/** The stored form of an entry. */
export function packEntry(batch: boolean, ops: MaterialOp[]): unknown[] {
  const out: unknown[] = [batch ? 1 : 0];
  for (const { op, key, value } of ops) out.push(op, key, value);
  return out;
}

/** The entry a stored form holds (either form). */
export function unpackEntry(stored: StoredObjectEntry): ObjectEntry {
  if (!Array.isArray(stored)) return stored;
  const ops: MaterialOp[] = [];
  for (let i = 1; i + 2 < stored.length; i += 3) {
    ops.push({
      op: stored[i] as MaterialOp["op"],
      key: stored[i + 1] as string,
      value: stored[i + 2],
    });
  }
  return { batch: stored[0] === 1, ops };
}
