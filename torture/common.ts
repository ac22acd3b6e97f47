// Shared plumbing of the fault suite: the server under test (the binary by default), budgets,
// counters and failure collection.
import { type StartOptions, startServer, type TestServer } from "../tests/helpers/server.ts";

/** How long and how hard one part runs. */
export interface Budget {
  /** Wall-clock budget of the part, in ms. */
  ms: number;
  /** The fast-check seed. */
  seed: number;
}

/** What a part reports: counts printed, failures collected (empty = pass). */
export interface PartResult {
  name: string;
  counts: Record<string, number>;
  failures: string[];
}

/** Starts the server under test: SWITCHBOARD_BIN (set by run.ts, default dist/switchboard). */
export function start(opts: StartOptions = {}): Promise<TestServer> {
  return startServer(opts);
}

/** Fails when the server's output shows a crash or an unhandled error. */
export function crashLines(output: string): string[] {
  return output.split("\n").filter((l) => /crashed|unhandled|uncaught|panic|Segmentation/i.test(l));
}

/** Resolves after `ms`. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A deterministic PRNG (mulberry32) for the parts that do not use fast-check. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
