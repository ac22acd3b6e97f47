// The NATS link's failover (lib/cluster/link.ts): a nats-server frozen with SIGSTOP (it keeps
// its TCP connections open but answers nothing, as a partitioned or hung server does) is left
// for another server from the list, both when writes notice it (a publish without a reply makes
// the link ping and move when the ping goes unanswered) and when the link is idle (client pings).
// Bounds are generous (the shared machine is slow); the assertions are on behaviour: the
// link ends on another server and appends are stored again there.
import assert from "node:assert/strict";
import { ClusterLink } from "../../lib/cluster/link.ts";
import { startNatsCluster } from "./nats_servers.ts";
import { until } from "./cluster.ts";

/** The index (in `urls`) of the server `link` is connected to. */
function serverIndex(link: ClusterLink, urls: string[]): number {
  const now = link.nc.getServer();
  return urls.findIndex((u) => u.endsWith(now.replace(/^.*:\/\//, "").replace(/^localhost/, "127.0.0.1")));
}

for (const mode of ["publishing", "idle"] as const) {
  Deno.test(`cluster link: a frozen nats-server is left for another one (${mode})`, async () => {
    const nats = await startNatsCluster(3);
    let link: ClusterLink | undefined;
    let frozen = -1;
    try {
      link = await ClusterLink.open(nats.urls, `failover-${mode}`);
      const first = await link.append(new TextEncoder().encode("before"), crypto.randomUUID(), 10_000);
      assert.equal(first.kind, "stored", JSON.stringify(first));
      frozen = serverIndex(link, nats.urls);
      assert.ok(frozen >= 0, `connected to one of the servers (${link.nc.getServer()})`);
      nats.signal(frozen, "SIGSTOP");
      const outcomes: string[] = [];
      let stored = false;
      await until("the link moves to another server and appends are stored again", async () => {
        // Idle: only client pings find the frozen server; publishing: each append that gets no
        // reply makes the link suspect it.
        if (mode === "publishing" || serverIndex(link!, nats.urls) !== frozen) {
          const r = await link!.append(new TextEncoder().encode("during"), crypto.randomUUID(), 1000);
          outcomes.push(r.kind);
          stored = r.kind === "stored" && serverIndex(link!, nats.urls) !== frozen;
        }
        return stored;
      }, 30_000);
      assert.notEqual(serverIndex(link, nats.urls), frozen, "on another server");
      assert.ok(link.connected(), "connected");
      if (mode === "publishing") assert.ok(outcomes.includes("unknown"), `an append went unanswered first: ${outcomes}`);
    } finally {
      if (frozen >= 0) nats.signal(frozen, "SIGCONT");
      await link?.close().catch(() => {});
      await nats.stop();
    }
  });
}
