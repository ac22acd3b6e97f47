// `GET /favicon.ico` answers with the icon (an ICO file, image/x-icon), with or without the
// playground, from source and from the binary.
import assert from "node:assert/strict";
import { startInProcess } from "../helpers/in_process.ts";

for (const args of [[], ["--no-playground"]]) {
  Deno.test(`favicon: /favicon.ico is an ICO image ${args.join(" ") || "(playground on)"}`, async () => {
    const server = await startInProcess({ args });
    try {
      const res = await fetch(`${server.baseUrl}/favicon.ico`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "image/x-icon");
      const bytes = new Uint8Array(await res.arrayBuffer());
      // ICONDIR: reserved 0, type 1 (icon), at least one image; the image is a PNG.
      assert.deepEqual([...bytes.slice(0, 4)], [0, 0, 1, 0]);
      assert.ok(bytes[4] >= 1);
      assert.deepEqual([...bytes.slice(22, 26)], [0x89, 0x50, 0x4e, 0x47]);
      assert.ok(bytes.length > 100 && bytes.length < 10_000, `${bytes.length} bytes`);
    } finally {
      await server.stop();
    }
  });
}
