// Builds the single binary with Bun. Three dependencies need a hand to survive bundling:
//
// - lmdb-js loads its native addon through a dynamic path lookup that `bun build --compile`
//   cannot follow, so a plugin swaps that lookup for a static require of the linux-x64 glibc
//   addon, which Bun then embeds.
// - msgpackr-extract (msgpackr's native string extraction, used by lmdb-js's decoder) looks
//   its addon up from `__dirname`, which the bundler fixes to the build machine's absolute
//   path: the binary then loaded the addon from the build tree when that path existed (as on
//   the machine that built and tested it) and ran without it anywhere else. The plugin embeds
//   it the same way, and the build fails if any other module still resolves files from the
//   build tree at run time (pino's worker transports, which Switchboard never starts, aside).
// - ordered-binary (lmdb's key encoder) decodes string keys with code it generates at run time
//   from the source text of its own `finishUtf8` helper. The bundler renames the module
//   variables that text refers to (`position` becomes `position6`), so every key holding a
//   non-ASCII character threw a ReferenceError in the binary only. The plugin replaces the
//   generated decoder with a plain loop over the same module variables, which the bundler
//   renames consistently. The build fails if either pattern is no longer found, so an upgrade
//   of either package cannot silently bring the bug back.
//
// The bundle is compiled to bytecode at build time (`bytecode: true`), so a start skips
// parsing it: ready about 40% sooner for 1-2 MB more resident memory.
//
// Runs under Bun only; Bun's types are not part of the Deno type check.
// deno-lint-ignore no-explicit-any
declare const Bun: any;
declare const process: { argv: string[]; exit(code: number): never };

/** A plain-loop string decoder with the generated one's semantics: byte 4 escapes the next
 * byte, a byte below 4 ends the string, bytes from 0x80 start a UTF-8 sequence. */
const PLAIN_READ_STRING = `const readString = (source) => {
	let out = ''
	for (;;) {
		let b = source[position++]
		if (b > 4) {
			if (b >= 0x80) b = finishUtf8(b, source)
		} else if (b === 4) {
			b = source[position++]
		} else return out
		out += fromCharCode(b)
	}
}
function readStringSafely(`;

/** Replaces `from` (a string or pattern) in `src`, failing the build when it is absent. */
function patch(src: string, from: string | RegExp, to: string, what: string): string {
  const found = typeof from === "string" ? src.includes(from) : from.test(src);
  if (!found) {
    console.error(
      `bun_build: cannot patch ${what}: its source changed; review scripts/bun_build.ts`,
    );
    process.exit(1);
  }
  return src.replace(from, to);
}

const bundlePatches = {
  name: "bundle-patches",
  // deno-lint-ignore no-explicit-any
  setup(build: any) {
    build.onLoad({ filter: /lmdb[\\/]native\.js$/ }, async (args: { path: string }) => ({
      contents: patch(
        await Bun.file(args.path).text(),
        "loadNAPI(dirName)",
        'require("@lmdb/lmdb-linux-x64/node.napi.glibc.node")',
        "lmdb's addon loader",
      ),
      loader: "js",
    }));
    build.onLoad({ filter: /msgpackr-extract[\\/]index\.js$/ }, async (args: { path: string }) => ({
      contents: patch(
        await Bun.file(args.path).text(),
        "require('node-gyp-build-optional-packages')(__dirname)",
        'require("@msgpackr-extract/msgpackr-extract-linux-x64/node.napi.glibc.node")',
        "msgpackr-extract's addon loader",
      ),
      loader: "js",
    }));
    build.onLoad(
      { filter: /ordered-binary[\\/]index\.js$/ },
      async (args: { path: string }) => ({
        contents: patch(
          await Bun.file(args.path).text(),
          /const readString =[\s\S]*?function readStringSafely\(/,
          PLAIN_READ_STRING,
          "ordered-binary's string decoder",
        ),
        loader: "js",
      }),
    );
  },
};

const entry = process.argv[2] ?? "main.ts";
const out = process.argv[3] ?? "dist/switchboard";
const result = await Bun.build({
  entrypoints: [entry],
  compile: { outfile: out },
  plugins: [bundlePatches],
  minify: false,
  bytecode: true,
  target: "bun",
});
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}
// Modules whose `__dirname` is the build tree may only be ones Switchboard never runs.
const UNUSED_AT_RUN_TIME = ["node_modules/pino/lib", "node_modules/thread-stream"];
const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const text = new TextDecoder().decode(await Bun.file(out).arrayBuffer());
const pinned = [...text.matchAll(/__dirname = "([^"]*)"/g)].map((m) => m[1])
  .filter((dir) => dir.startsWith(root) && !UNUSED_AT_RUN_TIME.some((ok) => dir.endsWith(ok)));
if (pinned.length > 0) {
  console.error(
    `bun_build: modules would read files from the build tree at run time: ${pinned.join(", ")}`,
  );
  process.exit(1);
}
console.log(`built ${out}`);
