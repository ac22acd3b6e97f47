// docs/operations.md's configuration table stays true: one row per flag the parser knows
// (lib/config/config.ts FLAGS, plus --help and --version handled by the parser itself), with
// the same environment variable, and no row for a flag the parser does not know.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { FLAGS, parseConfig } from "../../lib/config/config.ts";

const doc = readFileSync(new URL("../../docs/operations.md", import.meta.url), "utf8");

/** The rows of the first table after `## Configuration`: flag -> environment cell. */
function configurationRows(): Map<string, string> {
  const section = doc.slice(doc.indexOf("\n## Configuration\n"));
  const lines = section.split("\n");
  const start = lines.findIndex((l) => l.startsWith("| Flag"));
  assert.ok(start > 0, "the configuration table is under ## Configuration");
  const rows = new Map<string, string>();
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    const [flagCell, envCell] = line.split("|").slice(1, 3).map((c) => c.trim());
    for (const flag of flagCell.match(/--[a-z-]+/g) ?? []) rows.set(flag, envCell);
  }
  return rows;
}

Deno.test("docs/operations.md lists every flag with its environment variable", () => {
  const rows = configurationRows();
  for (const f of FLAGS) {
    assert.ok(rows.has(f.flag), `${f.flag} is missing from docs/operations.md "Configuration"`);
    assert.ok(
      rows.get(f.flag)!.includes(`\`${f.env}`),
      `${f.flag}: the table says ${rows.get(f.flag)}, the parser reads ${f.env}`,
    );
  }
  const known = new Set([...FLAGS.map((f) => f.flag), "--help", "--version"]);
  for (const flag of rows.keys()) {
    assert.ok(known.has(flag), `docs/operations.md lists ${flag}, which the parser does not know`);
  }
  // --help and --version are the parser's own: the table names them too.
  for (const flag of ["--help", "--version"]) {
    assert.ok(rows.has(flag), `${flag} is missing from the table`);
    assert.notEqual(parseConfig([flag], {}).command, "serve");
  }
});

Deno.test("every documented flag is accepted by the parser", () => {
  for (const flag of configurationRows().keys()) {
    if (flag === "--help" || flag === "--version") continue;
    const spec = FLAGS.find((f) => f.flag === flag)!;
    const value = spec.kind === "bool" ? [] : [
      spec.kind === "string"
        ? (flag === "--log-level"
          ? "warn"
          : flag === "--log-format"
          ? "text"
          : flag === "--console-secret"
          ? "a-console-secret-of-32-chars-xyz"
          : "x")
        : "1",
    ];
    const argv = [flag, ...value, ...(flag === "--nats" ? ["--apps", "apps.json"] : [])];
    assert.doesNotThrow(() => parseConfig(argv, {}), `${argv.join(" ")}`);
  }
});
