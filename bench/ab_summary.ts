// Summarises `bench/ab_writes.ts` output (one or more logs): per target and object count the
// range and median of writes/s, µs a write, writes per commit and commits/s, and per build
// its same-round difference from the first build named (µs a write) and ratio (writes/s).
//   deno run -A bench/ab_summary.ts ab1.log ab2.log [--base=/tmp/main]
const files = Deno.args.filter((a) => !a.startsWith("--"));
const baseArg = Deno.args.find((a) => a.startsWith("--base="))?.slice(7);

interface Run {
  session: number;
  round: number;
  objects: number;
  target: string;
  rate: number;
  us: number;
  perCommit?: number;
  commitsPerS?: number;
}
const runs: Run[] = [];
const line =
  /^round (\d+) objects (\d+) (\S+) ([\d.]+)k\/s ([\d.]+) µs\/write(?:.*? ([\d.]+) writes\/commit ([\d.]+) commits\/s)?/;
files.forEach((file, session) => {
  for (const l of Deno.readTextFileSync(file).split("\n")) {
    const m = line.exec(l);
    if (!m) continue;
    runs.push({
      session,
      round: Number(m[1]),
      objects: Number(m[2]),
      target: m[3],
      rate: Number(m[4]) * 1000,
      us: Number(m[5]),
      perCommit: m[6] ? Number(m[6]) : undefined,
      commitsPerS: m[7] ? Number(m[7]) : undefined,
    });
  }
});

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};
const span = (xs: number[], d = 1, k = 1) =>
  xs.length === 0
    ? ""
    : `${(Math.min(...xs) / k).toFixed(d)}-${(Math.max(...xs) / k).toFixed(d)} (${
      (median(xs) / k).toFixed(d)
    })`;

const base = baseArg ??
  runs.find((r) => r.target.startsWith("/") || r.target.includes("switchboard"))?.target;
for (const objects of [...new Set(runs.map((r) => r.objects))]) {
  console.log(
    `\n${objects} object(s): target | n | writes/s | µs a write | writes/commit | commits/s | Δµs vs ${base} (same round) | rate ratio`,
  );
  for (const target of [...new Set(runs.map((r) => r.target))]) {
    const mine = runs.filter((r) => r.objects === objects && r.target === target);
    if (mine.length === 0) continue;
    const deltas: number[] = [];
    const ratios: number[] = [];
    for (const r of mine) {
      const b = runs.find((x) =>
        x.objects === objects && x.target === base && x.session === r.session && x.round === r.round
      );
      if (b && target !== base) {
        deltas.push(r.us - b.us);
        ratios.push(r.rate / b.rate);
      }
    }
    const pc = mine.flatMap((r) => r.perCommit ?? []);
    const cs = mine.flatMap((r) => r.commitsPerS ?? []);
    console.log(
      [
        target,
        mine.length,
        span(mine.map((r) => r.rate), 1, 1000) + "k",
        span(mine.map((r) => r.us)),
        span(pc),
        span(cs, 0),
        span(deltas),
        span(ratios, 2),
      ].join(" | "),
    );
  }
}
