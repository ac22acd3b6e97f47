// `deno task pack`: builds the four npm packages (scripts/packages/build.ts) and writes one
// `npm pack` tarball each into dist/packages/ (`switchboard-<name>-<version>.tgz`), ready for
// `npm install ./dist/packages/<file>.tgz` in an application.
// Runs under Bun only; Bun's types are not part of the Deno type check.
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { buildAll, PACKAGES, root } from "./packages/build.ts";

await buildAll();
const out = join(root, "dist/packages");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
for (const name of PACKAGES) {
  execFileSync("npm", ["pack", "--pack-destination", out], {
    cwd: join(root, "packages", name),
    stdio: ["ignore", "ignore", "inherit"],
  });
}
for (const file of readdirSync(out).sort()) console.log(join("dist/packages", file));
