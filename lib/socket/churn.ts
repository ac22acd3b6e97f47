/**
 * The per-socket bound on subscribe/unsubscribe churn (docs/limits.md): a token bucket of
 * `JOIN_BURST` joins and leaves, refilled at `JOIN_RATE` per second. Each join or leave
 * (Phoenix `phx_join` / `phx_leave`, Pusher `pusher:subscribe` / `pusher:unsubscribe`) takes
 * one; a join finding the bucket empty is refused (a leave is always honoured). It keeps an
 * anonymous socket looping over public channels from turning occupancy webhooks into a flood.
 */

/** Joins and leaves a socket may make at once. */
export const JOIN_BURST = 100;
/** Joins and leaves per second a socket may keep up. */
export const JOIN_RATE = 20;

/** The Phoenix join refusal's reason. */
export const JOIN_RATE_REASON =
  `Rate limit exceeded: more than ${JOIN_RATE} joins and leaves per second on this socket`;

/** One socket's bucket. */
export class ChurnLimit {
  #tokens = JOIN_BURST;
  #at = Date.now();

  /** Takes one token; false when none is left (nothing taken). */
  take(): boolean {
    const now = Date.now();
    this.#tokens = Math.min(JOIN_BURST, this.#tokens + ((now - this.#at) / 1000) * JOIN_RATE);
    this.#at = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}
