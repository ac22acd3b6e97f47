/**
 * In-memory presence registry (per process): per channel topic, the members keyed by user id,
 * each with the sockets it is present on. A user with several sockets is one member: it
 * "joins" with its first socket and "leaves" after its last. In clustered mode a member may
 * also be present through other nodes (`addRemote`); it is still one member.
 */
import { Topic } from "../wire/topic.ts";

/** One presence member as shown in join replies, events and the users route. */
export interface PresenceMember {
  user_id: string;
  user_info?: unknown;
}

interface Entry {
  info: unknown;
  sockets: Set<string>;
  /** Other nodes the user is present on (clustered mode). */
  nodes: Set<string>;
}

/** Told when a user becomes a member of a topic anywhere (`joined`) or stops being one (with
 * the topic parsed). */
export type PresenceObserver = (topic: Topic, userId: string, joined: boolean) => void;

/** Told when a user's presence on this node starts (`true`) or ends. */
export type LocalPresenceObserver = (topic: string, userId: string, info: unknown, present: boolean) => void;

/** Presence state of every presence channel in this process. */
export class PresenceRegistry {
  #topics = new Map<string, Map<string, Entry>>();
  #observers: PresenceObserver[] = [];
  #local: LocalPresenceObserver[] = [];

  /** Calls `fn` whenever a user becomes a member of a topic (`true`) or stops being one. */
  observe(fn: PresenceObserver): void {
    this.#observers.push(fn);
  }

  /** Calls `fn` when a user's first socket on this node joins a topic or its last leaves. */
  observeLocal(fn: LocalPresenceObserver): void {
    this.#local.push(fn);
  }

  /** Adds `socketId` for `userId`; true when this made the user a new member. */
  add(topic: string, userId: string, info: unknown, socketId: string): boolean {
    const { entry, created } = this.#entry(topic, userId, info);
    const first = entry.sockets.size === 0;
    entry.sockets.add(socketId);
    if (first) for (const fn of this.#local) fn(topic, userId, info, true);
    return created;
  }

  /** Removes `socketId` for `userId`; true when the user has no socket left (it left). */
  remove(topic: string, userId: string, socketId: string): boolean {
    const entry = this.#topics.get(topic)?.get(userId);
    if (!entry || !entry.sockets.delete(socketId) || entry.sockets.size > 0) return false;
    for (const fn of this.#local) fn(topic, userId, entry.info, false);
    return this.#dropIfGone(topic, userId, entry);
  }

  /** The user is present on `node` (another node); true when this made it a new member. */
  addRemote(topic: string, userId: string, info: unknown, node: string): boolean {
    const { entry, created } = this.#entry(topic, userId, info);
    entry.nodes.add(node);
    return created;
  }

  /** The user is no longer present on `node`; true when it left altogether. */
  removeRemote(topic: string, userId: string, node: string): boolean {
    const entry = this.#topics.get(topic)?.get(userId);
    if (!entry || !entry.nodes.delete(node)) return false;
    return this.#dropIfGone(topic, userId, entry);
  }

  /** Every membership through a socket of this node: `[topic, userId, info]`. */
  localMembers(): [string, string, unknown][] {
    const out: [string, string, unknown][] = [];
    for (const [topic, members] of this.#topics) {
      for (const [userId, e] of members) if (e.sockets.size > 0) out.push([topic, userId, e.info]);
    }
    return out;
  }

  /** Every membership through `node`: `[topic, userId]`. */
  remoteMembers(node: string): [string, string][] {
    const out: [string, string][] = [];
    for (const [topic, members] of this.#topics) {
      for (const [userId, e] of members) if (e.nodes.has(node)) out.push([topic, userId]);
    }
    return out;
  }

  /** The member's info, if present. */
  info(topic: string, userId: string): unknown {
    return this.#topics.get(topic)?.get(userId)?.info;
  }

  #entry(topic: string, userId: string, info: unknown): { entry: Entry; created: boolean } {
    let members = this.#topics.get(topic);
    if (!members) this.#topics.set(topic, (members = new Map()));
    let entry = members.get(userId);
    if (entry) return { entry, created: false };
    members.set(userId, (entry = { info, sockets: new Set(), nodes: new Set() }));
    this.#tell(topic, userId, true);
    return { entry, created: true };
  }

  #dropIfGone(topic: string, userId: string, entry: Entry): boolean {
    if (entry.sockets.size > 0 || entry.nodes.size > 0) return false;
    const members = this.#topics.get(topic)!;
    members.delete(userId);
    if (members.size === 0) this.#topics.delete(topic);
    this.#tell(topic, userId, false);
    return true;
  }

  #tell(topic: string, userId: string, joined: boolean): void {
    const parsed = this.#observers.length > 0 ? Topic.parse(topic) : null;
    if (parsed) for (const fn of this.#observers) fn(parsed, userId, joined);
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
