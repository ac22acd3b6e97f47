/**
 * The shell blocks of README.md and docs/*.md: which exist, which are marked to be run (an
 * HTML comment `<!-- docs-check: run -->` on the line before the fence, or before the blank
 * line that the formatter puts there), and the commands in
 * them. Shared by the static test (docs_commands_test.ts) and the runner (run_docs.ts).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The marker that makes the next shell block part of the docs check. */
export const RUN_MARK = "<!-- docs-check: run -->";

/** One fenced code block. */
export interface Block {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  /** Whether the line before the fence (past one blank line) is RUN_MARK. */
  run: boolean;
  body: string;
}

/** The documentation files, README.md first, relative to `root`. */
export function docFiles(root: string): string[] {
  const docs = readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")).sort();
  return ["README.md", ...docs.map((f) => `docs/${f}`)];
}

/** Every fenced block of one file. */
export function blocksOf(root: string, file: string): Block[] {
  const lines = readFileSync(join(root, file), "utf8").split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i].match(/^```(\S*)/);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith("```"));
    if (end < 0) break;
    blocks.push({
      file,
      line: i + 1,
      lang: open[1],
      run: markedAbove(lines, i, RUN_MARK),
      body: lines.slice(i + 1, end).join("\n"),
    });
    i = end;
  }
  return blocks;
}

/** Whether the fence at `i` has `mark` on the line above it, past at most one blank line. */
export function markedAbove(lines: string[], i: number, mark: string): boolean {
  const above = lines[i - 1]?.trim() === "" ? lines[i - 2] : lines[i - 1];
  return above?.trim() === mark;
}

/** Whether a block holds shell commands. */
export function isShell(b: Block): boolean {
  return ["sh", "bash", "shell", "console"].includes(b.lang);
}

/** The commands of a shell block: backslash continuations joined, blank and comment lines out. */
export function commandsOf(body: string): string[] {
  const joined = body.replace(/\\\n\s*/g, " ");
  return joined.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"));
}

/**
 * Commands that keep running (servers): the runner starts them in the background with a free
 * `PORT`, waits for `ready` in their output, then expects 200 from `GET /` on that port.
 */
export const SERVERS: { command: RegExp; ready: RegExp }[] = [
  { command: /^npx deno task start\b/, ready: /listening on http:\/\/\S+:\d+/ },
  {
    command: /^npx deno run -A examples\/ai-chat\/serve\.ts\b/,
    ready: /AI chat example on http:\/\/\S+:\d+/,
  },
];

/** The server entry for a command, if it is one. */
export function serverOf(command: string) {
  return SERVERS.find((s) => s.command.test(command));
}
