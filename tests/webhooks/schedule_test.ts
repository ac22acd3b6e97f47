// The webhook retry schedule (lib/webhooks/sender.ts) on a fake clock over real LMDB: every
// delivery's attempts keep their documented waits whatever the other deliveries to the same
// receiver do. A success ends the receiver's pause but never brings a retry forward; a pause
// holds a due attempt at most the pause's length (10 s at most); a delivery is given up only
// after its 9th attempt, and given-up deliveries are counted per app and receiver URL. The
// times asserted are the fake clock's, never the machine's.
import assert from "node:assert/strict";
import { type OutboxEntry, WebhookOutbox } from "../../lib/webhooks/outbox.ts";
import {
  type Clock,
  MAX_PAUSE_MS,
  OutboxSender,
  RETRY_DELAYS_MS,
} from "../../lib/webhooks/sender.ts";
import { registry, webhookGivenUpCounts } from "../../lib/metrics/mod.ts";
import { tempStore } from "../helpers/temp_store.ts";

interface Item extends OutboxEntry {
  url: string;
}

/** A clock whose time moves only when the test says so. */
class FakeClock implements Clock {
  t: number;
  #timers = new Map<number, { at: number; fn: () => void }>();
  #next = 1;
  constructor(t: number) {
    this.t = t;
  }
  now(): number {
    return this.t;
  }
  setTimer(fn: () => void, ms: number): unknown {
    const id = this.#next++;
    this.#timers.set(id, { at: this.t + Math.max(0, ms), fn });
    return id;
  }
  clearTimer(handle: unknown): void {
    this.#timers.delete(handle as number);
  }
  /** Moves time to the earliest timer and runs it; false when none is set. */
  step(): boolean {
    let first: [number, { at: number; fn: () => void }] | undefined;
    for (const e of this.#timers) if (!first || e[1].at < first[1].at) first = e;
    if (!first) return false;
    this.#timers.delete(first[0]);
    this.t = Math.max(this.t, first[1].at);
    first[1].fn();
    return true;
  }
}

/** Real-time pause: lets attempts and their storage writes finish. */
async function settle(sender: OutboxSender<Item>): Promise<void> {
  const deadline = Date.now() + 30_000;
  do {
    await new Promise((r) => setTimeout(r, 5));
    if (Date.now() > deadline) throw new Error("attempts never finished");
  } while (sender.inFlight > 0);
  await new Promise((r) => setTimeout(r, 5));
}

/**
 * Sends `count` deliveries of app `app` to one receiver answering as `answer(n)` says for its
 * n-th request (from 0), on a fake clock, until the outbox is empty; returns each delivery's
 * due time at staging and its attempts' (fake) times.
 */
async function run(app: string, count: number, answer: (n: number) => boolean) {
  const { env } = tempStore();
  const clock = new FakeClock(Date.now());
  const url = `http://receiver.test/${app}`;
  try {
    const outbox = new WebhookOutbox<Item>(env, "test:outbox", {
      kind: "test",
      laneOf: (d) => d.url,
    });
    const attempts = new Map<string, number[]>();
    const lastOk = new Map<string, boolean>();
    let requests = 0;
    const sender = new OutboxSender(outbox, (d) => {
      const list = attempts.get(d.id) ?? [];
      list.push(clock.now());
      attempts.set(d.id, list);
      const ok = answer(requests++);
      lastOk.set(d.id, ok);
      return Promise.resolve(ok ? "delivered" : "retry");
    }, { clock, receiverOf: (d) => d.url });
    const staged = new Map<string, number>();
    const items = Array.from({ length: count }, (_, i): Item => ({
      id: `d${i}`,
      appId: app,
      url,
      body: `{"i":${i}}`,
      attempt: 0,
    }));
    await outbox.add(items);
    for (const m of outbox.entries()) staged.set(outbox.read(m.seq)!.id, m.dueAt);
    for (let steps = 0;; steps++) {
      assert.ok(steps < 100_000, "the schedule ended");
      await settle(sender);
      if (outbox.entries().length === 0) break;
      assert.ok(clock.step(), "a pending delivery always has a timer set");
    }
    sender.close();
    return { attempts, staged, url, lastOk };
  } finally {
    await env.close();
  }
}

/** Each attempt keeps its wait: never early, late by at most the longest pause. */
function assertOnSchedule(attempts: number[], stagedAt: number, id: string) {
  assert.ok(attempts[0] >= stagedAt, `${id}: first attempt not before it was due`);
  assert.ok(attempts[0] - stagedAt <= MAX_PAUSE_MS, `${id}: first attempt held by a pause only`);
  for (let k = 1; k < attempts.length; k++) {
    const gap = attempts[k] - attempts[k - 1];
    const want = RETRY_DELAYS_MS[k - 1];
    assert.ok(
      gap >= want,
      `${id}: attempt ${k + 1} came ${gap} ms after attempt ${k}, not ${want}`,
    );
    assert.ok(
      gap <= want + MAX_PAUSE_MS,
      `${id}: attempt ${k + 1} came ${gap} ms after attempt ${k}: late by more than a pause`,
    );
  }
}

Deno.test("webhook schedule: a receiver failing every other request never brings a retry forward", async () => {
  const { attempts, staged } = await run("flaky2", 40, (n) => n % 2 === 1);
  assert.equal(attempts.size, 40);
  let retried = 0;
  for (const [id, times] of attempts) {
    assertOnSchedule(times, staged.get(id)!, id);
    if (times.length > 1) retried++;
  }
  assert.ok(retried > 0, "some deliveries were retried");
});

Deno.test("webhook schedule: a receiver failing two requests in three gives nothing up before its 9th attempt", async () => {
  const { attempts, staged, url, lastOk } = await run("flaky3", 60, (n) => n % 3 === 2);
  const total = RETRY_DELAYS_MS.reduce((a, b) => a + b, 0);
  let givenUp = 0;
  for (const [id, times] of attempts) {
    assertOnSchedule(times, staged.get(id)!, id);
    assert.ok(times.length <= RETRY_DELAYS_MS.length + 1, `${id}: at most 9 attempts`);
    if (times.length === RETRY_DELAYS_MS.length + 1) {
      assert.ok(times.at(-1)! - times[0] >= total, `${id}: given up only after the whole schedule`);
      if (!lastOk.get(id)) givenUp++;
    }
  }
  // Deliveries whose 9 attempts all failed are counted given up, per app and URL.
  assert.equal(webhookGivenUpCounts("test", "flaky3").get(url) ?? 0, givenUp);
});

Deno.test("webhook schedule: a receiver always failing gets attempt 2 after 0.5 s (plus at most its pause), 9 attempts, then the delivery is given up and counted", async () => {
  const { attempts, staged, url } = await run("dead", 30, () => false);
  for (const [id, times] of attempts) {
    assertOnSchedule(times, staged.get(id)!, id);
    assert.equal(times.length, RETRY_DELAYS_MS.length + 1, `${id}: 9 attempts`);
  }
  assert.equal(webhookGivenUpCounts("test", "dead").get(url), 30);
  const text = await registry.metrics();
  assert.match(
    text,
    new RegExp(`switchboard_webhook_given_up_total\\{kind="test",app="dead",url="${url}"\\} 30`),
  );
});

Deno.test("webhook schedule: a success ends the pause but leaves a waiting retry at its time", async () => {
  // One delivery fails (its retry is due 0.5 s later); then a new delivery succeeds at once.
  const { env } = tempStore();
  const clock = new FakeClock(Date.now());
  try {
    const outbox = new WebhookOutbox<Item>(env, "test:outbox", {
      kind: "test",
      laneOf: (d) => d.url,
    });
    const times: Record<string, number[]> = {};
    const sender = new OutboxSender(outbox, (d) => {
      (times[d.id] ??= []).push(clock.now());
      return Promise.resolve(d.id === "a" && d.attempt === 0 ? "retry" : "delivered");
    }, { clock });
    const mk = (id: string): Item => ({ id, appId: "x", url: "u", body: "{}", attempt: 0 });
    await outbox.add([mk("a")]);
    while (!times.a) {
      await settle(sender);
      if (!times.a) assert.ok(clock.step());
    }
    await settle(sender);
    // Let the pause (0.1 s) pass, then stage "b": it succeeds before a's retry is due.
    clock.t = times.a[0] + 200;
    await outbox.add([mk("b")]);
    await settle(sender);
    while (!times.b) {
      assert.ok(clock.step());
      await settle(sender);
    }
    assert.equal(times.a.length, 1, "a's retry was not brought forward by b's success");
    while (outbox.entries().length > 0) {
      assert.ok(clock.step());
      await settle(sender);
    }
    assert.equal(times.a.length, 2);
    assert.ok(times.a[1] - times.a[0] >= RETRY_DELAYS_MS[0]);
    sender.close();
  } finally {
    await env.close();
  }
});
