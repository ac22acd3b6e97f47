// At most 50 test files start a server process (tests/architecture/server_processes.ts says
// what counts: a file that spawns main.ts or the binary, or imports a module that does, such as
// tests/helpers/server.ts's `startServer`). Those are the tests that need a process: the wire
// and its framing against the binary, signals and the process's lifecycle (exit codes, crash
// and restart, the data dir lock, start-up output and logs, process-wide metrics and
// environment), the binary itself, the cluster, the packages and the browser. Product
// behaviour is tested in process (tests/helpers/in_process.ts, tests/harness/).
import assert from "node:assert/strict";
import { serverProcessTests } from "./server_processes.ts";

/** The bound on test files that start a server process. */
const MAX_SERVER_PROCESS_TESTS = 50;

Deno.test("at most 50 test files start a server process; product tests run in process", () => {
  const files = serverProcessTests();
  assert.ok(
    files.length <= MAX_SERVER_PROCESS_TESTS,
    `${files.length} test files start a server process (at most ${MAX_SERVER_PROCESS_TESTS}): ` +
      `test product behaviour in process with tests/helpers/in_process.ts or tests/harness/\n` +
      files.join("\n"),
  );
});

Deno.test("the count sees a test that starts a server, directly or through a helper", () => {
  const files = new Set(serverProcessTests());
  // tests/helpers/server.ts spawns main.ts (or the binary); its users start a process.
  assert.ok(files.has("tests/e2e/binary_test.ts"), "a direct spawn is counted");
  assert.ok(files.has("tests/e2e/socket_test.ts"), "an import of startServer is counted");
  assert.ok(files.has("tests/cluster/cluster_test.ts"), "a start through a helper is counted");
  // In-process tests and type-only imports of server.ts start nothing.
  assert.ok(!files.has("tests/e2e/objects_http_test.ts"), "an in-process test is not counted");
  assert.ok(!files.has("tests/harness/pubsub_test.ts"), "a harness test is not counted");
  assert.ok(!files.has("tests/pubsub/helpers.ts"), "only test files are counted");
});
