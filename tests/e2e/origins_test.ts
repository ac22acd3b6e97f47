// allowed_origins per app: WebSocket upgrades from other browser origins are refused with 403
// (and logged); listed origins, subdomain wildcards and non-browser clients get through.
import assert from "node:assert/strict";
import { startInProcess } from "../helpers/in_process.ts";
import { TcpWebSocket } from "../helpers/tcp_websocket.ts";

Deno.test("allowed_origins: other origins get 403 on upgrade, listed ones and no Origin get a socket", async () => {
  const server = await startInProcess({
    apps: [
      {
        id: "a",
        key: "ka",
        secret: "sa",
        allowed_origins: ["https://app.example", "https://*.example.org"],
      },
      { id: "b", key: "kb", secret: "sb" },
    ],
  });
  const path = (key: string) => `/socket/websocket?app_key=${key}&vsn=2.0.0`;
  const open = async (key: string, origin?: string) => {
    try {
      const ws = await TcpWebSocket.open(server.port, path(key), origin ? { Origin: origin } : {});
      ws.destroy();
      return 101;
    } catch (err) {
      return Number(String(err).match(/ (\d{3}) /)?.[1]);
    }
  };
  try {
    assert.equal(await open("ka", "https://evil.example"), 403);
    assert.equal(await open("ka", "https://app.example.evil"), 403);
    assert.equal(await open("ka", "https://example.org"), 403);
    assert.equal(await open("ka", "https://app.example"), 101);
    assert.equal(await open("ka", "https://eu.example.org"), 101);
    assert.equal(await open("ka"), 101, "no Origin: not a browser, allowed");
    assert.equal(await open("kb", "https://anything.example"), 101, "default: any origin");
    assert.equal(await open("nope", "https://app.example"), 401);
    assert.match(
      server.output(),
      /websocket upgrade refused: origin not allowed origin=https:\/\/evil\.example app=a/,
    );
  } finally {
    await server.stop();
  }
});
