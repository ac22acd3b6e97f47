// How a failed commit's cause reads (lib/store/errors.ts): a full disk says "No space left on
// device" without LMDB's page detail, also when LMDB saw the disk fill as a short write (EIO)
// on a file system that really is full (a small tmpfs, filled); an EIO with room left stays an
// I/O error. lmdb-js's own console.error print of a failed write is dropped, nothing else.
import assert from "node:assert/strict";
import { describe, quietLmdbCommitErrors } from "../../lib/store/errors.ts";
import { tempDir } from "../helpers/temp_dir.ts";

async function sh(cmd: string, ...args: string[]): Promise<void> {
  const out = await new Deno.Command(cmd, { args, stdout: "null", stderr: "piped" }).output();
  if (out.code !== 0) {
    throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
}

/** An error as lmdb-js makes it of a failed write's status. */
function lmdbError(code: number, message: string): Error {
  return Object.assign(new Error(message), { code });
}

Deno.test("storage errors: ENOSPC reads 'No space left on device' without LMDB's page detail", () => {
  const e = lmdbError(
    28,
    "No space left on device: Attempting to write page at position 32768, size 12288, blocks 3, buffer sizes 4096 4096 4096",
  );
  assert.equal(describe(e), "No space left on device");
  assert.equal(describe(e, "/nonexistent/x.mdb"), "No space left on device");
});

Deno.test("storage errors: EIO on a full file system is a full disk; with room left it stays an I/O error", async () => {
  const mnt = await Deno.makeTempDir({ prefix: "sb-tmpfs-" });
  await sh("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt);
  try {
    await sh("sh", "-c", `dd if=/dev/zero of=${mnt}/filler bs=64k count=64 2>/dev/null || true`);
    const eio = lmdbError(5, "Input/output error");
    assert.equal(describe(eio, `${mnt}/switchboard.mdb`), "No space left on device");
    const roomy = tempDir("sb-eio-");
    assert.equal(describe(eio, `${roomy}/switchboard.mdb`), "Input/output error");
    assert.equal(describe(eio), "Input/output error", "no store path: no guess");
  } finally {
    await sh("umount", "-l", mnt);
    await Deno.remove(mnt);
  }
});

Deno.test("storage errors: lmdb-js's print of a failed write is dropped, other console.error calls are not", () => {
  const seen: unknown[][] = [];
  const fake = { error: (...args: unknown[]) => void seen.push(args) };
  quietLmdbCommitErrors(fake);
  quietLmdbCommitErrors(fake); // idempotent: wrapped once
  fake.error(lmdbError(28, "No space left on device: Attempting to write page at 1"));
  fake.error(lmdbError(5, "Input/output error"));
  const plain = new Error("something else");
  fake.error(plain);
  fake.error("text", 1);
  assert.deepEqual(seen, [[plain], ["text", 1]]);
});
