// The NATS link on a server that refuses JetStream requests (lib/cluster/link.ts): with
// nats-server 2.9.10 a server that lost sight of JetStream's meta leader answers every API
// request with "JetStream system temporarily unavailable" (10008) for seconds, while the
// stream's leader serves the clients of another server. The link then asks the other servers
// from `--nats` and moves to one that answers; when none does, it stays. Two plain nats-servers,
// each with a stand-in JetStream (`fake_jetstream.ts`): one refuses, the other answers (or
// refuses too).
import assert from "node:assert/strict";
import { ClusterLink } from "../../lib/cluster/link.ts";
import { type FakeJetStream, fakeOn, plainServer } from "./fake_jetstream.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const enc = (s: string) => new TextEncoder().encode(s);

/** Two servers, a stand-in JetStream on each (both answering), and a link on the first. */
async function withTwo(
  fn: (link: ClusterLink, fakes: FakeJetStream[], urls: string[]) => Promise<void>,
) {
  const servers = [await plainServer(), await plainServer()];
  const urls = servers.map((s) => s.url);
  const fakes: FakeJetStream[] = [];
  const links: ClusterLink[] = [];
  try {
    for (const s of servers) fakes.push(await fakeOn(s.url));
    // nats.js picks the first server at random: open links until one is on the first server.
    let link: ClusterLink | undefined;
    for (let i = 0; i < 40 && !link; i++) {
      const l = await ClusterLink.open(urls, `seek-${i}`, 10_000);
      links.push(l);
      if (urls[0].endsWith(l.nc.getServer())) link = l;
    }
    assert.ok(link, "a link on the first server");
    // The same message stored on both stand-ins (one stream, as JetStream's replicas hold it).
    for (const f of fakes) f.mode = "led";
    assert.equal((await link.append(enc("one"), "m-1", 2000)).kind, "stored");
    await fn(link, fakes, urls);
  } finally {
    for (const l of links) await l.close().catch(() => {});
    for (const f of fakes) await f.nc.close().catch(() => {});
    for (const s of servers) await s.stop();
  }
}

Deno.test("cluster link: a server refusing JetStream requests (10008) is left for one that answers", async () => {
  await withTwo(async (link, fakes, urls) => {
    fakes[0].mode = "refusing";
    // The second server's stand-in holds the log too (a replica): give it the same message.
    fakes[1].mode = "led";
    const side = await ClusterLink.open([urls[1]], "seek-side", 10_000);
    try {
      assert.equal((await side.append(enc("one"), "m-1", 2000)).kind, "stored");
    } finally {
      await side.close();
    }
    const outcomes: string[] = [];
    let read: string | undefined;
    for (let i = 0; i < 8 && read === undefined; i++) {
      try {
        const data = await link.read(1);
        read = data ? new TextDecoder().decode(data) : "none";
      } catch (err) {
        outcomes.push(String(err));
        await sleep(250);
      }
    }
    // The first read is refused, or ends with the connection it was sent on.
    assert.match(outcomes[0] ?? "", /10008|connection lost/, "the first read fails");
    assert.equal(read, "one", `read once moved (${outcomes.length} refused)`);
    assert.ok(
      urls[1].endsWith(link.nc.getServer()),
      `on the server that answers (${link.nc.getServer()})`,
    );
  });
});

Deno.test("cluster link: when every server refuses JetStream requests, the link stays where it is", async () => {
  await withTwo(async (link, fakes, urls) => {
    for (const f of fakes) f.mode = "refusing";
    for (let i = 0; i < 4; i++) {
      await assert.rejects(() => link.read(1), /10008/);
      await sleep(300);
    }
    assert.ok(
      urls[0].endsWith(link.nc.getServer()),
      `still on the first server (${link.nc.getServer()})`,
    );
    for (const f of fakes) f.mode = "led";
    assert.ok(await link.read(1), "reads again where it is once JetStream answers");
  });
});
