// ReplicatedEnv against log faults a real nats-server shows only rarely (issue 35): the stream is
// the only truth. A stand-in for the JetStream link (an in-memory stream with consumers, direct
// reads and publishes whose replies can lie or be lost) drives two real LMDB replicas:
// - a publish reply naming a position that holds another node's message is never applied as
//   ours: every node applies what the stream holds there; the write is acknowledged only once
//   found in the stream (retried with the same message id), else it gets a 503;
// - a duplicate reply naming a position that holds another message (a duplicate table that
//   disagrees with the log) is left: the batch goes out again under a new message id;
// - a lost reply is retried with the same message id and acknowledged from the stream;
// - a publish whose reply never comes does not hold the node's next writes: they go out beside
//   it and are acknowledged first;
// - a batch the stream stored twice is applied once, alike on every node.
import assert from "node:assert/strict";
import { join } from "node:path";
import { Packr } from "msgpackr";
import type { ClusterLink } from "../../lib/cluster/link.ts";
import { ReplicatedEnv } from "../../lib/cluster/replicated_env.ts";
import { StorageUnavailableError } from "../../lib/store/errors.ts";
import { tempDir } from "../helpers/temp_dir.ts";

const codec = new Packr(
  { useRecords: false, int64AsNumber: true } as ConstructorParameters<typeof Packr>[0],
);

/** How the stand-in answers one publish. */
type Reply =
  | "honest"
  /** Stores another node's message where ours should go, stores ours nowhere, and replies
   * with that position as if it were ours. */
  | "lie"
  /** Stores it, and the reply is lost. */
  | "lost"
  /** Stores it, and again after the next message (dedup failed across a leader change). */
  | "twice"
  /** Like "lie", and keeps our message id at that position in its duplicate table (a leader
   * whose table disagrees with its log): every retry is answered "duplicate" there. */
  | "stuck";

/** An in-memory stream shared by the stand-in links. */
class FakeStream {
  messages: Uint8Array[] = [];
  #followers = new Set<(seq: number, data: Uint8Array) => void>();
  #ids = new Map<string, number>();
  /** What the next publishes do, in order; "honest" once empty. */
  script: Reply[] = [];
  /** The next publish's message id is lost `tries` times with no reply (each try waits out
   * its timeout, as for a server that never answers); other ids are answered meanwhile. */
  hanging: { tries: number; id?: string } | undefined;
  #again: Uint8Array[] = [];

  store(data: Uint8Array): number {
    this.messages.push(data);
    const seq = this.messages.length;
    // Deliver on a later turn, as a consumer would.
    setTimeout(() => {
      for (const f of this.#followers) f(seq, data);
    }, 1);
    return seq;
  }

  publish(data: Uint8Array, id: string): { seq: number; duplicate?: boolean } | null {
    const known = this.#ids.get(id);
    if (known !== undefined) return { seq: known, duplicate: true };
    const reply = this.script.shift() ?? "honest";
    if (reply === "lie" || reply === "stuck") {
      const foreign = {
        o: "elsewhere",
        b: crypto.randomUUID(),
        base: 0,
        r: { p: [], g: [], a: [] },
        w: [[0, "objects", `foreign-${this.messages.length}`, 1]],
      };
      const seq = this.store(codec.pack(foreign));
      if (reply === "stuck") this.#ids.set(id, seq);
      return { seq };
    }
    const seq = this.store(data);
    for (const again of this.#again.splice(0)) this.store(again);
    if (reply === "twice") this.#again.push(data);
    else this.#ids.set(id, seq);
    return reply === "lost" ? null : { seq };
  }

  follow(start: number, fn: (seq: number, data: Uint8Array) => void): { stop(): void } {
    const follower = (seq: number, data: Uint8Array) => seq >= start && fn(seq, data);
    this.#followers.add(follower);
    for (let s = start; s <= this.messages.length; s++) fn(s, this.messages[s - 1]);
    return { stop: () => this.#followers.delete(follower) };
  }
}

/** A `ClusterLink` stand-in on `stream`. */
function fakeLink(stream: FakeStream, nodeId: string): ClusterLink {
  const link = {
    nodeId,
    maxPayload: 1024 * 1024,
    append(data: Uint8Array, id: string, timeoutMs: number) {
      const hang = stream.hanging;
      if (hang && hang.tries > 0 && (hang.id ?? id) === id) {
        hang.id = id;
        hang.tries--;
        return new Promise((r) =>
          setTimeout(() => r({ kind: "unknown", error: "TIMEOUT" }), timeoutMs)
        );
      }
      const r = stream.publish(data, id);
      return Promise.resolve(
        r
          ? { kind: "stored", seq: r.seq, duplicate: r.duplicate ?? false }
          : { kind: "unknown", error: "TIMEOUT" },
      );
    },
    read: (seq: number) => Promise.resolve(stream.messages[seq - 1] ?? null),
    bounds: () => Promise.resolve({ first: 1, last: stream.messages.length }),
    lastSeq: () => Promise.resolve(stream.messages.length),
    follow: (start: number, fn: (seq: number, data: Uint8Array) => void) =>
      stream.follow(start, fn),
    subscribe: () => () => {},
    publish: () => {},
    connected: () => true,
    readFailed: () => {},
  };
  return link as unknown as ClusterLink;
}

/** Two replicas on one stream. */
async function replicas(deadlineMs: number) {
  const stream = new FakeStream();
  const envs = await Promise.all(["a", "b"].map(async (node) => {
    const env = new ReplicatedEnv(join(tempDir("sb-repl-"), "store.mdb"), fakeLink(stream, node), {
      writeDeadlineMs: deadlineMs,
    });
    env.db("objects"); // opened up front, as the products open theirs
    await env.start(5000);
    return env;
  }));
  return { stream, envs, close: () => Promise.all(envs.map((e) => e.close())) };
}

/** Every key and value of the replicated `objects` database. */
function contents(env: ReplicatedEnv): [unknown, unknown][] {
  return [...env.db("objects").getRange()].map(({ key, value }) => [key, value]);
}

/** Waits until every replica applied the whole stream. */
async function settled(stream: FakeStream, envs: ReplicatedEnv[]) {
  for (let i = 0; i < 200 && envs.some((e) => e.applied < stream.messages.length); i++) {
    await new Promise((r) => setTimeout(r, 10));
  }
  for (const e of envs) {
    assert.equal(e.applied, stream.messages.length, "every replica applied the whole stream");
  }
}

Deno.test("replicated store: a reply naming another message's position is never applied as ours", async () => {
  const { stream, envs, close } = await replicas(3000);
  try {
    stream.script = ["lie"];
    const put = envs[0].transaction(() => envs[0].db("objects").put("mine", "v"));
    await put;
    await settled(stream, envs);
    // Position 1 holds the foreign message (what the reply named); ours was published again
    // with its message id and found at 2.
    assert.equal(stream.messages.length, 2);
    assert.equal((codec.unpack(stream.messages[0]) as { o: string }).o, "elsewhere");
    for (const env of envs) {
      assert.deepEqual(
        contents(env),
        [["foreign-0", 1], ["mine", "v"]],
        "each replica holds what the stream holds",
      );
    }
  } finally {
    await close();
  }
});

Deno.test("replicated store: a duplicate table pointing at another message is left under a new message id", async () => {
  const { stream, envs, close } = await replicas(3000);
  try {
    stream.script = ["stuck"];
    await envs[0].transaction(() => envs[0].db("objects").put("mine", "v"));
    await settled(stream, envs);
    // Position 1 holds the foreign message; ours, published again under another id that names
    // the first, is at 2, applied once on every replica.
    assert.equal(stream.messages.length, 2);
    const ours = codec.unpack(stream.messages[1]) as { o: string; b: string; a?: string };
    assert.equal(ours.o, "a");
    assert.ok(ours.a && ours.a !== ours.b, "the new message names the batch's first id");
    for (const env of envs) assert.deepEqual(contents(env), [["foreign-0", 1], ["mine", "v"]]);
  } finally {
    await close();
  }
});

Deno.test("replicated store: a write never found in the stream gets a 503, never an ack", async () => {
  const { stream, envs, close } = await replicas(800);
  try {
    stream.script = Array(100).fill("lie");
    const started = Date.now();
    await assert.rejects(
      envs[0].transaction(() => envs[0].db("objects").put("mine", "v")),
      (err: unknown) =>
        err instanceof StorageUnavailableError && /deadline passed/.test(err.reason),
    );
    assert.ok(Date.now() - started < 800 * 3, "answered near its deadline, not later");
    stream.script = [];
    await settled(stream, envs);
    const [first, second] = envs.map(contents);
    assert.deepEqual(first, second, "replicas identical");
    assert.ok(!first.some(([k]) => k === "mine"), "the unacknowledged write is nowhere");
  } finally {
    await close();
  }
});

Deno.test("replicated store: a lost reply is acknowledged from the stream; a batch stored twice applies once", async () => {
  const { stream, envs, close } = await replicas(5000);
  try {
    stream.script = ["lost"];
    await envs[0].transaction(() => envs[0].db("objects").put("lost-reply", 1));
    // Blind writes (they read nothing): only the batch id tells the repeat of the first, which
    // lands after the second and must not undo it.
    stream.script = ["twice"];
    await envs[1].transaction(() => envs[1].db("objects").put("k", "old"));
    await envs[0].transaction(() => envs[0].db("objects").put("k", "new"));
    await settled(stream, envs);
    assert.equal(stream.messages.length, 4, "lost reply stored once; the 'old' batch twice");
    for (const env of envs) {
      assert.deepEqual(contents(env), [["k", "new"], ["lost-reply", 1]]);
    }
  } finally {
    await close();
  }
});

Deno.test("replicated store: a publish whose reply never comes does not hold the node's next writes", async () => {
  const { stream, envs, close } = await replicas(10_000);
  try {
    // The first write's publish goes unanswered three times (a second each), then lands.
    stream.hanging = { tries: 3 };
    const order: string[] = [];
    const first = envs[0].transaction(() => envs[0].db("objects").put("first", 1)).then(() =>
      order.push("first")
    );
    await new Promise((r) => setTimeout(r, 20));
    const second = envs[0].transaction(() => envs[0].db("objects").put("second", 2)).then(() =>
      order.push("second")
    );
    await Promise.all([first, second]);
    assert.equal(stream.hanging.tries, 0, "the first write's publish went unanswered three times");
    assert.deepEqual(
      order,
      ["second", "first"],
      "the second write went out beside the first and was acknowledged while the first waited",
    );
    await settled(stream, envs);
    for (const env of envs) assert.deepEqual(contents(env), [["first", 1], ["second", 2]]);
  } finally {
    await close();
  }
});
