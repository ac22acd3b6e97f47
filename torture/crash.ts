// Part (b): a crash loop. Writers on an object (increments), a channel (triggers) and a thread
// (chat REST messages); the server is SIGKILLed at a random moment, restarted on the same data
// dir, and every acknowledged write must be there with gap-free positions 1..N.
import type { TestServer } from "../tests/helpers/server.ts";
import { type Budget, type PartResult, rng, sleep, start } from "./common.ts";

const JSON_API = { "content-type": "application/vnd.api+json" };

interface Acked {
  object: Set<number>;
  channel: Set<number>;
  thread: Set<string>;
}

/** Writes until the server dies; records what was acknowledged. */
function writers(server: TestServer, acked: Acked, round: number): Promise<void> {
  const h = server.headers();
  const loop = async (write: () => Promise<void>) => {
    for (let i = 0; i < 100_000; i++) {
      try {
        await write();
      } catch {
        return; // connection refused/reset: the server is gone
      }
    }
  };
  let n = 0;
  return Promise.all([
    ...Array.from({ length: 4 }, () =>
      loop(async () => {
        const r = await fetch(`${server.baseUrl}/api/v1/objects/app-1/crash/counter/increment`, {
          method: "POST",
          headers: h,
          body: '{"slot":"n"}',
        });
        if (r.status === 200) acked.object.add(((await r.json()) as { log_id: number }).log_id);
        else await r.body?.cancel();
      })),
    ...Array.from({ length: 2 }, () =>
      loop(async () => {
        const r = await fetch(`${server.baseUrl}/api/apps/app-1/trigger`, {
          method: "POST",
          headers: h,
          body: '{"channel":"crash","event":"e","data":1}',
        });
        if (r.status === 200) acked.channel.add(((await r.json()) as { serial: number }).serial);
        else await r.body?.cancel();
      })),
    ...Array.from({ length: 2 }, () =>
      loop(async () => {
        const id = `r${round}-${n++}`;
        const body = JSON.stringify({
          data: { type: "messages", id, attributes: { role: "user", content: id } },
        });
        const r = await fetch(`${server.baseUrl}/api/chat/threads/crash/messages`, {
          method: "POST",
          headers: { ...h, ...JSON_API },
          body,
        });
        await r.body?.cancel();
        if (r.status === 201) acked.thread.add(id);
      })),
  ]).then(() => {});
}

/** Checks the acknowledged writes and contiguity after a restart; returns failures. */
async function verify(
  server: TestServer,
  acked: Acked,
): Promise<{ failures: string[]; checked: number }> {
  const failures: string[] = [];
  const h = server.headers();
  const log =
    await (await fetch(`${server.baseUrl}/api/v1/objects/app-1/crash/counter/log`, { headers: h }))
      .json() as { items: { log_id: number; value: number }[] };
  const ids = log.items.map((i) => i.log_id);
  if (ids.some((id, i) => id !== i + 1)) failures.push("object log has a gap or duplicate");
  if (log.items.some((it) => it.value !== it.log_id)) {
    failures.push("object increments out of step with log_id");
  }
  for (const id of acked.object) if (id > ids.length) failures.push(`object write ${id} lost`);
  const hist =
    await (await fetch(`${server.baseUrl}/api/apps/app-1/channels/crash/history?limit=1000`, {
      headers: h,
    })).json() as { serial: number };
  for (const s of acked.channel) if (s > hist.serial) failures.push(`channel event ${s} lost`);
  const seen = new Set<string>();
  let url = `${server.baseUrl}/api/chat/threads/crash/messages?page[size]=100`;
  for (let pages = 0; pages < 10_000; pages++) {
    const page = await (await fetch(url, { headers: h })).json() as {
      data: { id: string }[];
      links?: { next?: string | null };
    };
    for (const m of page.data ?? []) seen.add(m.id);
    if (!page.links?.next) break;
    url = page.links.next.startsWith("http") ? page.links.next : server.baseUrl + page.links.next;
  }
  for (const id of acked.thread) if (!seen.has(id)) failures.push(`chat message ${id} lost`);
  return {
    failures: failures.slice(0, 20),
    checked: acked.object.size + acked.channel.size + acked.thread.size,
  };
}

/** Runs kill/restart rounds for the budget. */
export async function crashLoop(budget: Budget): Promise<PartResult> {
  const random = rng(budget.seed);
  const counts = { kills: 0, writesChecked: 0, lost: 0 };
  const failures: string[] = [];
  const acked: Acked = { object: new Set(), channel: new Set(), thread: new Set() };
  let server = await start();
  const dataDir = server.dataDir;
  const deadline = Date.now() + budget.ms;
  try {
    await fetch(`${server.baseUrl}/api/chat/threads`, {
      method: "POST",
      headers: { ...server.headers(), ...JSON_API },
      body: JSON.stringify({
        data: { type: "threads", id: "crash", attributes: { title: "crash" } },
      }),
    }).then((r) => r.body?.cancel());
    for (let round = 0; Date.now() < deadline; round++) {
      const done = writers(server, acked, round);
      await sleep(100 + random() * 500);
      await server.kill();
      counts.kills++;
      await done;
      server = await start({ dataDir });
      const v = await verify(server, acked);
      counts.writesChecked = v.checked;
      counts.lost += v.failures.filter((f) => f.includes("lost")).length;
      failures.push(...v.failures);
      if (failures.length) break;
    }
    if (counts.writesChecked === 0) {
      failures.push("no write was acknowledged: the check would be vacuous");
    }
  } finally {
    await server.stop();
  }
  return { name: "crash loop", counts, failures };
}
