// Fault case: stale data-dir locks. A server is SIGKILLed, then its lock file is rewritten to
// name a live process that is not a server (the id was reused after a crash or reboot), in the
// current format and in the older pid-only one; each time the binary must start at once. A
// second server beside a live one must still be refused (exit 2).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { serverCommand } from "../tests/helpers/server.ts";
import { type Budget, type PartResult, start } from "./common.ts";

/** Runs the stale-lock rounds (a few seconds; the budget is not needed). */
export async function staleLock(_budget: Budget): Promise<PartResult> {
  const counts = { restarts: 0, refusedSecond: 0 };
  const failures: string[] = [];
  const other = new Deno.Command("sleep", { args: ["120"], stdout: "null", stderr: "null" })
    .spawn();
  let server = await start();
  const dataDir = server.dataDir;
  try {
    for (const lock of [`${other.pid}\n1\n\n`, `${other.pid}\n`, `${other.pid}\n`]) {
      await server.kill();
      writeFileSync(join(dataDir, "switchboard.lock"), lock);
      try {
        server = await start({ dataDir });
        const res = await fetch(`${server.baseUrl}/healthz`);
        await res.body?.cancel();
        if (res.status !== 200) {
          failures.push(`after a stale lock ${JSON.stringify(lock)}: /healthz ${res.status}`);
        }
        counts.restarts++;
      } catch (err) {
        failures.push(
          `a stale lock ${JSON.stringify(lock)} blocked the start: ${
            (err as Error).message.slice(0, 300)
          }`,
        );
        server = await start({ dataDir: dataDir + "-fallback" });
        break;
      }
    }
    const { cmd, args } = serverCommand();
    const second = await new Deno.Command(cmd, {
      args: [...args, "--port", "0", "--host", "127.0.0.1", "--data-dir", server.dataDir],
      stdout: "null",
      stderr: "piped",
    }).output();
    if (second.code === 2) counts.refusedSecond++;
    else failures.push(`a second server on a live server's data dir exited ${second.code}, not 2`);
  } finally {
    await server.stop();
    other.kill("SIGKILL");
    await other.status;
  }
  return { name: "stale lock", counts, failures };
}
