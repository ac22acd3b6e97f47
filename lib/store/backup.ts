// `switchboard backup <path>`: a consistent, compacted copy of the LMDB environment.
import { existsSync } from "node:fs";
import { StoreEnv, storePath } from "./env.ts";
import { ConfigError } from "../config/config.ts";

/**
 * Writes a consistent, compacted copy of the LMDB environment to `dest`. Safe while the
 * server runs: LMDB readers see one snapshot and never block the writer.
 * Restore: stop the server, replace `<data-dir>/switchboard.mdb` with the copy, start again.
 */
export async function runBackup(dataDir: string, dest: string): Promise<void> {
  const path = storePath(dataDir);
  if (!existsSync(path)) throw new ConfigError(`no data to back up at ${path}`);
  if (existsSync(dest)) throw new ConfigError(`backup destination ${dest} already exists`);
  const env = new StoreEnv(path);
  try {
    await env.backup(dest);
  } finally {
    await env.close();
  }
}
