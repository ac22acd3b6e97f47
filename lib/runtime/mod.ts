// Picks the runtime adapter (Bun or Deno) this process runs under and starts listening with it.
import type { RunningServer, ServeOptions } from "./types.ts";

export type { RunningServer, ServeOptions } from "./types.ts";

/** Which runtime runs this process. */
export const runtimeName: "bun" | "deno" = "Bun" in globalThis ? "bun" : "deno";

/** Starts listening with the current runtime's adapter. */
export async function serve(opts: ServeOptions): Promise<RunningServer> {
  const adapter = runtimeName === "bun" ? await import("./bun.ts") : await import("./deno.ts");
  return adapter.serve(opts);
}
