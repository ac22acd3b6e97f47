/**
 * Key encoding of every named database: lmdb-js's own ordered-binary bytes, read back with the
 * leading string of composite keys decoded once per run of equal keys.
 *
 * Log keys are `[stream, position]`. A range read walks thousands of keys of one stream, and
 * decoding the stream name of each was a tenth of a replay's CPU. `readKey` remembers the
 * bytes of the last leading string it decoded; a key that starts with the same bytes followed
 * by the element separator reuses that string and decodes only the rest. Keys are written
 * exactly as before (`writeKey` is ordered-binary's), so stores stay compatible both ways.
 */
import { enableNullTermination, readKey as readOrdered, writeKey } from "ordered-binary";

/** Longest leading string (in encoded bytes) worth remembering. */
const MAX_PREFIX = 1024;

/** An lmdb-js `keyEncoder` with a one-entry cache of the leading string (one per database). */
export function prefixCachedKeys() {
  let prefix = new Uint8Array(0);
  let prefixString: string | null = null;
  const scratch = new Uint8Array(MAX_PREFIX + 8);
  return {
    writeKey,
    enableNullTermination,
    readKey(buffer: Uint8Array, start: number, end: number): unknown {
      const n = prefix.length;
      if (
        prefixString !== null && start + n < end && buffer[start + n] === 0 &&
        startsWith(buffer, start, prefix)
      ) {
        const rest = readOrdered(buffer, start + n + 1, end);
        return Array.isArray(rest) ? [prefixString, ...rest] : [prefixString, rest];
      }
      const key = readOrdered(buffer, start, end);
      if (Array.isArray(key) && typeof key[0] === "string") remember(buffer, start, key[0]);
      return key;
    },
  };

  /** Caches `first` when its encoding is exactly the bytes before the key's first separator. */
  function remember(buffer: Uint8Array, start: number, first: string): void {
    if (first.length > MAX_PREFIX / 3) return;
    const n = writeKey(first, scratch, 0, true);
    if (
      n > MAX_PREFIX || buffer[start + n] !== 0 ||
      !startsWith(buffer, start, scratch.subarray(0, n))
    ) return;
    prefix = scratch.slice(0, n);
    prefixString = first;
  }
}

function startsWith(buffer: Uint8Array, start: number, bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length; i++) if (buffer[start + i] !== bytes[i]) return false;
  return true;
}
