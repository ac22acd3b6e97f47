// End-to-end tests of the server SDK's objects client (`Switchboard.objects(type, key)`).
import assert from "node:assert/strict";
import { startInProcess } from "../helpers/in_process.ts";
import { Switchboard, SwitchboardError } from "../../sdk/server/mod.ts";
import { sdkFor } from "../pubsub/helpers.ts";

Deno.test({
  name: "`Switchboard.objects()` covers every operation and surfaces { error } failures",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const server = await startInProcess();
    try {
      const sb = sdkFor(server);
      const obj = sb.objects("doc", "a/b c");
      assert.deepEqual(await obj.get(), { state: {}, log_id: 0 });
      assert.equal(await obj.getSlot("x"), null);
      assert.equal(await obj.set("x", { v: 1 }), 1);
      assert.deepEqual(await obj.getSlot("x"), { v: 1 });
      assert.equal(await obj.patch({ a: 1, b: 2 }), 2);
      assert.deepEqual(await obj.increment("n"), { log_id: 3, value: 1 });
      assert.deepEqual(await obj.increment("n", 9), { log_id: 4, value: 10 });
      assert.equal(await obj.append("l", "z"), 5);
      assert.equal(await obj.delete("a"), 6);
      assert.equal(await obj.set("log", "a slot named log"), 7);
      assert.equal(await obj.getSlot("log"), "a slot named log");
      assert.equal(
        await obj.transaction([
          { op: "increment", key: "n", by: -10 },
          { op: "append", key: "l", value: 2 },
          { op: "delete", key: "b" },
          { op: "set", key: "s", value: [true] },
        ]),
        8,
      );
      assert.deepEqual(await obj.get(), {
        state: { x: { v: 1 }, n: 0, l: ["z", 2], log: "a slot named log", s: [true] },
        log_id: 8,
      });
      const items = await obj.log(6);
      assert.deepEqual(items.map((i) => [i.op, i.key, i.log_id]), [
        ["set", "log", 7],
        ["set", "n", 8],
        ["set", "l", 8],
        ["delete", "b", 8],
        ["set", "s", 8],
      ]);
      assert.equal((await obj.log()).length, 12);

      await assert.rejects(() => obj.increment("l"), (err: unknown) => {
        assert.ok(err instanceof SwitchboardError);
        assert.equal(err.status, 422);
        assert.match(err.message, /not a number/);
        assert.equal(typeof (err.body as { error: string }).error, "string");
        return true;
      });
      await assert.rejects(
        () => obj.transaction([{ op: "set", key: "q", value: 1 }, { op: "nope" } as never]),
        (err: unknown) => err instanceof SwitchboardError && err.status === 422,
      );
      assert.equal((await obj.get()).log_id, 8);

      await obj.purge();
      assert.deepEqual(await obj.get(), { state: {}, log_id: 0 });
      assert.equal(await obj.set("y", 1), 1);

      const bad = new Switchboard({ baseUrl: server.baseUrl, appKey: "key1", appSecret: "no" });
      await assert.rejects(
        () => bad.objects("doc", "k").get(),
        (err: unknown) => err instanceof SwitchboardError && err.status === 401,
      );
      assert.throws(() => sb.objects("", "k"), TypeError);
    } finally {
      await server.stop();
    }
  },
});
