/**
 * The fault hook `SWITCHBOARD_FAULT_FORK_AT` (tests only): what a NATS stream replica that
 * diverged feeds one node at one log position. The node applies, instead of the message the
 * stream holds there, another one: another batch id (so its fingerprint differs from the
 * others') with the same writes, except that every entry the message appends to an ordered log
 * has its last text changed. So a subscriber of such a stream on that node is published an
 * entry the other nodes never hold, as it would be by a real diverged replica.
 */
import { logDbNames } from "../store/log_layout.ts";

/** A write as a log message holds it: `[0, db, key, value]` puts, `[1, db, key]` removes. */
export type Write = [0, string, unknown, unknown] | [1, string, unknown];

/** What the forked copy of an entry's last text gets appended. */
export const FORKED_MARK = " (forked)";

const ENTRIES_SUFFIX = logDbNames("").entries;

/** The writes a diverged replica's message holds instead of `writes` (see the module comment). */
export function forkedWrites(writes: Write[]): Write[] {
  return writes.map((
    w,
  ) => (w[0] === 0 && w[1].endsWith(ENTRIES_SUFFIX) ? [0, w[1], w[2], forkLastText(w[3])] : w));
}

/** A copy of `value` whose last string (depth first) ends with `FORKED_MARK`. */
function forkLastText(value: unknown): unknown {
  let done = false;
  const walk = (v: unknown): unknown => {
    if (typeof v === "string" && !done) {
      done = true;
      return v + FORKED_MARK;
    }
    if (Array.isArray(v)) {
      const out = v.slice();
      for (let i = out.length - 1; i >= 0 && !done; i--) out[i] = walk(out[i]);
      return out;
    }
    if (v && typeof v === "object" && !(v instanceof Uint8Array)) {
      const out: Record<string, unknown> = { ...(v as Record<string, unknown>) };
      const keys = Object.keys(out);
      for (let i = keys.length - 1; i >= 0 && !done; i--) out[keys[i]] = walk(out[keys[i]]);
      return out;
    }
    return v;
  };
  return walk(value);
}
