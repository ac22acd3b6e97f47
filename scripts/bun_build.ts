// Builds the single binary with Bun. lmdb-js loads its native addon through a dynamic
// path lookup that `bun build --compile` cannot follow, so this plugin swaps that lookup
// for a static require of the linux-x64 glibc addon, which Bun then embeds.
// Runs under Bun only; Bun's types are not part of the Deno type check.
// deno-lint-ignore no-explicit-any
declare const Bun: any;
declare const process: { argv: string[]; exit(code: number): never };

const lmdbNative = {
  name: "lmdb-native-static",
  // deno-lint-ignore no-explicit-any
  setup(build: any) {
    build.onLoad({ filter: /lmdb[\\/]native\.js$/ }, async (args: { path: string }) => {
      const src = await Bun.file(args.path).text();
      return {
        contents: src.replace(
          "loadNAPI(dirName)",
          'require("@lmdb/lmdb-linux-x64/node.napi.glibc.node")',
        ),
        loader: "js",
      };
    });
  },
};
const entry = process.argv[2] ?? "main.ts";
const out = process.argv[3] ?? "dist/switchboard";
const result = await Bun.build({
  entrypoints: [entry],
  compile: { outfile: out },
  plugins: [lmdbNative],
  minify: false,
  target: "bun",
});
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}
console.log(`built ${out}`);
