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

  constructor(cause: string) {
    super(`storage unavailable: ${cause}`);
    this.name = "StorageUnavailableError";
    this.reason = this.message;
  }
}

/**
 * Turns lmdb-js's commit failure into a `StorageUnavailableError`. lmdb-js rejects every write
 * of a failed commit with "Commit failed" and a separate `commitError` promise holding the
 * cause; nobody else awaits that promise, so it is consumed here (an unhandled rejection
 * would end the process). Any other error is returned unchanged.
 */
export async function asStorageError(err: unknown): Promise<unknown> {
  if (!isCommitFailure(err)) return err;
  let cause = "commit failed";
  try {
    await err.commitError;
  } catch (e) {
    cause = describe(e);
  }
  return new StorageUnavailableError(cause);
}

/**
 * True for lmdb-js's "Commit failed" rejection. When a commit fails, lmdb-js also rejects a
 * commit promise of its own event-turn batch that no caller holds; `StoreEnv` has already
 * refused and logged that commit, so such a stray rejection needs no report of its own.
 */
export function isCommitFailure(err: unknown): err is { commitError: Promise<unknown> } {
  return (err as { commitError?: unknown })?.commitError instanceof Promise;
}

/** A short cause: the OS error text, e.g. "No space left on device". */
function describe(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  return msg.split("\n")[0].replace(/^MDB_\w+:\s*/, "") || "commit failed";
}
