/**
 * In-memory presence registry (per process): per channel topic, the members keyed by user id,
 * each with the sockets it is present on. A user with several sockets is one member: it
 * "joins" with its first socket and "leaves" after its last.
 */

/** One presence member as shown in join replies, events and the users route. */
export interface PresenceMember {
  user_id: string;
  user_info?: unknown;
}

interface Entry {
  info: unknown;
  sockets: Set<string>;
}

/** Presence state of every presence channel in this process. */
export class PresenceRegistry {
  #topics = new Map<string, Map<string, Entry>>();
  #observers: ((topic: string, userId: string, joined: boolean) => void)[] = [];

  /** Calls `fn` whenever a user becomes a member of a topic (`true`) or stops being one. */
  observe(fn: (topic: string, userId: string, joined: boolean) => void): void {
    this.#observers.push(fn);
  }

  /** Adds `socketId` for `userId`; true when this made the user a new member. */
  add(topic: string, userId: string, info: unknown, socketId: string): boolean {
    let members = this.#topics.get(topic);
    if (!members) this.#topics.set(topic, (members = new Map()));
    const entry = members.get(userId);
    if (entry) {
      entry.sockets.add(socketId);
      return false;
    }
    members.set(userId, { info, sockets: new Set([socketId]) });
    for (const fn of this.#observers) fn(topic, userId, true);
    return true;
  }

  /** Removes `socketId` for `userId`; true when the user has no socket left (it left). */
  remove(topic: string, userId: string, socketId: string): boolean {
    const members = this.#topics.get(topic);
    const entry = members?.get(userId);
    if (!members || !entry || !entry.sockets.delete(socketId)) return false;
    if (entry.sockets.size > 0) return false;
    members.delete(userId);
    if (members.size === 0) this.#topics.delete(topic);
    for (const fn of this.#observers) fn(topic, userId, false);
    return true;
  }

  /** Current members of `topic`, in join order. */
  members(topic: string): PresenceMember[] {
    const members = this.#topics.get(topic);
    if (!members) return [];
    return [...members].map(([user_id, e]) => memberOf(user_id, e.info));
  }

  /** Number of distinct users on `topic`. */
  count(topic: string): number {
    return this.#topics.get(topic)?.size ?? 0;
  }
}

/** The wire shape of a member (`user_info` omitted when the user gave none). */
export function memberOf(userId: string, info: unknown): PresenceMember {
  return info === undefined ? { user_id: userId } : { user_id: userId, user_info: info };
}
