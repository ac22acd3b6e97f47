// The React peer range says 18 as well as 19: @switchboard/react installed from its tarball
// beside react@18 (npm must accept the peer without --force or --legacy-peer-deps), rendered
// on the server by react-dom@18 with every hook. The browser behaviour is covered on React 19
// by vite_react_test.ts and tests/react/.
import assert from "node:assert/strict";
import { copyFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../helpers/temp_dir.ts";
import { consumer, DENO, runOk } from "./helpers.ts";

const SCRIPT = `
import { createElement as h } from "react";
import { renderToString } from "react-dom/server";
import { version } from "react";
import { SwitchboardProvider, useChannel, useObject, usePresence, useThread } from "@switchboard/react";

function Page() {
  const news = useChannel("news");
  const counter = useObject("counter", "home");
  const room = usePresence("presence-room");
  const thread = useThread("t1", { clientId: "me" });
  return h("p", null, [news.status, counter.status, room.status, thread.status, room.count].join(" "));
}
const html = renderToString(h(SwitchboardProvider, { appKey: "k", endpoint: "ws://127.0.0.1:1/socket" }, h(Page)));
console.log(JSON.stringify({ version, html }));
`;

Deno.test("packages: @switchboard/react installs and renders with React 18", async () => {
  const { dir: shared, tarballs } = await consumer();
  const dir = tempDir("sb-react18-");
  const mine = tarballs.filter((t) => /switchboard-(client|react)-/.test(t));
  for (const t of mine) copyFileSync(join(shared, t), join(dir, t));
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({ name: "react18-app", private: true, type: "module" }),
  );
  const log = await runOk("npm", [
    "install",
    "--no-audit",
    "--no-fund",
    ...mine.map((t) => `./${t}`),
    "react@^18",
    "react-dom@^18",
  ], { cwd: dir });
  assert.doesNotMatch(log, /ERESOLVE|peer dep/i, log);
  writeFileSync(join(dir, "render.mjs"), SCRIPT);
  const out = JSON.parse(
    (await runOk(DENO, ["run", "-A", "render.mjs"], { cwd: dir })).trim().split("\n").at(-1)!,
  );
  assert.match(out.version, /^18\./);
  // Nothing connects during a server render: every hook renders its idle state.
  assert.equal(out.html, "<p>idle idle idle idle 0</p>");
});
