// The one StreamPosition (lib/streams/position.ts): every product reads `after_{offset}` and
// `epoch` the same way and refuses a bad one with the same wording, and the join reply's
// position fields (`epoch`, `replay`, `first_{offset}`, the deprecated `reset`) are built in one
// place. Property-based (fast-check, seeded) where the input space is large.
import assert from "node:assert/strict";
import fc from "fast-check";
import { LOG_ID, readPosition, replyFields, SERIAL } from "../../lib/streams/mod.ts";

const SEED = 20261126;

Deno.test("position: any non-negative safe integer, as a number or up to 15 digits, round-trips", () => {
  fc.assert(
    fc.property(
      fc.constantFrom(LOG_ID, SERIAL),
      fc.maxSafeNat(),
      fc.option(fc.string({ unit: "grapheme", minLength: 1, maxLength: 64 })),
      (wire, n, epoch) => {
        const params: Record<string, unknown> = { [`after_${wire.offset}`]: n };
        if (epoch !== null) params.epoch = epoch;
        const want = epoch === null ? { offset: n } : { offset: n, epoch };
        assert.deepEqual(readPosition(wire, params), want);
        if (String(n).length <= 15) {
          assert.deepEqual(
            readPosition(wire, { ...params, [`after_${wire.offset}`]: String(n) }),
            want,
          );
        }
      },
    ),
    { seed: SEED, numRuns: 300 },
  );
});

Deno.test("position: absent means no replay; the epoch alone is still checked", () => {
  for (const wire of [LOG_ID, SERIAL]) {
    for (const none of [undefined, null, ""]) {
      assert.equal(readPosition(wire, { [`after_${wire.offset}`]: none }), undefined);
    }
    assert.equal(readPosition(wire, { epoch: "0" }), undefined);
    assert.deepEqual(readPosition(wire, { epoch: 5 }), { error: "invalid epoch" });
  }
});

Deno.test("position: one refusal wording per product's wire name, and for the epoch", () => {
  fc.assert(
    fc.property(
      fc.constantFrom(LOG_ID, SERIAL),
      fc.oneof(
        fc.integer({ max: -1 }),
        fc.double().filter((d) => !Number.isSafeInteger(d) || d < 0),
        fc.string({ unit: "grapheme", minLength: 1, maxLength: 20 }).filter((s) =>
          !/^\d{1,15}$/.test(s)
        ),
        fc.constantFrom(true, [1], { n: 1 }, "1".repeat(16), Number.MAX_SAFE_INTEGER + 1),
      ),
      (wire, bad) => {
        assert.deepEqual(readPosition(wire, { [`after_${wire.offset}`]: bad }), {
          error: `invalid after_${wire.offset}`,
        });
        // The position is checked first, the epoch after it.
        assert.deepEqual(readPosition(wire, { [`after_${wire.offset}`]: bad, epoch: 7 }), {
          error: `invalid after_${wire.offset}`,
        });
      },
    ),
    { seed: SEED, numRuns: 300 },
  );
  for (const bad of [7, {}, "e".repeat(65), true]) {
    assert.deepEqual(readPosition(LOG_ID, { after_log_id: 1, epoch: bad }), {
      error: "invalid epoch",
    });
    assert.deepEqual(readPosition(SERIAL, { after_serial: 1, epoch: bad }), {
      error: "invalid epoch",
    });
  }
  // A product reads only its own name.
  assert.equal(readPosition(SERIAL, { after_log_id: 3 }), undefined);
});

Deno.test("position: the reply fields, one encoding of a reset for every product", () => {
  assert.deepEqual(replyFields(SERIAL, undefined, "0", { replay: "none", first: 1 }), {
    epoch: "0",
  });
  assert.deepEqual(replyFields(LOG_ID, undefined, "0", { replay: "none", first: 1 }), {
    epoch: "0",
  });
  assert.deepEqual(replyFields(SERIAL, { offset: 3 }, "0", { replay: "complete", first: 1 }), {
    epoch: "0",
    replay: "complete",
    first_serial: 1,
  });
  assert.deepEqual(replyFields(LOG_ID, { offset: 3 }, "0", { replay: "partial", first: 2 }), {
    epoch: "0",
    replay: "partial",
    first_log_id: 2,
  });
  assert.deepEqual(
    replyFields(SERIAL, { offset: 9, epoch: "x" }, "e1", { replay: "reset", first: 1 }),
    { epoch: "e1", replay: "reset", first_serial: 1 },
  );
  // Objects and chat also keep their old `reset: true` for one release.
  assert.deepEqual(
    replyFields(LOG_ID, { offset: 9, epoch: "x" }, "e1", { replay: "reset", first: 1 }),
    { epoch: "e1", replay: "reset", first_log_id: 1, reset: true },
  );
});
