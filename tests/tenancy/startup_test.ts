// Start-up refuses an apps file whose app ids or keys break the grammar (1 to 64 characters from
// A-Z a-z 0-9 _ -), repeat, or where an id equals another app's key: the process exits 2 before
// listening, with a message naming the app and the rule. Runs the binary when SWITCHBOARD_BIN
// is set.
import assert from "node:assert/strict";
import { startRefused as startWith } from "../helpers/server.ts";

const RULE = "1 to 64 characters from A-Z a-z 0-9 _ -";

const CASES: { name: string; apps: { id: string; key: string; secret: string }[]; says: string }[] =
  [
    {
      name: "an id with a slash (acme/eu beside acme)",
      apps: [{ id: "acme", key: "acme-key", secret: "s1" }, {
        id: "acme/eu",
        key: "acme-eu-key",
        secret: "s2",
      }],
      says: `apps[1] (id "acme/eu"): id "acme/eu" is not ${RULE}`,
    },
    {
      name: "an id with a newline (n\\nl beside n)",
      apps: [{ id: "n", key: "n-key", secret: "s1" }, { id: "n\nl", key: "nl-key", secret: "s2" }],
      says: `apps[1] (id "n\\nl"): id "n\\nl" is not ${RULE}`,
    },
    {
      name: "a key with a colon",
      apps: [{ id: "a", key: "a:b", secret: "s1" }],
      says: `apps[0] (id "a"): key "a:b" is not ${RULE}`,
    },
    {
      name: "an id equal to another app's key",
      apps: [{ id: "one", key: "two", secret: "s1" }, { id: "two", key: "k2", secret: "s2" }],
      says:
        `apps[1] (id "two"): id "two" is the key of apps[0] (id "one"); an app's id must not equal another app's key`,
    },
  ];

for (const c of CASES) {
  Deno.test(`start-up refuses ${c.name}, naming the app and the rule`, async () => {
    const { code, stderr, file } = await startWith(c.apps);
    assert.equal(code, 2, stderr);
    assert.ok(stderr.includes(`switchboard: ${file}: ${c.says}`), stderr);
    assert.doesNotMatch(stderr, /listening/i);
  });
}

// 86 three-byte characters: 258 UTF-8 bytes, but only 86 UTF-16 units (issue 12's key parts).
Deno.test("start-up refuses an apps file with an app id outside the grammar (a long Japanese id)", async () => {
  const { code, stderr } = await startWith([{ id: "日".repeat(86), key: "k", secret: "s" }]);
  assert.notEqual(code, 0);
  assert.match(
    stderr,
    /apps\[0\] \(id "[^"]+"\): id "[^"]+" is not 1 to 64 characters from A-Z a-z 0-9 _ -/,
  );
});
