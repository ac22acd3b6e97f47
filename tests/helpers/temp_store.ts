// A real LMDB environment in a fresh temp dir (no mocked storage).
import { join } from "node:path";
import { tempDir } from "./temp_dir.ts";
import { StoreEnv } from "../../lib/store/env.ts";

/** Opens a StoreEnv in a new temp dir; returns it with its path. */
export function tempStore(): { env: StoreEnv; path: string } {
  const dir = tempDir("sb-store-");
  const path = join(dir, "test.mdb");
  return { env: new StoreEnv(path), path };
}
