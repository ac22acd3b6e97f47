import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { OrderedLog } from "../../lib/store/ordered_log.ts";
import { StoreEnv } from "../../lib/store/env.ts";
import { tempStore } from "../helpers/temp_store.ts";

const writer = new URL("./crash_writer.ts", import.meta.url).pathname;

/** Runs the writer until it has acknowledged at least `minAcks` appends, then SIGKILLs it. */
async function runAndKill(path: string, minAcks: number): Promise<Map<number, number>> {
  const child = spawn(Deno.execPath(), ["run", "-A", writer, path], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const acks = new Map<number, number>();
  let buf = "";
  const exited = new Promise((r) => child.on("exit", r));
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 20_000);
    child.stdout!.on("data", (chunk: Buffer) => {
      buf += chunk.toString();
      const lines = buf.split("\n");
      buf = lines.pop()!;
      for (const line of lines) {
        const [, pos, id] = line.split(" ");
        acks.set(Number(pos), Number(id));
      }
      if (acks.size >= minAcks) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  child.kill("SIGKILL");
  await exited;
  return acks;
}

Deno.test("OrderedLog keeps every acknowledged append across repeated SIGKILLs, contiguous with no duplicates", async () => {
  const { env, path } = tempStore();
  await env.close();
  const allAcked = new Map<number, number>();
  for (let round = 0; round < 4; round++) {
    const acks = await runAndKill(path, 200 * (round + 1));
    assert.ok(acks.size > 0, "writer acknowledged appends");
    for (const [pos, id] of acks) allAcked.set(pos, id);
  }
  const reopened = new StoreEnv(path);
  const log = new OrderedLog(reopened);
  const records = log.after<{ id: number }>("crash", 0);
  const positions = records.map((r) => r.position);
  assert.deepEqual(positions, Array.from({ length: positions.length }, (_, i) => i + 1));
  assert.equal(log.head("crash"), positions.length);
  const stored = new Map(records.map((r) => [r.position, r.entry.id]));
  for (const [pos] of allAcked) {
    assert.ok(stored.has(pos), `acknowledged position ${pos} is present`);
  }
  // Positions restart-safe: ids within one run are unique per position.
  assert.equal(new Set(positions).size, positions.length);
  await reopened.close();
});
