/** Records the unhandled promise rejections raised while `body` runs (and one macrotask after
 * it: the event is dispatched after the microtasks), keeping them from failing the test. */
export async function unhandledDuring(body: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const onRejection = (e: PromiseRejectionEvent) => {
    e.preventDefault();
    seen.push(e.reason);
  };
  globalThis.addEventListener("unhandledrejection", onRejection);
  try {
    await body();
    await new Promise((r) => setTimeout(r, 0));
    return seen;
  } finally {
    globalThis.removeEventListener("unhandledrejection", onRejection);
  }
}
