/**
 * A fixed one-second window counter per key (per app). Cheap and predictable: a caller that
 * stays at or under `limit` events per calendar second is never refused.
 */
export class RateLimiter {
  #windows = new Map<string, { second: number; used: number }>();

  /**
   * Takes `n` events for `key` under `limit` per second; false (and nothing taken) when that
   * would exceed the limit. A non-positive or non-finite limit means unlimited.
   */
  take(key: string, limit: number, n = 1): boolean {
    if (!Number.isFinite(limit) || limit <= 0) return true;
    const second = Math.floor(Date.now() / 1000);
    let w = this.#windows.get(key);
    if (!w || w.second !== second) {
      w = { second, used: 0 };
      this.#windows.set(key, w);
    }
    if (w.used + n > limit) return false;
    w.used += n;
    return true;
  }
}
