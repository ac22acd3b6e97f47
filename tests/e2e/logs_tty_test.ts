// The log format follows stdout: human text on a terminal (a real pseudo-terminal made by
// util-linux `script`), one JSON object per line on a pipe, and `--log-format` wins over both.
// The first start without an apps file must show the development app readably on a terminal.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { serverCommand } from "../helpers/server.ts";
import { tempDir } from "../helpers/temp_dir.ts";

/** Single-quotes `s` for sh. */
const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** The server command line with a fresh data dir and no apps file (so a development app). */
function serverArgs(extra: string[]): string[] {
  const { cmd, args } = serverCommand();
  return [
    cmd,
    ...args,
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--data-dir",
    tempDir("sb-tty-"),
    ...extra,
  ];
}

/** Collects a child's stdout and stderr; resolves once `done` matches the output (20 s cap). */
async function readUntil(child: ChildProcess, done: RegExp): Promise<() => string> {
  let out = "";
  child.stdout!.on("data", (c: Uint8Array) => (out += new TextDecoder().decode(c)));
  child.stderr!.on("data", (c: Uint8Array) => (out += new TextDecoder().decode(c)));
  const deadline = Date.now() + 20_000;
  while (!done.test(out)) {
    if (child.exitCode !== null) throw new Error(`exited ${child.exitCode} early:\n${out}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${done}:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return () => out;
}

/** Waits for the child to exit and its output to end (10 s, then SIGKILL); resolves with its
 * exit code. */
function exited(child: ChildProcess): Promise<number | null> {
  const closed = child.exitCode !== null || child.signalCode !== null;
  if (closed && child.stdout!.readableEnded) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

/**
 * Runs the server on a pseudo-terminal until it listens, then types Ctrl-C into the terminal
 * (SIGINT to the server, the terminal's foreground process). Returns the terminal's text.
 */
async function onTerminal(extra: string[]): Promise<string> {
  // -q quiet, -f flush at once, -e exit with the child's code, -c the command; no typescript file.
  const line = "exec " + serverArgs(extra).map(quote).join(" ");
  const child = spawn("script", ["-qfec", line, "/dev/null"], { stdio: ["pipe", "pipe", "pipe"] });
  try {
    const out = await readUntil(child, /listening on http:\/\/[^\s"]+:\d+/);
    child.stdin!.write("\x03");
    assert.equal(await exited(child), 0, "Ctrl-C on the terminal stops the server cleanly");
    // The terminal echoes the typed Ctrl-C as "^C".
    return out().replaceAll("\r\n", "\n").replaceAll("^C", "");
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
    await exited(child);
  }
}

Deno.test("logs on a terminal: human text, the development app readable at first start", async () => {
  const text = await onTerminal([]);
  assert.match(text, /^switchboard \S+ listening on http:\/\/127\.0\.0\.1:\d+$/m);
  assert.match(text, /^ {2}development app \(created, kept in .+\):$/m);
  assert.match(text, /^ {4}app id: {5}dev-\S+$/m);
  assert.match(text, /^ {4}app key: {4}\S+$/m);
  assert.match(text, /^ {4}app secret: \S{16,}$/m);
  assert.ok(
    !text.split("\n").some((l) => l.trimStart().startsWith("{")),
    `a JSON line on a terminal:\n${text}`,
  );
  assert.match(text, /INFO +SIGINT: shutting down/);
});

Deno.test("logs on a terminal: --log-format json still wins", async () => {
  const text = await onTerminal(["--log-format", "json"]);
  const lines = text.trim().split("\n").filter((l) => l.trim() !== "");
  const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>); // every line is JSON
  const dev = entries.find((e) => String(e.msg).startsWith("development app"));
  assert.ok(dev && typeof dev.development_app_secret === "string", "the development app line");
});

Deno.test("logs on a pipe: one JSON object per line by default, text with --log-format text", async () => {
  for (const [extra, json] of [[[], true], [["--log-format", "text"], false]] as const) {
    const [cmd, ...args] = serverArgs([...extra]);
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    try {
      const out = await readUntil(child, /listening on http:\/\/[^\s"]+:\d+/);
      child.kill("SIGTERM");
      await exited(child);
      const lines = out().trim().split("\n");
      if (json) {
        const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
        assert.ok(entries.some((e) => typeof e.development_app_secret === "string"), out());
        assert.ok(entries.some((e) => e.msg === "stopped"), "the shutdown is logged as JSON too");
      } else {
        assert.match(out(), /^ {4}app secret: \S{16,}$/m);
        assert.ok(!lines.some((l) => l.startsWith("{")), out());
      }
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
      await exited(child);
    }
  }
});
