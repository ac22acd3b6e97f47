/**
 * Storage failures as clients and operators see them: a commit the storage refused becomes a
 * `StorageUnavailableError` whose reason reads like the OS error ("No space left on device"),
 * and lmdb-js's own raw print of that failure is kept out of the logs.
 */
import { statfsSync } from "node:fs";
import { dirname } from "node:path";

/**
 * A write the storage could not commit (disk full, I/O error). Nothing of the write was kept;
 * reads, joins and live delivery of committed data go on, and later writes succeed again once
 * the cause is gone. HTTP answers 503, a channel push gets `reason` as its error.
 */
export class StorageUnavailableError extends Error {
  /** The reason string sent to clients: `storage unavailable: {cause}`. */
  readonly reason: string;
  /** A channel push that fails with it is answered with `reason` (socket/handler.ts
   * `PushRefusal`), not crashed. */
  readonly refusesPush = true as const;
  /** LMDB's C library already wrote an unterminated `Write error: …` to stderr for it. */
  readonly printedByLmdb: boolean;

  constructor(cause: string, printedByLmdb = false) {
    super(`storage unavailable: ${cause}`);
    this.name = "StorageUnavailableError";
    this.reason = this.message;
    this.printedByLmdb = printedByLmdb;
  }
}

/**
 * Turns lmdb-js's commit failure into a `StorageUnavailableError`. lmdb-js rejects every write
 * of a failed commit with "Commit failed" and a separate `commitError` promise holding the
 * cause; nobody else awaits that promise, so it is consumed here (an unhandled rejection
 * would end the process). Any other error is returned unchanged.
 */
export async function asStorageError(err: unknown, storePath?: string): Promise<unknown> {
  if (!isCommitFailure(err)) return err;
  let cause = "commit failed";
  let printed = false;
  try {
    await err.commitError;
  } catch (e) {
    cause = describe(e, storePath);
    // LMDB prints "Write error: …" (no newline) exactly where it records this detail.
    printed = e instanceof Error && /Attempting to write page/.test(e.message);
  }
  return new StorageUnavailableError(cause, printed);
}

/**
 * True for lmdb-js's "Commit failed" rejection. When a commit fails, lmdb-js also rejects a
 * commit promise of its own event-turn batch that no caller holds; `StoreEnv` has already
 * refused and logged that commit, so such a stray rejection needs no report of its own.
 */
export function isCommitFailure(err: unknown): err is { commitError: Promise<unknown> } {
  return (err as { commitError?: unknown })?.commitError instanceof Promise;
}

/** Free bytes under which a failed write counts as a full disk. */
const FULL_BELOW_BYTES = 1024 * 1024;

/**
 * A short cause: the OS error text, e.g. "No space left on device", without LMDB's detail
 * (": Attempting to write page at position …"). A disk that fills during a write makes LMDB
 * see a short write, which it reports as EIO ("Input/output error"): with less than 1 MiB free
 * on the store's file system that is a full disk too, and says so.
 */
export function describe(e: unknown, storePath?: string): string {
  const msg = e instanceof Error ? e.message : String(e);
  const code = (e as { code?: unknown })?.code;
  if (code === 28 || code === "ENOSPC" || /No space left on device/.test(msg)) {
    return "No space left on device";
  }
  const text = msg.split("\n")[0].replace(/^MDB_\w+:\s*/, "").replace(/: Attempting to .*$/, "");
  if (
    (code === 5 || code === "EIO" || /^Input\/output error/.test(text)) &&
    storePath !== undefined && freeBytes(storePath) < FULL_BELOW_BYTES
  ) {
    return "No space left on device";
  }
  return text || "commit failed";
}

/** Bytes free on the file system of the store at `storePath` (Infinity when unknown). */
function freeBytes(storePath: string): number {
  try {
    const s = statfsSync(dirname(storePath));
    return s.bavail * s.bsize;
  } catch {
    return Infinity;
  }
}

const quieted = new WeakSet<object>();

/**
 * lmdb-js prints a failed commit's error with `console.error` (a raw multi-line trace under
 * Bun) before rejecting the commit; the store logs that refusal as one JSON line
 * (`storage refused a commit`), so those prints are dropped. Every other `console.error` goes
 * through unchanged. Idempotent; `target` is `console` but for tests.
 */
export function quietLmdbCommitErrors(target: { error: (...args: unknown[]) => void } = console) {
  if (quieted.has(target)) return;
  quieted.add(target);
  const original = target.error.bind(target);
  target.error = (...args: unknown[]) => {
    if (args.length === 1 && isLmdbWriteError(args[0])) return;
    original(...args);
  };
}

/** An error lmdb-js made of a failed write's status: an Error with a numeric `code` whose
 * message is the OS or LMDB error text. */
function isLmdbWriteError(e: unknown): boolean {
  if (!(e instanceof Error) || typeof (e as { code?: unknown }).code !== "number") return false;
  return /^(MDB_\w+|No space left on device|Input\/output error|Disk quota exceeded|Read-only file system)/
    .test(e.message) || /Attempting to write page/.test(e.message);
}
