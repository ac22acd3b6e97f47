// Polling for tests that watch something outside the test (a page, a process's output, an
// HTTP read): one helper for the browser, console and package tests.

/** Polls `read` every 50 ms until `ok` holds (20 s cap unless given); returns the last value. */
export async function until<T>(
  read: () => Promise<T>,
  ok: (v: T) => boolean,
  what: string,
  ms = 20_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last: T = await read();
  while (!ok(last)) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
    last = await read();
  }
  return last;
}
