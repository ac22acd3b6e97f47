/**
 * Server SDK calls for channels (docs/channels.md "HTTP API"), as plain functions over
 * `sendRequest`; `class Switchboard` exposes them as methods.
 */
import { type Connection, sendRequest } from "./auth.ts";

/** One event of a `push` batch. */
export interface ChannelEvent {
  channel: string;
  event: string;
  data?: unknown;
}

/** One stored event as returned by `history`. */
export interface HistoryItem {
  serial: number;
  event: string;
  data: unknown;
  published_at: number;
  client_id?: string;
  socket_id?: string;
}

/** A history page: `next` is the `after` of the following page, null at the end. */
export interface HistoryPage {
  items: HistoryItem[];
  serial: number | null;
  first_serial: number | null;
  next: number | null;
}

/** Options of `history`. */
export interface HistoryOptions {
  /** Return events with a serial greater than this (default 0). */
  after?: number;
  /** Page size, 1 to 1000 (default 100). */
  limit?: number;
}

/** Options of `channels`. */
export interface ChannelsOptions {
  filterByPrefix?: string;
  /** e.g. `["subscription_count", "user_count"]`. */
  info?: string[];
}

/** One channel's info. */
export interface ChannelInfo {
  occupied: boolean;
  subscription_count: number;
  serial: number | null;
  user_count?: number;
}

const enc = encodeURIComponent;

/** `POST /api/apps/{app}/trigger`: resolves with the event's serial (null on ephemeral). */
export async function trigger(
  conn: Connection,
  appId: string,
  channel: string,
  event: string,
  data?: unknown,
): Promise<{ serial: number | null }> {
  return await sendRequest(conn, "POST", `/api/apps/${enc(appId)}/trigger`, {
    channel,
    event,
    data: data ?? null,
  }) as { serial: number | null };
}

/** `POST /api/apps/{app}/push`: up to 100 events, atomic per channel; serials in order. */
export async function push(
  conn: Connection,
  appId: string,
  events: ChannelEvent[],
): Promise<{ serials: (number | null)[] }> {
  return await sendRequest(conn, "POST", `/api/apps/${enc(appId)}/push`, { events }) as {
    serials: (number | null)[];
  };
}

/** `GET .../channels/{channel}/history`: one page, oldest first. */
export async function history(
  conn: Connection,
  appId: string,
  channel: string,
  opts: HistoryOptions = {},
): Promise<HistoryPage> {
  const q = new URLSearchParams();
  if (opts.after !== undefined) q.set("after", String(opts.after));
  if (opts.limit !== undefined) q.set("limit", String(opts.limit));
  const qs = q.size ? `?${q}` : "";
  return await sendRequest(
    conn,
    "GET",
    `/api/apps/${enc(appId)}/channels/${enc(channel)}/history${qs}`,
  ) as HistoryPage;
}

/** `GET /api/apps/{app}/channels`: occupied channels, optionally filtered, with info. */
export async function channels(
  conn: Connection,
  appId: string,
  opts: ChannelsOptions = {},
): Promise<{ channels: Record<string, { subscription_count?: number; user_count?: number }> }> {
  const q = new URLSearchParams();
  if (opts.filterByPrefix) q.set("filter_by_prefix", opts.filterByPrefix);
  if (opts.info?.length) q.set("info", opts.info.join(","));
  const qs = q.size ? `?${q}` : "";
  return await sendRequest(conn, "GET", `/api/apps/${enc(appId)}/channels${qs}`) as {
    channels: Record<string, { subscription_count?: number; user_count?: number }>;
  };
}

/** `GET /api/apps/{app}/channels/{channel}`. */
export async function channel(conn: Connection, appId: string, name: string): Promise<ChannelInfo> {
  return await sendRequest(
    conn,
    "GET",
    `/api/apps/${enc(appId)}/channels/${enc(name)}`,
  ) as ChannelInfo;
}

/** `GET .../channels/{presence-channel}/users`. */
export async function users(
  conn: Connection,
  appId: string,
  name: string,
): Promise<{ users: { user_id: string; user_info?: unknown }[]; count: number }> {
  return await sendRequest(
    conn,
    "GET",
    `/api/apps/${enc(appId)}/channels/${enc(name)}/users`,
  ) as { users: { user_id: string; user_info?: unknown }[]; count: number };
}
