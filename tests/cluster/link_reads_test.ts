// The NATS link's reads of the log (lib/cluster/link.ts): a read is answered by the stream's leader
// even when the server the link is on answers first with "JetStream system temporarily unavailable"
// (10008), as nats-server 2.9.10 does for a few seconds when it lost sight of JetStream's meta
// leader (after a frozen server resumed, docs/cluster.md, "nats-server settings production needs")
// while the stream's leader, on another server, answers correctly. Here a plain client on the
// link's server plays that server's part: it answers every read and every stream info with 10008 at
// once, and the stream's leader is frozen for a moment around each read, so its answer comes
// second.
import assert from "node:assert/strict";
import { connect } from "nats";
import { ClusterLink } from "../../lib/cluster/link.ts";
import { startNatsCluster } from "./nats_servers.ts";

const UNAVAILABLE = JSON.stringify({
  type: "io.nats.jetstream.api.v1.stream_msg_get_response",
  error: { code: 503, err_code: 10008, description: "JetStream system temporarily unavailable" },
});

Deno.test("cluster link: reads take the stream leader's answer over a 10008 answered first", async () => {
  const nats = await startNatsCluster(3);
  const links: ClusterLink[] = [];
  const others: { close(): Promise<void> }[] = [];
  try {
    // A link on a server that does not lead the stream (the leader's answer crosses a route,
    // the 10008 does not: it comes first).
    let link: ClusterLink | undefined;
    let server = "";
    let leaderIndex = -1;
    for (let i = 0; i < 40 && !link; i++) {
      const l = await ClusterLink.open(nats.urls, `reads-${i}`);
      links.push(l);
      const leader = (await l.jsm.streams.info("SWITCHBOARD")).cluster?.leader;
      const here = l.nc.info?.server_name;
      if (leader && here && leader !== here) {
        link = l;
        leaderIndex = Number(leader.replace(/^n/, "")) - 1;
        server = nats.urls.find((u) => u.endsWith(`:${l.nc.info!.port}`)) ?? "";
      }
    }
    assert.ok(link && server, "a link on a server that does not lead the stream");
    const stored: number[] = [];
    for (const text of ["one", "two", "three"]) {
      const r = await link.append(new TextEncoder().encode(text), crypto.randomUUID(), 10_000);
      assert.equal(r.kind, "stored", JSON.stringify(r));
      if (r.kind === "stored") stored.push(r.seq);
    }
    const meddler = await connect({
      servers: [server],
      noRandomize: true,
      ignoreClusterUpdates: true,
    });
    others.push(meddler);
    for (
      const subject of ["$JS.API.STREAM.MSG.GET.SWITCHBOARD", "$JS.API.STREAM.INFO.SWITCHBOARD"]
    ) {
      meddler.subscribe(subject, {
        callback: (_err, m) => m.respond(new TextEncoder().encode(UNAVAILABLE)),
      });
    }
    await meddler.flush();
    const plain = await connect({
      servers: [server],
      noRandomize: true,
      ignoreClusterUpdates: true,
    });
    others.push(plain);
    const jsm = await plain.jetstreamManager({ checkAPI: false });
    // The leader frozen 200 ms: the 10008 comes first, the leader's answer once it resumes.
    const leaderLate = async (read: () => Promise<unknown>): Promise<unknown> => {
      nats.signal(leaderIndex, "SIGSTOP");
      const resumed = new Promise((r) => setTimeout(r, 200)).then(() =>
        nats.signal(leaderIndex, "SIGCONT")
      );
      try {
        return await read();
      } finally {
        await resumed;
      }
    };
    // Control: a plain nats.js client on the same server takes the first answer, the 10008
    // (nats.js reports it as a 503).
    let control = "ok";
    await leaderLate(async () => {
      try {
        await jsm.streams.getMessage("SWITCHBOARD", { seq: stored[0] });
      } catch (err) {
        control = String(err);
      }
    });
    assert.match(control, /503/, "a plain client gets the 10008");
    // The link reads every position, and the log's bounds, all the same.
    for (const [j, seq] of stored.entries()) {
      const data = await leaderLate(() => link!.read(seq)) as Uint8Array | null;
      assert.equal(new TextDecoder().decode(data!), ["one", "two", "three"][j]);
    }
    const { first, last } = await leaderLate(() => link!.bounds()) as {
      first: number;
      last: number;
    };
    assert.deepEqual({ first, last }, { first: 1, last: stored[2] });
    assert.equal(await link.read(stored[2] + 1), null, "a position not stored yet reads as none");
  } finally {
    for (let i = 0; i < 3; i++) nats.signal(i, "SIGCONT");
    for (const o of others) await o.close().catch(() => {});
    for (const l of links) await l.close().catch(() => {});
    await nats.stop();
  }
});
