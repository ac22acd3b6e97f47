// Start: process spawn to the first 200 from /healthz (cold: fresh data dir every time) and
// idle memory (VmRSS one second after ready, no sockets). Beside it the container image
// (SWITCHBOARD_IMAGE, default localhost/switchboard:latest, run with podman): `podman run`
// to the first 200 from /readyz (fresh volume every time), its idle memory and its size. The
// image row is left out, with the reason printed, when podman or the image is missing.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { APP, ROOT, rssBytes, serverCommand } from "../lib/proc.ts";
import type { BenchContext, BenchReport } from "../lib/report.ts";
import { percentile, round } from "../lib/stats.ts";

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

async function once(): Promise<{ readyMs: number; rss: number }> {
  const dir = mkdtempSync(join(tmpdir(), "sb-bench-start-"));
  const appsFile = join(dir, "apps.json");
  writeFileSync(appsFile, JSON.stringify({ apps: [APP] }));
  const port = freePort();
  const { cmd, args } = serverCommand();
  const t0 = performance.now();
  const child = spawn(cmd, [
    ...args,
    "--port",
    String(port),
    "--host",
    "127.0.0.1",
    "--data-dir",
    join(dir, "data"),
    "--apps",
    appsFile,
  ], { cwd: ROOT, stdio: "ignore" });
  const exited = new Promise<void>((r) => child.on("exit", () => r()));
  child.on("error", () => {});
  try {
    let readyMs = NaN;
    while (performance.now() - t0 < 30_000) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`);
        await res.arrayBuffer();
        if (res.status === 200) {
          readyMs = performance.now() - t0;
          break;
        }
      } catch { /* not listening yet */ }
      await new Promise((r) => setTimeout(r, 2));
    }
    if (Number.isNaN(readyMs)) throw new Error("server did not become ready within 30 s");
    await new Promise((r) => setTimeout(r, 1000));
    return { readyMs, rss: rssBytes(child.pid!) };
  } finally {
    child.kill("SIGTERM");
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Polls `url` every 2 ms until it answers 200; ms since `t0`, or NaN after 60 s. */
async function readyAfter(url: string, t0: number): Promise<number> {
  while (performance.now() - t0 < 60_000) {
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === 200) return performance.now() - t0;
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 2));
  }
  return NaN;
}

/** The container image to measure beside the binary. */
const IMAGE = Deno.env.get("SWITCHBOARD_IMAGE") ?? "localhost/switchboard:latest";
/** The image's runtime base (the Dockerfile's second FROM). */
const BASE = "docker.io/library/debian:bookworm-slim";

/** Runs podman with `args`; its stdout, trimmed. Throws with podman's stderr on failure. */
function podman(args: string[]): string {
  return execFileSync("podman", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
    .trim();
}

/** Why the image cannot be measured here (podman or the image missing), or null. */
function imageSkipReason(): string | null {
  try {
    podman(["--version"]);
  } catch {
    return "podman is not installed";
  }
  try {
    podman(["image", "exists", IMAGE]);
  } catch {
    return `no image ${IMAGE} (build it: podman build --format docker -t switchboard .)`;
  }
  return null;
}

/** One cold start of the image: `podman run` to /readyz 200, RSS of its process 1 s later. */
async function onceImage(): Promise<{ readyMs: number; rss: number }> {
  const dir = mkdtempSync(join(tmpdir(), "sb-bench-image-"));
  const appsFile = join(dir, "apps.json");
  writeFileSync(appsFile, JSON.stringify({ apps: [APP] }), { mode: 0o644 });
  const port = freePort();
  const name = `sb-bench-start-${Deno.pid}-${port}`;
  const t0 = performance.now();
  try {
    // --rm also removes the fresh anonymous volume made for /data.
    podman([
      "run",
      "-d",
      "--rm",
      "--name",
      name,
      "-p",
      `127.0.0.1:${port}:4000`,
      "-v",
      `${appsFile}:/etc/switchboard/apps.json:ro`,
      "-e",
      "APPS_FILE=/etc/switchboard/apps.json",
      IMAGE,
    ]);
    const readyMs = await readyAfter(`http://127.0.0.1:${port}/readyz`, t0);
    if (Number.isNaN(readyMs)) throw new Error(`image ${IMAGE} was not ready within 60 s`);
    await new Promise((r) => setTimeout(r, 1000));
    const pid = Number(podman(["inspect", "--format", "{{.State.Pid}}", name]));
    return { readyMs, rss: rssBytes(pid) };
  } finally {
    try {
      podman(["stop", "-t", "30", name]);
    } catch { /* already gone */ }
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The image's row: `rounds` cold starts with podman, its size and its base's. */
async function imageRow(rounds: number) {
  const imageRuns = [];
  for (let i = 0; i < rounds; i++) imageRuns.push(await onceImage());
  const sizeMb = Number(podman(["image", "inspect", "--format", "{{.Size}}", IMAGE])) / 1e6;
  const image = summarize(`image ${IMAGE} (podman)`, imageRuns, sizeMb);
  let base = "";
  try {
    base = `, of which its base debian:bookworm-slim ${
      round(Number(podman(["image", "inspect", "--format", "{{.Size}}", BASE])) / 1e6, 1)
    } MB`;
  } catch { /* base image not on this machine */ }
  return {
    row: image.row,
    data: { ...image.data, mode: "image" },
    note:
      `image: \`podman run -d --rm -p\` to first 200 from GET /readyz, polled every 2 ms (includes podman creating the container and its fresh /data volume); RSS of the container's process 1 s after ready; size: podman's image size${base}.`,
  };
}

/** A table row and its data from `rounds` cold starts. */
function summarize(
  label: string,
  runs: { readyMs: number; rss: number }[],
  sizeMb: number | null,
): { row: (string | number | null)[]; data: Record<string, unknown> } {
  const ready = runs.map((r) => r.readyMs);
  const rss = runs.map((r) => r.rss / 2 ** 20);
  const size = sizeMb === null ? null : round(sizeMb, 1);
  return {
    row: [
      label,
      runs.length,
      round(percentile(ready, 50), 1),
      round(Math.min(...ready), 1),
      round(percentile(rss, 50), 1),
      size ?? "-",
    ],
    data: {
      server: label,
      runs: runs.length,
      readyMsMedian: round(percentile(ready, 50), 1),
      readyMsMin: round(Math.min(...ready), 1),
      idleRssMbMedian: round(percentile(rss, 50), 1),
      sizeMb: size,
      readyMs: ready.map((x) => round(x, 1)),
    },
  };
}

/** Measures cold start to ready, idle memory and size of the server under test and of the
 * container image. */
export async function start(ctx: BenchContext): Promise<BenchReport> {
  const rounds = ctx.quick ? 2 : 5;
  const runs = [];
  for (let i = 0; i < rounds; i++) runs.push(await once());
  const { cmd, label } = serverCommand();
  const bare = summarize(label, runs, ctx.mode === "binary" ? statSync(cmd).size / 1e6 : null);
  const rows = [bare.row];
  const data: Record<string, unknown>[] = [{ ...bare.data, mode: ctx.mode }];
  const notes = [
    "spawn to first 200 from GET /healthz, polled every 2 ms; fresh data dir each run (creates the LMDB environment); RSS 1 s after ready with no sockets; size: the binary's file (MB = 10^6 bytes).",
  ];
  const skip = imageSkipReason();
  try {
    if (skip) throw new Error(skip);
    const image = await imageRow(rounds);
    rows.push(image.row);
    data.push(image.data);
    notes.push(image.note);
  } catch (err) {
    // podman or the image missing, or a podman that cannot run containers here (one that needs
    // runc: set CONTAINERS_CONF as .ci/container does): the row is left out with its reason.
    const reason = String((err as Error).message ?? err).split("\n")[0];
    notes.push(`image row skipped: ${reason}.`);
    ctx.log(`image row skipped: ${reason}`);
  }
  return {
    name: "start",
    status: "ok",
    columns: [
      "server",
      "runs",
      "ready ms (median)",
      "ready ms (min)",
      "idle RSS MB (median)",
      "size MB",
    ],
    rows,
    data,
    notes,
  };
}
