// The NATS link's failover (lib/cluster/link.ts): a nats-server frozen with SIGSTOP (it keeps
// its TCP connections open but answers nothing, as a hung server does), or cut off by a network
// partition (its own network namespace, link down; where the machine allows it, else frozen),
// is left for another server from the list, both when writes are waiting on it and when the
// link is idle (the link's pings), and the first server dialled after the move is another one
// (nats.js would otherwise redial the server just left first). Bounds are generous (the shared
// machine is slow); the assertions are on behaviour: the link ends on another server, never
// dialled the dead one, and appends are stored again there. A server silent while a ping waits
// (no message either) is left after 1.25 s, one that still delivers after 2.5 s.
import assert from "node:assert/strict";
import { DebugEvents, Events } from "nats";
import { ClusterLink, silentFor } from "../../lib/cluster/link.ts";
import { makePartition, type NatsCluster, startNatsCluster } from "./nats_servers.ts";
import { until } from "./cluster.ts";

/** The index (in `urls`) of the server `link` is connected to. */
function serverIndex(link: ClusterLink, urls: string[]): number {
  const now = link.nc.getServer();
  return urls.findIndex((u) =>
    u.endsWith(now.replace(/^.*:\/\//, "").replace(/^localhost/, "127.0.0.1"))
  );
}

/** Opens links until one is on server `want` (nats.js picks a random one); closes the others. */
async function linkOn(nats: NatsCluster, want: number, name: string): Promise<ClusterLink> {
  for (let i = 0; i < 40; i++) {
    const link = await ClusterLink.open(nats.urls, `${name}-${i}`);
    if (serverIndex(link, nats.urls) === want) return link;
    await link.close();
  }
  throw new Error(`no link landed on server ${want + 1} in 40 tries`);
}

type Fault = "frozen" | "partitioned";

async function leftForAnother(fault: Fault, mode: "publishing" | "idle") {
  const partition = fault === "partitioned" ? makePartition() : undefined;
  if (typeof partition === "string") {
    console.log(`network partition not possible here (${partition}); freezing instead`);
  }
  const cut = partition && typeof partition !== "string" ? partition : undefined;
  const nats = await startNatsCluster(3, cut);
  let link: ClusterLink | undefined;
  let dead = -1;
  try {
    // The partition's namespace holds the last server: the link must be on it.
    link = cut
      ? await linkOn(nats, 2, `failover-${mode}`)
      : await ClusterLink.open(nats.urls, `failover-${mode}`);
    const first = await link.append(
      new TextEncoder().encode("before"),
      crypto.randomUUID(),
      10_000,
    );
    assert.equal(first.kind, "stored", JSON.stringify(first));
    dead = serverIndex(link, nats.urls);
    assert.ok(dead >= 0, `connected to one of the servers (${link.nc.getServer()})`);
    const deadServer = link.nc.getServer();
    // Every server dialled from the loss of the connection to the reconnect.
    const dialled: string[] = [];
    let reconnected = false;
    void (async () => {
      for await (const s of link!.nc.status()) {
        if (s.type === DebugEvents.Reconnecting && !reconnected) dialled.push(String(s.data));
        if (s.type === Events.Reconnect) reconnected = true;
      }
    })();
    if (cut) cut.cut();
    else nats.signal(dead, "SIGSTOP");
    const outcomes: string[] = [];
    let stored = false;
    await until("the link moves to another server and appends are stored again", async () => {
      // Idle: only the link's pings find the dead server; publishing: appends wait on it too.
      if (mode === "publishing" || serverIndex(link!, nats.urls) !== dead) {
        const r = await link!.append(new TextEncoder().encode("during"), crypto.randomUUID(), 1000);
        outcomes.push(r.kind);
        stored = r.kind === "stored" && serverIndex(link!, nats.urls) !== dead;
      }
      return stored;
    }, 30_000);
    assert.notEqual(serverIndex(link, nats.urls), dead, "on another server");
    assert.ok(link.connected(), "connected");
    assert.ok(dialled.length > 0, "the move was seen");
    assert.ok(
      !dialled.some((d) => d.includes(deadServer)),
      `the dead server was not dialled again: ${dialled}`,
    );
    if (mode === "publishing") {
      assert.ok(outcomes.includes("unknown"), `an append went unanswered first: ${outcomes}`);
    }
    // Nothing came from the dead server while a ping waited: it is left as silent, before a
    // ping has waited the 2.5 s a server that still delivers gets.
    assert.equal(link.lastMove?.why, "silent", `left as silent: ${JSON.stringify(link.lastMove)}`);
    assert.ok(
      link.lastMove!.pingWaitedMs < 2500,
      `left before a ping waited 2.5 s: ${JSON.stringify(link.lastMove)}`,
    );
  } finally {
    if (dead >= 0 && !cut) nats.signal(dead, "SIGCONT");
    await link?.close().catch(() => {});
    await nats.stop();
  }
}

for (const mode of ["publishing", "idle"] as const) {
  Deno.test(`cluster link: a frozen nats-server is left for another one (${mode})`, () =>
    leftForAnother("frozen", mode));
}
Deno.test("cluster link: a partitioned nats-server is left for another one (publishing)", () =>
  leftForAnother("partitioned", "publishing"));

Deno.test("cluster link: a server that still delivers messages while a ping waits is given 2.5 s, a silent one 1.25 s", () => {
  // A loaded healthy server (the stream's leader while a replica catches up) answered pings in
  // more than 1.5 s but kept delivering: it is not left before a ping waited 2.5 s.
  assert.equal(silentFor(2000, 100), undefined);
  assert.equal(silentFor(2600, 100), "unanswered");
  // A frozen or cut-off server delivers nothing at all.
  assert.equal(silentFor(1400, 1400), "silent");
  assert.equal(silentFor(1000, 5000), undefined, "a ping that has not waited long is no evidence");
});
