// The console's flag: off by default, on with --console-secret or CONSOLE_SECRET, refused
// when too short to be a secret.
import assert from "node:assert/strict";
import { ConfigError, parseConfig } from "../../lib/config/config.ts";

Deno.test("console flag: off by default; flag or environment turns it on; a short secret is refused", () => {
  assert.equal(parseConfig([], {}).consoleSecret, undefined);
  assert.equal(parseConfig([], { CONSOLE_SECRET: "" }).consoleSecret, undefined);
  assert.equal(
    parseConfig(["--console-secret", "0123456789abcdef"], {}).consoleSecret,
    "0123456789abcdef",
  );
  assert.equal(
    parseConfig([], { CONSOLE_SECRET: "from-the-environment" }).consoleSecret,
    "from-the-environment",
  );
  assert.equal(
    parseConfig(["--console-secret=flag-wins-over-env"], { CONSOLE_SECRET: "from-the-environment" })
      .consoleSecret,
    "flag-wins-over-env",
  );
  assert.throws(() => parseConfig(["--console-secret", "short"], {}), ConfigError);
});
