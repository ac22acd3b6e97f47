/**
 * In-memory presence registry (per process): per channel topic, the members keyed by user id,
 * each with where it is present: sockets of this node, and, in clustered mode, other nodes
 * (which report users, not sockets). A user present several times is one member: it "joins"
 * with its first presence anywhere and "leaves" after its last. A presence through this node
 * and one through another are added and removed the same way (`add` / `remove` name the node);
 * the cluster module only translates its messages into those calls.
 */
import type { Topic } from "../wire/topic.ts";

/** One presence member as shown in join replies, events and the users route. */
export interface PresenceMember {
  user_id: string;
  user_info?: unknown;
}

interface Entry {
  info: unknown;
  /** node -> the presences through it: socket ids on this node; `""` for another node's
   * report of the user. */
  via: Map<string, Set<string>>;
}

/** Told when a user becomes a member of a topic anywhere (`joined`) or stops being one, with
 * the info it joined with. */
export type PresenceObserver = (
  topic: Topic,
  userId: string,
  joined: boolean,
  info: unknown,
) => void;

/** Told when a user's presence through this node starts (`true`) or ends. */
export type LocalPresenceObserver = (
  topic: Topic,
  userId: string,
  info: unknown,
  present: boolean,
) => void;

/** Presence state of every presence channel in this process. */
export class PresenceRegistry {
  /** This node's id: the node of the presences its sockets hold. */
  readonly node: string;
  /** topic key -> the topic and its members. */
  #topics = new Map<string, { topic: Topic; members: Map<string, Entry> }>();
  #observers: PresenceObserver[] = [];
  #local: LocalPresenceObserver[] = [];

  /** A registry on the node `node` (this node's id; any name on one node). */
  constructor(node: string) {
    this.node = node;
  }

  /** Calls `fn` whenever a user becomes a member of a topic (`true`) or stops being one. */
  observe(fn: PresenceObserver): void {
    this.#observers.push(fn);
  }

  /** Calls `fn` when a user's first presence through this node starts or its last ends. */
  observeLocal(fn: LocalPresenceObserver): void {
    this.#local.push(fn);
  }

  /**
   * `userId` is present on `topic` through `node`: through the socket `socketId` of this node,
   * or (no socket) as another node reports it. True when this made the user a new member.
   */
  add(topic: Topic, userId: string, info: unknown, node: string, socketId = ""): boolean {
    let t = this.#topics.get(topic.key);
    if (!t) this.#topics.set(topic.key, t = { topic, members: new Map() });
    let entry = t.members.get(userId);
    const created = !entry;
    if (!entry) t.members.set(userId, entry = { info, via: new Map() });
    let held = entry.via.get(node);
    if (!held) entry.via.set(node, held = new Set());
    const first = held.size === 0;
    held.add(socketId);
    if (created) { for (const fn of this.#observers) fn(t.topic, userId, true, info); }
    if (first && node === this.node) {
      for (const fn of this.#local) fn(t.topic, userId, entry.info, true);
    }
    return created;
  }

  /** Ends the presence `add` started (the same node and socket); true when the user has no
   * presence left anywhere (it left). */
  remove(topic: Topic, userId: string, node: string, socketId = ""): boolean {
    const t = this.#topics.get(topic.key);
    const entry = t?.members.get(userId);
    const held = entry?.via.get(node);
    if (!t || !entry || !held || !held.delete(socketId)) return false;
    if (held.size > 0) return false;
    entry.via.delete(node);
    if (node === this.node) {
      for (const fn of this.#local) {
        fn(t.topic, userId, entry.info, false);
      }
    }
    if (entry.via.size > 0) return false;
    t.members.delete(userId);
    if (t.members.size === 0) this.#topics.delete(topic.key);
    for (const fn of this.#observers) fn(t.topic, userId, false, entry.info);
    return true;
  }

  /** Every membership through `node` (this one or another): `[topic, userId, info]`. */
  membersVia(node: string): [Topic, string, unknown][] {
    const out: [Topic, string, unknown][] = [];
    for (const { topic, members } of this.#topics.values()) {
      for (const [userId, e] of members) if (e.via.has(node)) out.push([topic, userId, e.info]);
    }
    return out;
  }

  /** Current members of `topic`, in join order. */
  members(topic: Topic): PresenceMember[] {
    const t = this.#topics.get(topic.key);
    if (!t) return [];
    return [...t.members].map(([user_id, e]) => memberOf(user_id, e.info));
  }

  /** Whether `userId` is a member of `topic`. */
  has(topic: Topic, userId: string): boolean {
    return this.#topics.get(topic.key)?.members.has(userId) ?? false;
  }

  /** Number of distinct users on `topic`. */
  count(topic: Topic): number {
    return this.#topics.get(topic.key)?.members.size ?? 0;
  }
}

/** The wire shape of a member (`user_info` omitted when the user gave none). */
export function memberOf(userId: string, info: unknown): PresenceMember {
  return info === undefined ? { user_id: userId } : { user_id: userId, user_info: info };
}
