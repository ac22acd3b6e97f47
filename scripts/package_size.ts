// Measures what each browser client costs a page, all by one tool in one run: each entry is
// bundled for the browser with everything it imports by `bun build --minify`, then gzipped
// (zlib level 9). Prints a Markdown table (README.md "Packages" records its figures).
// Entries: @switchboard/client (the built package, phoenix and msgpackr included), the same
// package's own code alone (dependencies left out), pusher-js and phoenix.
// Run: `bun scripts/package_size.ts` after `deno task pack`. Runs under Bun only.
// deno-lint-ignore no-explicit-any
declare const Bun: any;
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { root } from "./packages/build.ts";

const clientDist = join(root, "packages/client/dist/index.js");
const entries: { name: string; source: string; external?: string[] }[] = [
  {
    name: "@switchboard/client (with phoenix, msgpackr)",
    source: `export * from ${JSON.stringify(clientDist)};`,
  },
  {
    name: "@switchboard/client, own code only",
    source: `export * from ${JSON.stringify(clientDist)};`,
    external: ["phoenix", "msgpackr"],
  },
  { name: "pusher-js", source: `export { default } from "pusher-js";` },
  { name: "phoenix", source: `export * from "phoenix";` },
];

const version = (pkg: string) =>
  JSON.parse(readFileSync(join(root, "node_modules", pkg, "package.json"), "utf8")).version;
mkdirSync(join(root, "dist"), { recursive: true });
const dir = mkdtempSync(join(root, "dist", ".size-"));
try {
  const rows = [];
  for (const [i, e] of entries.entries()) {
    const entry = join(dir, `entry${i}.js`);
    writeFileSync(entry, e.source);
    const result = await Bun.build({
      entrypoints: [entry],
      target: "browser",
      format: "esm",
      minify: true,
      external: e.external ?? [],
    });
    if (!result.success) throw new Error(result.logs.map(String).join("\n"));
    const bytes = new TextEncoder().encode(await result.outputs[0].text());
    rows.push(
      `| ${e.name} | ${(bytes.length / 1024).toFixed(1)} KiB | ${
        (gzipSync(bytes, { level: 9 }).length / 1024).toFixed(1)
      } KiB |`,
    );
  }
  console.log(
    `Measured with bun ${Bun.version} build --minify (browser) + gzip -9; pusher-js ${
      version("pusher-js")
    }, phoenix ${version("phoenix")}, msgpackr ${version("msgpackr")}.\n`,
  );
  console.log("| Bundle | Minified | Minified + gzip |\n|---|---|---|");
  console.log(rows.join("\n"));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
