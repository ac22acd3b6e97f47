/**
 * What `CommitQueue` commits into: the part of `StoreEnv` the queue uses. It lives apart from
 * env.ts so that the queue (which `StoreEnv` builds) does not import the environment back.
 */
import type { RootDatabase } from "lmdb";

/** A store that commits transactions and batches durably (`StoreEnv`). */
export interface CommitTarget {
  readonly root: RootDatabase;
  /** One durable write transaction (see `StoreEnv.transaction`). */
  transaction<T>(fn: () => T): Promise<T>;
  /** One durable batch of puts committed only after the batch marked `after` (see
   * `StoreEnv.chained`): resolves true once durable, false when skipped. */
  chained(fn: () => void, after: number | undefined): { mark: number; committed: Promise<boolean> };
}
