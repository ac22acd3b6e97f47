// Fan-out: one backend trigger stream to many subscribers, against two bare baselines run in
// the same session (Bun native server.publish, npm ws broadcast under node), and the same
// channels subscribed over the Pusher protocol beside the Phoenix path (ratio pusher/phoenix).
// Targets run one after another per round; the two headline scenarios (1 channel x 1k, many
// channels x 10) run in three rounds and show medians, so servers and baselines interleave.
import {
  APP,
  CpuMeter,
  runGenerator,
  type Served,
  startBunPubsub,
  startNatsPeer,
  startSocketIo,
  startSwitchboard,
  startWsBroadcast,
} from "../lib/proc.ts";
import { type BenchContext, type BenchReport, bottleneck, pct, pending } from "../lib/report.ts";
import { round } from "../lib/stats.ts";
import { routeExists } from "./probe.ts";

/** Who sends the triggers: the subscribers' own Bun process (its flow control needs to see the
 * deliveries, which wrk cannot), so `gen cpu` counts triggers and deliveries together. */
const TRIGGER_GENERATOR = "bun (gen/fanout_gen.ts, http1.ts)";

interface GenResult {
  subscribers: number;
  connectSeconds: number;
  perSecond: number;
  p50: number;
  p99: number;
  missing: number;
  httpErrors: number;
  closedDuringRun: number;
  genCpu: number;
  lightP50: number;
  lightP99: number;
  openTriggersPerSecond?: number;
  openP50?: number;
  openP99?: number;
}

type Outcome = (GenResult & { serverCpu: number; machineCpu: number }) | { error: string };

/** The run with the median delivered rate (an error only when every run failed). */
function median(runs: Outcome[]): Outcome {
  const ok = runs.filter((r): r is GenResult & { serverCpu: number; machineCpu: number } =>
    !("error" in r)
  );
  if (ok.length === 0) return runs[0];
  return ok.sort((a, b) => a.perSecond - b.perSecond)[Math.floor(ok.length / 2)];
}

const TARGETS = [
  { name: "switchboard", start: () => startSwitchboard(), kind: "switchboard" as const },
  { name: "switchboard pusher", start: () => startSwitchboard(), kind: "pusher" as const },
  { name: "bun server.publish", start: startBunPubsub, kind: "bare" as const },
  { name: "node ws broadcast", start: startWsBroadcast, kind: "bare" as const },
  { name: "socket.io (node)", start: startSocketIo, kind: "socketio" as const },
  { name: "nats core over ws", start: startNatsPeer, kind: "nats" as const },
];

/** The labels of the repeated scenarios, for the notes. */
function s0(scenarios: { label: string; repeated: boolean }[]): string {
  return scenarios.filter((s) => s.repeated).map((s) => s.label).join(" and ");
}

/** Runs the fan-out scenarios against Switchboard and both baselines. */
export async function fanout(ctx: BenchContext): Promise<BenchReport> {
  // Growth curve: one channel with 100, 1k, 5k and 15k subscribers, and many small channels.
  const oneChannel = ctx.quick ? [100, 1000] : [100, 1000, 5000, 15000];
  const scenarios = [
    ...oneChannel.map((n) => ({
      label: `1 channel x ${n}`,
      channels: 1,
      perChannel: n,
      window: n <= 1000 ? 8 : 4,
      repeated: n === 1000,
    })),
    {
      label: `${ctx.size(1000)} channels x 10`,
      channels: ctx.size(1000),
      perChannel: 10,
      window: 200,
      repeated: true,
    },
  ];
  const rounds = ctx.quick ? 1 : 3;
  const runs: Record<string, Record<string, Outcome[]>> = {};
  let missing = false;
  const peerNotes: string[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const target of TARGETS) {
      const roundScenarios = scenarios.filter((s) => round === 0 || s.repeated);
      let server: Served;
      try {
        server = await target.start();
      } catch (e) {
        // A peer that is not installed (nats-server, node) is reported by name, not fatal.
        for (const s of roundScenarios) {
          ((runs[s.label] ??= {})[target.name] ??= []).push({
            error: `not started: ${String(e).slice(0, 200)}`,
          });
        }
        if (round === 0) {
          peerNotes.push(
            `${target.name} did not start (Debian: apt-get install nats-server; node on PATH): ${
              String(e).slice(0, 160)
            }`,
          );
        }
        continue;
      }
      try {
        if (
          (target.kind === "switchboard" || target.kind === "pusher") &&
          !(await routeExists(server.baseUrl, "POST", `/api/apps/${APP.id}/trigger`, {
            channel: "probe",
            event: "probe",
            data: {},
          }))
        ) {
          missing = true;
          continue;
        }
        for (const s of roundScenarios) {
          ctx.log(`fanout ${s.label} -> ${target.name} (round ${round + 1}/${rounds})`);
          const out = ((runs[s.label] ??= {})[target.name] ??= []);
          const meter = new CpuMeter(server.pid);
          try {
            const r = await runGenerator<GenResult>("bun", "gen/fanout_gen.ts", {
              target: {
                kind: target.kind,
                base: server.baseUrl,
                appKey: APP.key,
                wsPort: server.wsPort,
              },
              channels: s.channels,
              perChannel: s.perChannel,
              seconds: ctx.seconds(6, 1.5),
              warmup: ctx.seconds(1, 0.5),
              window: s.window,
              payloadBytes: 100,
              maxHttp: 32,
              latencySeconds: ctx.seconds(2, 0.5),
              openSeconds: round === 0 ? ctx.seconds(2, 0.5) : 0,
            }, meter.mark);
            out.push({ ...r, serverCpu: meter.share, machineCpu: meter.machine });
          } catch (e) {
            out.push({ error: String(e).slice(0, 300) });
            ctx.log(String(e).slice(0, 1000));
          }
        }
      } finally {
        await server.stop();
      }
    }
  }

  const columns = [
    "scenario",
    "server",
    "runs",
    "delivered/s",
    "p50 ms",
    "p99 ms",
    "light p50",
    "light p99",
    "open-loop p50/p99 @ triggers/s",
    "vs bun",
    "vs ws",
    "vs socket.io",
    "vs nats",
    "vs phoenix",
    "cpu/deliv vs phoenix",
    "server µs/deliv",
    "server cpu",
    "gen cpu",
    "machine",
    "limit",
    "lost",
    "trigger generator",
  ];
  const rows: (string | number | null)[][] = [];
  const data: Record<string, unknown>[] = [];
  const notes: string[] = [];
  for (const s of scenarios) {
    const per: Record<string, Outcome> = Object.fromEntries(
      Object.entries(runs[s.label] ?? {}).map(([k, v]) => [k, median(v)]),
    );
    const count = (n: string) => runs[s.label]?.[n]?.length ?? 0;
    // The open-loop figures come from the first round (the only one that runs that phase).
    const first = (n: string) => runs[s.label]?.[n]?.[0];
    const rate = (
      n: string,
    ) => ("perSecond" in (per[n] ?? {}) ? (per[n] as GenResult).perSecond : NaN);
    for (const t of TARGETS) {
      const r = per[t.name];
      if (!r || "error" in r) {
        rows.push([
          s.label,
          t.name,
          count(t.name),
          "error",
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
        ]);
        data.push({ scenario: s.label, server: t.name, error: r?.error ?? "not run" });
        continue;
      }
      const vsBun = round(r.perSecond / rate("bun server.publish"), 3);
      const vsWs = round(r.perSecond / rate("node ws broadcast"), 3);
      const vsSio = round(r.perSecond / rate("socket.io (node)"), 3);
      const vsNats = round(r.perSecond / rate("nats core over ws"), 3);
      // The Pusher path against the Phoenix path of the same run: throughput, and server CPU
      // per delivered message (how much dearer one Pusher delivery is).
      const phoenix = per["switchboard"];
      const ok = phoenix && !("error" in phoenix);
      const vsPhoenix = t.kind === "pusher" && ok
        ? round(r.perSecond / phoenix.perSecond, 3)
        : null;
      const cpuVsPhoenix = t.kind === "pusher" && ok
        ? round((r.serverCpu / r.perSecond) / (phoenix.serverCpu / phoenix.perSecond), 3)
        : null;
      const sb = t.kind === "switchboard" || t.kind === "pusher";
      const limit = bottleneck(r.genCpu, r.serverCpu, r.machineCpu);
      const lost = r.missing + r.closedDuringRun;
      const o = first(t.name);
      const open = o && !("error" in o) && o.openTriggersPerSecond
        ? `${o.openP50} / ${o.openP99} @ ${Math.round(o.openTriggersPerSecond)}`
        : null;
      rows.push([
        s.label,
        t.name,
        count(t.name),
        r.perSecond,
        r.p50,
        r.p99,
        r.lightP50,
        r.lightP99,
        open,
        sb ? vsBun : null,
        sb ? vsWs : null,
        sb ? vsSio : null,
        sb ? vsNats : null,
        vsPhoenix,
        cpuVsPhoenix,
        round((r.serverCpu / r.perSecond) * 1e6, 2),
        pct(r.serverCpu),
        pct(r.genCpu),
        pct(r.machineCpu),
        limit,
        lost ? `${r.missing} msgs, ${r.closedDuringRun} socks` : "0",
        TRIGGER_GENERATOR,
      ]);
      data.push({
        scenario: s.label,
        server: t.name,
        runs: count(t.name),
        allRunsPerSecond: (runs[s.label]?.[t.name] ?? []).map((
          x,
        ) => ("error" in x ? null : round(x.perSecond))),
        openLoopTriggersPerSecond: o && !("error" in o) && o.openTriggersPerSecond
          ? round(o.openTriggersPerSecond)
          : undefined,
        openLoopP50Ms: o && !("error" in o) ? o.openP50 : undefined,
        openLoopP99Ms: o && !("error" in o) ? o.openP99 : undefined,
        channels: s.channels,
        subscribersPerChannel: s.perChannel,
        window: s.window,
        deliveredPerSecond: round(r.perSecond),
        p50Ms: r.p50,
        p99Ms: r.p99,
        lightP50Ms: r.lightP50,
        lightP99Ms: r.lightP99,
        ratioToBun: sb ? vsBun : undefined,
        ratioToWs: sb ? vsWs : undefined,
        ratioToSocketIo: sb ? vsSio : undefined,
        ratioToNats: sb ? vsNats : undefined,
        ratioToPhoenix: vsPhoenix ?? undefined,
        cpuPerDeliveryVsPhoenix: cpuVsPhoenix ?? undefined,
        serverMicrosecondsPerDelivery: round((r.serverCpu / r.perSecond) * 1e6, 3),
        serverCpu: round(r.serverCpu, 2),
        machineCpu: round(r.machineCpu, 2),
        triggerGenerator: TRIGGER_GENERATOR,
        generatorCpu: round(r.genCpu, 2),
        bottleneck: limit,
        missing: r.missing,
        closedDuringRun: r.closedDuringRun,
        httpErrors: r.httpErrors,
        connectSeconds: round(r.connectSeconds, 2),
      });
      if (limit === "generator") {
        notes.push(
          `${s.label} / ${t.name}: the load generator saturated its core; the server figure is a lower bound.`,
        );
      }
    }
  }
  notes.push(
    `runs: ${
      s0(scenarios)
    } run ${rounds} times, each round every target in turn (medians shown); the other scenarios once. open-loop (first round): triggers on a fixed schedule at half the saturated trigger rate, whatever the replies do, latency from each trigger's intended send time (no coordinated omission).`,
  );
  notes.push(
    "Triggers are HTTP POSTs from the generator process. delivered/s and p50/p99: saturation phase with at most `window` triggers' worth of deliveries outstanding (latency there is mostly queueing: window / throughput). light p50/p99: one trigger outstanding at a time, i.e. the time one fan-out takes.",
  );
  notes.push(...peerNotes);
  notes.push(
    "server µs/deliv: the server process's CPU time (from /proc) per delivered message, so a generator-bound row still compares servers.",
  );
  notes.push(
    "nats core over ws: nats-server's core pub/sub (nothing stored), subscribers over its WebSocket listener, publishes forwarded from the same HTTP route by a Bun bridge; its server cpu is the bridge process's (nats-server's own is not sampled), so compare its rows by throughput and latency.",
  );
  notes.push(
    "switchboard pusher: the same server and trigger stream, subscribers on the Pusher protocol (`/app/{key}`, `pusher:subscribe`); vs phoenix = its delivered/s over the Phoenix row's, cpu/deliv vs phoenix = server CPU per delivered message over the Phoenix row's (same run).",
  );
  notes.push(
    "machine = share of both cores busy (server + generator + kernel loopback work); 'machine' in limit means the 2 cores, not one process, were the limit.",
  );
  if (missing) {
    const p = pending(
      "fanout",
      "Switchboard channel trigger (POST /api/apps/{app_id}/trigger) is not available yet; baselines only",
    );
    return { ...p, columns, rows, data, notes: [...p.notes, ...notes] };
  }
  return { name: "fanout", status: "ok", columns, rows, data, notes };
}
