// Temp paths the tests make, removed when the test process exits: a test may reopen a data dir
// after stopping its server, so they live until the end of the run, not of the test.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made: string[] = [];

/** Removes `path` (a file or a dir) when the test process exits. */
export function removeAtExit(path: string): string {
  if (made.length === 0) {
    globalThis.addEventListener("unload", () => {
      for (const p of made) rmSync(p, { recursive: true, force: true });
    });
  }
  made.push(path);
  return path;
}

/** A new empty dir under the system temp dir (`prefix` + random), removed at exit. */
export function tempDir(prefix: string): string {
  return removeAtExit(mkdtempSync(join(tmpdir(), prefix)));
}
