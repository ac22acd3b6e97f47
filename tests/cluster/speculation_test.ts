// A replicated store's speculative runs (`#speculate` in lib/cluster/replicated_env.ts) on a
// read snapshot with their writes in memory, driven through an in-memory stand-in of the
// JetStream link:
// - the writes queued meanwhile go out as one batch, each task seeing the writes of the tasks
//   before it and its own (point reads, existence, ranges), and the message carries exactly
//   what each task read and wrote;
// - a call the overlay cannot serve exactly runs the batch in a write transaction, with the
//   same answers;
// - a write is speculated and sent to the log while another process holds LMDB's write lock
//   (the main thread does not wait for the lock), and acknowledged once applied after it;
// - a write waiting for an apply that outlasts its deadline is answered at the deadline;
// - a write whose position is applied early in a long catch-up is answered then, not after
//   the whole catch-up.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ReplicatedEnv } from "../../lib/cluster/replicated_env.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { fakeStream } from "./fake_link.ts";

/** One node on a stand-in stream, its store in a temp dir, with a write deadline. */
async function node(writeDeadlineMs = 10_000) {
  const stream = fakeStream();
  const path = join(tempDir("sb-spec-"), "store.mdb");
  const env = new ReplicatedEnv(path, stream.link, { writeDeadlineMs });
  env.db("objects");
  await env.start(5000);
  return { stream, env, path };
}

Deno.test("speculation: the tasks of one batch see the writes of the tasks before them and their own", async () => {
  const { stream, env } = await node();
  try {
    const db = env.db("objects");
    await env.transaction(() => {
      db.put(["row", 1], "one");
      db.put(["row", 3], "three");
      db.put(["row", 5], "five");
    });
    // The first goes out alone; the ones queued meanwhile go together as the next batch.
    const first = env.transaction(() =>
      db.put("n", ((db.get("n") as number | undefined) ?? 0) + 1)
    );
    const increments = Array.from({ length: 4 }, () =>
      env.transaction(() => {
        const n = ((db.get("n") as number | undefined) ?? 0) + 1;
        db.put("n", n);
        return n;
      }));
    const own = env.transaction(() => {
      db.put(["row", 2], "two");
      db.remove(["row", 3]);
      db.put(["row", 5], "FIVE");
      return {
        get: [db.get(["row", 2]), db.get(["row", 3]), db.get(["row", 5])],
        exists: [db.doesExist(["row", 2]), db.doesExist(["row", 3])],
        range: [...db.getRange({ start: ["row", 0], end: ["row", 9] })].map((
          { key, value },
        ) => [key, value]),
        reverse: [...db.getKeys({ start: ["row", 9], end: ["row", 1], reverse: true, limit: 2 })],
      };
    });
    const after = env.transaction(() =>
      [...db.getRange({ start: ["row", 0], end: ["row", 9] })].map(({ value }) => value)
    );
    await first;
    assert.deepEqual(
      await Promise.all(increments),
      [2, 3, 4, 5],
      "each increment read the one before it in its batch",
    );
    assert.deepEqual(await own, {
      get: ["two", undefined, "FIVE"],
      exists: [true, false],
      range: [[["row", 1], "one"], [["row", 2], "two"], [["row", 5], "FIVE"]],
      reverse: [["row", 5], ["row", 2]],
    });
    assert.deepEqual(
      await after,
      ["one", "two", "FIVE"],
      "a later task of the batch read the earlier one's writes",
    );
    assert.equal(db.get("n"), 5);
    assert.deepEqual(
      [...db.getRange({ start: ["row", 0], end: ["row", 9] })].map(({ value }) => value),
      ["one", "two", "FIVE"],
    );

    // They went out as one message, carrying every task's reads and writes in task order.
    const batch = stream.decoded().find((m) => m.w.length === 4 + 3);
    assert.ok(batch, "the queued tasks went out as one batch");
    assert.deepEqual(batch.w, [
      [0, "objects", "n", 2],
      [0, "objects", "n", 3],
      [0, "objects", "n", 4],
      [0, "objects", "n", 5],
      [0, "objects", ["row", 2], "two"],
      [1, "objects", ["row", 3]],
      [0, "objects", ["row", 5], "FIVE"],
    ]);
    assert.deepEqual(batch.r.p, [
      ...Array(4).fill(["objects", "n"]),
      ["objects", ["row", 2]],
      ["objects", ["row", 3]],
      ["objects", ["row", 5]],
      ["objects", ["row", 2]],
      ["objects", ["row", 3]],
    ]);
    assert.deepEqual(batch.r.g.slice(0, 3), [
      ["objects", ["row", 0], ["row", 9]],
      ["objects", ["row", 1], ["row", 9]],
      ["objects", ["row", 0], ["row", 9]],
    ]);
    assert.deepEqual(batch.r.a, []);
  } finally {
    await env.close();
  }
});

Deno.test("speculation: a call the snapshot cannot serve runs the batch in a write transaction, alike", async () => {
  const { env } = await node();
  try {
    const db = env.db("objects");
    await env.transaction(() => ["a", "b", "c"].forEach((k) => db.put(k, k)));
    const got = await env.transaction(() => {
      db.put("bb", "bb");
      db.remove("c");
      // `offset` is not one the overlay serves: the whole run goes again, locked.
      return [...db.getRange({ start: "a", offset: 1 } as Parameters<typeof db.getRange>[0])].map((
        { key },
      ) => key);
    });
    assert.deepEqual(got, ["b", "bb"]);
    assert.deepEqual([...db.getKeys()], ["a", "b", "bb"]);
  } finally {
    await env.close();
  }
});

/** Another process holding the write lock of the store at `path` (`hold_write_lock.ts`) for
 * at most `ms`: resolves once it holds it. `letGo` exists once it is about to let it go;
 * `release()` makes it let go and waits for it to exit. */
async function holdWriteLock(path: string, ms: number) {
  const dir = tempDir("sb-spec-lock-");
  const releaseFile = join(dir, "release");
  const letGo = join(dir, "let-go");
  const holder = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--no-check",
      new URL("./hold_write_lock.ts", import.meta.url).pathname,
      path,
      releaseFile,
      letGo,
      String(ms),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const state = { exited: false };
  const status = holder.status.then((s) => {
    state.exited = true;
    return s;
  });
  const lines = holder.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const release = async () => {
    try {
      Deno.writeTextFileSync(releaseFile, "");
    } catch { /* gone */ }
    if (!state.exited) {
      try {
        holder.kill("SIGKILL");
      } catch { /* exited */ }
    }
    await status;
    await lines.cancel().catch(() => {});
  };
  let out = "";
  while (!out.includes("held")) {
    const { value, done } = await lines.read();
    if (done) {
      await release();
      throw new Error(`lock holder exited: ${out}`);
    }
    out += value;
  }
  return { letGo, state, release, releaseFile };
}

Deno.test("speculation: a write goes out to the log while another process holds LMDB's write lock", async () => {
  const { stream, env, path } = await node();
  const lock = await holdWriteLock(path, 8000);
  try {
    const db = env.db("objects");
    let answered = false;
    const write = env.transaction(() => db.put("k", "v")).finally(() => (answered = true));
    for (let i = 0; i < 500 && stream.messages.length === 0 && !lock.state.exited; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(stream.messages.length, 1, "the write was speculated and sent to the log");
    assert.ok(!existsSync(lock.letGo), "while the other process still held the write lock");
    // Its apply needs the lock: not acknowledged before it is let go, and then it is.
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(answered, false, "not acknowledged while the lock is held");
    Deno.writeTextFileSync(lock.releaseFile, "");
    await write;
    assert.equal(db.get("k"), "v");
  } finally {
    await lock.release();
    await env.close();
  }
});

Deno.test("speculation: a write waiting for an apply that outlasts its deadline gets its 503 at the deadline, while the apply still waits", async () => {
  // A catch-up after a freeze applies for seconds; here the first write's apply waits for the
  // write lock another process holds, and the second write waits for that apply.
  const { stream, env, path } = await node(1000);
  const lock = await holdWriteLock(path, 8000);
  try {
    const db = env.db("objects");
    const first = env.transaction(() => db.put("a", 1)).then(() => "ok", (err) => err);
    for (let i = 0; i < 500 && stream.messages.length === 0 && !lock.state.exited; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(
      stream.messages.length,
      1,
      "the first write went out; its apply waits for the lock",
    );
    const second = await env.transaction(() => db.put("b", 2)).then(() => "ok", (err) => err);
    assert.ok(
      !existsSync(lock.letGo),
      "the second write was answered while the apply it waited for still waited",
    );
    assert.match(String(second), /cluster write deadline passed/);
    Deno.writeTextFileSync(lock.releaseFile, "");
    await first;
  } finally {
    await lock.release();
    await env.close();
  }
});

Deno.test("speculation: a write applied at the start of a long catch-up is answered then, while the catch-up goes on", async () => {
  // A node resumed from a freeze: its write lands just before thousands of other nodes'
  // positions it has yet to apply. Before, the write waited for the whole catch-up after its
  // append (in the long nemesis, 2.5 s past its deadline).
  const { stream, env } = await node(10_000);
  const N = 6000;
  const append = stream.link.append.bind(stream.link);
  let once = false;
  (stream.link as { append: typeof append }).append = async (data, msgId, timeoutMs) => {
    const reply = await append(data, msgId, timeoutMs);
    if (once) return reply;
    once = true;
    for (let i = 1; i <= N; i++) {
      stream.add({
        o: "other",
        b: crypto.randomUUID(),
        base: reply.kind === "stored" ? reply.seq + i - 1 : 0,
        r: { p: [], g: [], a: [] },
        w: [[0, "objects", ["other", i], "x".repeat(200)]],
      });
    }
    return reply;
  };
  try {
    const db = env.db("objects");
    await env.transaction(() => db.put("mine", 1));
    const appliedAtAnswer = env.applied;
    assert.equal(stream.messages.length, 1 + N);
    assert.ok(
      appliedAtAnswer < 1 + N,
      `answered while the catch-up still ran (applied ${appliedAtAnswer} of ${1 + N})`,
    );
    for (let i = 0; i < 3000 && env.applied < 1 + N; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(env.applied, 1 + N, "the catch-up went on to the end");
    assert.equal(db.get("mine"), 1);
    assert.equal([...db.getKeys({ start: ["other"], end: ["other", Infinity] })].length, N);
  } finally {
    await env.close();
  }
});
