// The NATS link on a server that answers pings but never answers reads of the log (its
// JetStream drops them, as a stream without a working leader does): the replicated store only
// reports each failed read (`ClusterLink#readFailed`, with the last position it knows exists),
// and the link decides. While the log grows meanwhile (other nodes' writes get in) it moves to
// another server within seconds; while the log does not grow (JetStream electing, every server
// failing alike) it stays. Two plain nats-servers, each with a stand-in JetStream
// (`fake_jetstream.ts`) that drops every request.
import assert from "node:assert/strict";
import { ClusterLink } from "../../lib/cluster/link.ts";
import { type FakeJetStream, fakeOn, plainServer } from "./fake_jetstream.ts";

/** Reads position 1 and reports each failure for `ms`, the known tail from `tail(i)`; the
 * servers the link was on meanwhile. */
async function readFailing(link: ClusterLink, ms: number, tail: (i: number) => number) {
  const on = new Set<string>();
  for (let i = 0, end = Date.now() + ms; Date.now() < end; i++) {
    on.add(link.nc.getServer());
    const err = await link.read(1).then(() => undefined, (e) => e);
    assert.ok(err, "the read fails");
    link.readFailed(err, tail(i));
    on.add(link.nc.getServer());
  }
  return on;
}

async function onDroppingServers(fn: (link: ClusterLink, urls: string[]) => Promise<void>) {
  const servers = [await plainServer(), await plainServer()];
  const urls = servers.map((s) => s.url);
  const fakes: FakeJetStream[] = [];
  let link: ClusterLink | undefined;
  try {
    for (const s of servers) fakes.push(await fakeOn(s.url));
    link = await ClusterLink.open(urls, "reads-failing", 10_000);
    for (const f of fakes) f.mode = "electing";
    await fn(link, urls);
  } finally {
    await link?.close().catch(() => {});
    for (const f of fakes) await f.nc.close().catch(() => {});
    for (const s of servers) await s.stop();
  }
}

Deno.test("cluster link: reads failing while the log grows move the link to another server", async () => {
  await onDroppingServers(async (link) => {
    const first = link.nc.getServer();
    const on = await readFailing(link, 20_000, (i) => 10 + i);
    assert.ok(on.size > 1, `left ${first} (on ${[...on].join(", ")})`);
  });
});

Deno.test("cluster link: reads failing while the log does not grow keep the link where it is", async () => {
  await onDroppingServers(async (link) => {
    const first = link.nc.getServer();
    const on = await readFailing(link, 10_000, () => 10);
    assert.deepEqual([...on], [first], "stayed on its server");
  });
});
