/**
 * The client address of a request, from the runtime's connection info that the server hands
 * to the router as its environment (Deno: `ServeHandlerInfo.remoteAddr`; Bun: the server's
 * `requestIP`). The console's login limiter counts failures per address.
 */

/** The peer's address, or "unknown" when the runtime did not say. */
export function peerAddress(req: Request, conn: unknown): string {
  const c = conn as {
    remoteAddr?: { hostname?: string };
    requestIP?: (req: Request) => { address?: string } | null;
  } | undefined;
  try {
    const addr = c?.remoteAddr?.hostname ?? c?.requestIP?.(req)?.address;
    return typeof addr === "string" && addr !== "" ? addr : "unknown";
  } catch {
    return "unknown";
  }
}
