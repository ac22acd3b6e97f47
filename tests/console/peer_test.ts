// The login limiter's client address, read from each runtime's connection info.
import assert from "node:assert/strict";
import { peerAddress } from "../../lib/console/peer.ts";

Deno.test("console peer address: Deno's remoteAddr, Bun's requestIP, else unknown", () => {
  const req = new Request("http://localhost/console/login");
  assert.equal(
    peerAddress(req, { remoteAddr: { hostname: "10.0.0.7", port: 5000, transport: "tcp" } }),
    "10.0.0.7",
  );
  assert.equal(
    peerAddress(req, {
      requestIP: (r: Request) => (r === req ? { address: "::1", port: 1 } : null),
    }),
    "::1",
  );
  assert.equal(peerAddress(req, { requestIP: () => null }), "unknown");
  assert.equal(peerAddress(req, undefined), "unknown");
  assert.equal(
    peerAddress(req, {
      requestIP: () => {
        throw new Error("closed");
      },
    }),
    "unknown",
  );
});
