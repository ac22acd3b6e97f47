// A small tmpfs for tests that need a disk that fills up (mounting needs root, as in CI).

/** Runs a command; throws with its stderr when it fails. */
export async function sh(cmd: string, ...args: string[]): Promise<void> {
  const out = await new Deno.Command(cmd, { args, stdout: "null", stderr: "piped" }).output();
  if (out.code !== 0) throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
}

/** A mounted tmpfs of `megabytes`: `fill` takes (about) all its free space with a file that
 * `unfill` deletes; `unmount` detaches it. */
export async function tmpfs(megabytes: number): Promise<{
  path: string;
  fill(): Promise<void>;
  unfill(): Promise<void>;
  unmount(): Promise<void>;
}> {
  const path = await Deno.makeTempDir({ prefix: "sb-tmpfs-" });
  await sh("mount", "-t", "tmpfs", "-o", `size=${megabytes}m`, "tmpfs", path);
  const filler = `${path}/filler`;
  return {
    path,
    fill: () => sh("sh", "-c", `dd if=/dev/zero of=${filler} bs=64k 2>/dev/null || true`),
    unfill: () => Deno.remove(filler),
    unmount: () => sh("umount", "-l", path),
  };
}
