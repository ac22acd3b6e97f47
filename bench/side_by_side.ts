// Side by side: runs `bench/run.ts` against two binaries in alternation (A B, B A, A B, ...),
// so both see the same machine state, and prints one table of the hot paths' headline figures
// (fan-out, durable writes, replay, token streaming), the median of the rounds for each binary.
//
//   npx deno run -A bench/side_by_side.ts A=/path/to/binary B=/path/to/other [ROUNDS=3]
//   (BENCH_ONLY and BENCH_QUICK are passed on; default: fanout,writes,replay,tokens, quick)
//   ... FROM=<dir>: only prints the table again from the runs kept in <dir>
import { copyFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const args = Object.fromEntries(Deno.args.map((a) => a.split("=", 2) as [string, string]));
const bins = Object.entries(args).filter(([k]) => k !== "ROUNDS" && k !== "FROM");
if (bins.length !== 2) {
  console.error("usage: deno run -A bench/side_by_side.ts A=<binary> B=<binary> [ROUNDS=3]");
  Deno.exit(2);
}
const rounds = Number(args.ROUNDS ?? 3);
const only = Deno.env.get("BENCH_ONLY") ?? "fanout,writes,replay,tokens";
const quick = Deno.env.get("BENCH_QUICK") ?? "1";
const root = new URL("..", import.meta.url).pathname;
const out = args.FROM ?? mkdtempSync(join(tmpdir(), "sb-side-"));

type Row = Record<string, unknown>;
const results = new Map<string, Row[][]>(bins.map(([name]) => [name, []]));

for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? bins : [...bins].reverse();
  for (const [name, bin] of order) {
    const file = join(out, `${name}-${r + 1}.json`);
    if (args.FROM) {
      results.get(name)!.push(rowsOf(file));
      continue;
    }
    console.log(`round ${r + 1}: ${name} (${bin})`);
    const run = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "bench/run.ts"],
      cwd: root,
      env: { SWITCHBOARD_BIN: bin, BENCH_ONLY: only, BENCH_QUICK: quick },
      stdout: "piped",
      stderr: "piped",
    });
    const { code, stdout, stderr } = await run.output();
    const log = join(out, `${name}-${r + 1}.log`);
    await Deno.writeFile(log, new Uint8Array([...stdout, ...stderr]));
    if (code !== 0) console.log(`  exited ${code}, see ${log}`);
    copyFileSync(join(root, "bench/results/latest.json"), file);
    results.get(name)!.push(rowsOf(file));
  }
}

/** Every result row of one run's JSON, tagged with its benchmark. */
function rowsOf(file: string): Row[] {
  const json = JSON.parse(Deno.readTextFileSync(file));
  const rows: Row[] = [];
  for (const [bench, b] of Object.entries(json.benchmarks as Record<string, { results: Row[] }>)) {
    for (const row of b.results) rows.push({ bench, ...row });
  }
  return rows;
}

/** The headline figure of each row kept: label -> value (higher is better unless noted). */
function headlines(rows: Row[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const row of rows) {
    const server = String(row.server ?? row.op ?? row.product ?? "");
    if (row.bench === "fanout" && (server === "switchboard" || server === "switchboard pusher")) {
      m.set(`fanout ${row.scenario} (${server}) deliveries/s`, Number(row.deliveredPerSecond));
      m.set(`fanout ${row.scenario} (${server}) light p50 ms`, Number(row.lightP50Ms));
      m.set(
        `fanout ${row.scenario} (${server}) server µs/delivery`,
        Number(row.serverMicrosecondsPerDelivery),
      );
    } else if (row.bench === "writes" && (server === "set" || server === "increment")) {
      const label = `writes ${server}, ${row.objects} obj x ${row.writers} writers`;
      m.set(`${label} writes/s`, Number(row.writesPerSecond));
      // The server's CPU per acknowledged write (all its threads): hardly moved by other load.
      if (row.serverCpu !== undefined) {
        m.set(
          `${label} server µs/write`,
          (Number(row.serverCpu) * 1e6) / Number(row.writesPerSecond),
        );
      }
    } else if (row.bench === "replay" && /^(durable object|channel)/.test(server)) {
      m.set(`replay ${server} ${row.entries} entries/s`, Number(row.entriesPerSecond));
    } else if (row.bench === "tokens" && row.runs !== undefined) {
      m.set(`tokens ${row.runs} runs p99 ms`, Number(row.p99Ms));
      m.set(`tokens ${row.runs} runs server ms/run-s`, Number(row.serverCpuMsPerRunSecond));
    }
  }
  return m;
}

const median = (xs: number[]) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length === 0
    ? NaN
    : s.length % 2
    ? s[(s.length - 1) / 2]
    : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const [[a], [b]] = bins;
const per = (name: string) => results.get(name)!.map(headlines);
const ha = per(a), hb = per(b);
const labels = [...new Set(ha.flatMap((m) => [...m.keys()]))];
console.log(
  `\n| figure | ${a} (median of ${rounds}) | ${b} (median of ${rounds}) | ${b} / ${a} | ${a} runs | ${b} runs |`,
);
console.log("|---|---|---|---|---|---|");
for (const label of labels) {
  const va = ha.map((m) => m.get(label) ?? NaN), vb = hb.map((m) => m.get(label) ?? NaN);
  const ma = median(va), mb = median(vb);
  const fmt = (x: number) =>
    Number.isFinite(x) ? (Math.abs(x) >= 100 ? String(Math.round(x)) : x.toFixed(2)) : "-";
  console.log(
    `| ${label} | ${fmt(ma)} | ${fmt(mb)} | ${(mb / ma).toFixed(2)} | ${va.map(fmt).join(", ")} | ${
      vb.map(fmt).join(", ")
    } |`,
  );
}
console.log(`\nlogs and JSON per run: ${out}`);
