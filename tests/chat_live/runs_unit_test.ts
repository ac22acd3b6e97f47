import assert from "node:assert/strict";
import {
  decideTool,
  endRun,
  newRun,
  resumeRun,
  startRun,
  suspendRun,
} from "../../lib/chat/live/runs.ts";
import { RollupBuffers } from "../../lib/chat/live/rollup.ts";
import { Topic } from "../../lib/wire/topic.ts";

const reason = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return (e as { reason: string }).reason;
  }
  return "no error";
};

Deno.test("run state machine: allowed moves and the reasons of refused ones", () => {
  const r = newRun({ runId: "r", ownerClientId: "c", messageId: "m", parentId: "p" }, 1);
  assert.equal(r.status, "pending");
  assert.equal(reason(() => startRun(r, true, "a")), "invalid_state"); // queued behind a busy run
  assert.equal(
    reason(() => suspendRun(r, { toolCallId: "t", toolName: "x", args: {} })),
    "invalid_state",
  );
  assert.equal(reason(() => resumeRun(r)), "invalid_state");
  const active = startRun(r, false, "a", 5);
  assert.equal(active.status, "active");
  assert.equal(active.startedAt, 5);
  assert.equal(reason(() => startRun(active, false, "a")), "invalid_state");
  const tool = { toolCallId: "t", toolName: "x", args: { a: 1 } };
  const sus = suspendRun(active, tool);
  assert.deepEqual(sus.suspendedTool, tool);
  assert.equal(reason(() => decideTool(sus, "other", true)), "invalid_state");
  const decided = decideTool(sus, "t", true);
  assert.equal(decided.toolDecision, "approved");
  assert.equal(reason(() => decideTool(decided, "t", false)), "invalid_state");
  const resumed = resumeRun(decided);
  assert.equal(resumed.status, "active");
  assert.equal(resumed.suspendedTool, null);
  const ended = endRun(resumed, "cancelled", 9);
  assert.deepEqual([ended.status, ended.endedAt], ["cancelled", 9]);
  for (
    const f of [
      () => endRun(ended, "complete"),
      () => resumeRun(ended),
      () => startRun(ended, false, "a"),
    ]
  ) {
    assert.equal(reason(f), "already_ended");
  }
  assert.equal(endRun(r, "error").status, "error"); // a pending run may end too
});

Deno.test("RollupBuffers: tokens are rolled up into one delta per interval, with offsets", async () => {
  const T = Topic.of("chat", "k", "t1");
  const deltas: [string, string, number][] = [];
  const b = new RollupBuffers(
    (_topic, runId, text, offset) => deltas.push([runId, text, offset]),
    20,
  );
  b.append("k", T, "r", "a");
  b.append("k", T, "r", "b");
  assert.equal(b.flushed("k"), "");
  await new Promise((r) => setTimeout(r, 60));
  assert.deepEqual(deltas, [["r", "ab", 0]]);
  b.append("k", T, "r", "c");
  assert.equal(b.close("k", "r"), "abc"); // close flushes at once
  assert.deepEqual(deltas[1], ["r", "c", 2]);
  assert.equal(b.append("k", T, "r", "late"), false);
  b.drop("k");
  assert.equal(b.has("k"), false);
  b.clear();
});
