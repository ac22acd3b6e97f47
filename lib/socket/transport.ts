/**
 * One WebSocket as the runtime adapter (deno.ts, bun.ts) hands it to the socket layer: what a
 * connection needs, and nothing of the runtime's own socket type. The socket layer owns this
 * interface and each runtime implements it, so the socket layer imports no runtime.
 */
export interface Transport {
  send(data: string | Uint8Array): void;
  close(code: number, reason: string): void;
  /** Bytes queued but not yet written to the network. */
  bufferedAmount(): number;
  /** Runs `fn` with the sends it makes gathered into one network write (Bun's cork); without
   * it, each send outside the runtime's own message callback is a write of its own. */
  cork?(fn: () => void): void;
  /** Runtime-native topic membership and publish-to-others (Bun only). */
  subscribe?(name: string): void;
  unsubscribe?(name: string): void;
  publish?(name: string, data: string | Uint8Array): void;
}
