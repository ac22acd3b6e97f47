/**
 * Server SDK: `class Switchboard`. Product clients (trigger, objects, chat REST) live in their
 * own files and build on the protected `request()` helper.
 */
import { mintFastToken as mint } from "../shared/fast_token.ts";
import {
  type AuthResult,
  channelGrant,
  chatGrant,
  checkCapabilities,
  type Connection,
  grantCapabilities,
  type Grants,
  objectGrant,
  sendRequest,
} from "./auth.ts";

import * as channelsApi from "./channels.ts";
import { ObjectsClient } from "./objects.ts";
import { ChatRestClient } from "./chat.ts";
import { verifyChannelWebhook } from "./webhooks.ts";

export { SwitchboardError } from "./auth.ts";
export { verifyChannelWebhook, verifyWebhook } from "./webhooks.ts";
export { ChatRestClient } from "./chat.ts";
export { ObjectsClient } from "./objects.ts";
export type { JsonValue } from "./objects.ts";
export type {
  BotInput,
  Document,
  ListDocument,
  MessageInput,
  PageOptions,
  Resource,
  ThreadListOptions,
} from "./chat.ts";
export type {
  ChannelEvent,
  ChannelInfo,
  ChannelsOptions,
  HistoryItem,
  HistoryOptions,
  HistoryPage,
} from "./channels.ts";
export type { AuthResult, Grants } from "./auth.ts";

/** Options of `new Switchboard()`; `appId` defaults to `appKey` (both are accepted in paths). */
export interface SwitchboardOptions {
  baseUrl: string;
  appId?: string;
  appKey: string;
  appSecret: string;
}

/** The server SDK: issues capability tokens and calls the backend HTTP API with credentials. */
export class Switchboard {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:4000`. */
  readonly baseUrl: string;
  /** The `{app_id}` path segment to use (App ID, or the App Key when no id was given). */
  readonly appId: string;
  /** The App Key. */
  readonly appKey: string;
  readonly #secret: string;

  /** Throws when baseUrl, appKey or appSecret is missing or empty. */
  constructor(options: SwitchboardOptions) {
    for (const name of ["baseUrl", "appKey", "appSecret"] as const) {
      if (typeof options?.[name] !== "string" || options[name] === "") {
        throw new TypeError(`new Switchboard() needs a non-empty ${name}.`);
      }
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.appKey = options.appKey;
    this.appId = options.appId ?? options.appKey;
    this.#secret = options.appSecret;
  }

  /** The App Secret, for product clients that present it (agent and server joins). */
  protected get appSecret(): string {
    return this.#secret;
  }

  /** Calls the backend with the credential headers; parsed JSON or throws `SwitchboardError`. */
  protected request(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<unknown> {
    const conn: Connection = {
      baseUrl: this.baseUrl,
      appKey: this.appKey,
      appSecret: this.#secret,
    };
    return sendRequest(conn, method, path, body, headers);
  }

  /** Mints a fast-path token (no round trip, no expiry) for the given capabilities. */
  async mintFastToken(
    socketId: string,
    capabilities: string[],
    clientId?: string,
  ): Promise<string> {
    return await mint({ key: this.appKey, secret: this.#secret }, socketId, capabilities, clientId);
  }

  /**
   * Token for a `private-` or `presence-` channel. Presence adds `channel:presence`, binds the
   * token's client id to `String(userData.user_id)` and returns `channel_data`.
   */
  async authenticate(
    socketId: string,
    channelName: string,
    userData?: Record<string, unknown>,
  ): Promise<AuthResult> {
    const grant = channelGrant(channelName, userData);
    const auth = await this.mintFastToken(socketId, grant.capabilities, grant.clientId);
    return grant.channelData === undefined ? { auth } : { auth, channel_data: grant.channelData };
  }

  /** Fast-path token with `object:read:{type}/{key}`. */
  async authenticateObject(socketId: string, type: string, key: string): Promise<AuthResult> {
    return { auth: await this.mintFastToken(socketId, objectGrant(type, key)) };
  }

  /** Fast-path token for several grants at once (de-duplicated). */
  async authorize(socketId: string, grants: Grants, clientId?: string): Promise<AuthResult> {
    return { auth: await this.mintFastToken(socketId, grantCapabilities(grants), clientId) };
  }

  /** JWT for one chat thread via `POST /api/auth`; no verbs means the default client set. */
  async authenticateChat(
    socketId: string,
    threadId: string,
    clientId: string,
    verbs?: string[],
  ): Promise<AuthResult> {
    return await this.#issue(socketId, clientId, chatGrant(threadId, verbs));
  }

  /** JWT for arbitrary grants via `POST /api/auth`. */
  async issueToken(socketId: string, clientId: string, grants: Grants): Promise<AuthResult> {
    return await this.#issue(socketId, clientId, grantCapabilities(grants));
  }

  /**
   * Client for the Durable Object `{type}/{key}` of this app (docs/objects.md). Throws a
   * TypeError for an empty type or key, or a type holding `/` or `:`.
   */
  objects(type: string, key: string): ObjectsClient {
    const conn = { baseUrl: this.baseUrl, appKey: this.appKey, appSecret: this.#secret };
    return new ObjectsClient(conn, this.appId, type, key);
  }

  /** Client for the chat REST API (`/api/chat`, docs/chat-rest.md). */
  get chat(): ChatRestClient {
    return new ChatRestClient({
      baseUrl: this.baseUrl,
      appKey: this.appKey,
      appSecret: this.#secret,
    });
  }

  /** Publishes one event on a channel; resolves with `{ serial }` (null on `ephemeral-`). */
  trigger(channel: string, event: string, data?: unknown): Promise<{ serial: number | null }> {
    return channelsApi.trigger(this.#channelConn(), this.appId, channel, event, data);
  }

  /** Publishes up to 100 events, atomic per channel; `{ serials }` in request order. */
  push(events: channelsApi.ChannelEvent[]): Promise<{ serials: (number | null)[] }> {
    return channelsApi.push(this.#channelConn(), this.appId, events);
  }

  /** One page of a channel's retained history, oldest first. */
  history(channel: string, opts?: channelsApi.HistoryOptions): Promise<channelsApi.HistoryPage> {
    return channelsApi.history(this.#channelConn(), this.appId, channel, opts);
  }

  /** Occupied channels, optionally filtered by prefix, with the requested info. */
  channels(opts?: channelsApi.ChannelsOptions) {
    return channelsApi.channels(this.#channelConn(), this.appId, opts);
  }

  /** One channel's info: occupied, subscription_count, serial (and user_count for presence). */
  channel(name: string): Promise<channelsApi.ChannelInfo> {
    return channelsApi.channel(this.#channelConn(), this.appId, name);
  }

  /** Members of a presence channel. */
  users(name: string) {
    return channelsApi.users(this.#channelConn(), this.appId, name);
  }

  /**
   * Whether a channel webhook request (Pusher-style, docs/pusher.md "Webhooks") came from this
   * app's server: pass the `X-Pusher-Key` and `X-Pusher-Signature` headers and the raw body.
   */
  verifyChannelWebhook(
    headers: { key: string | null | undefined; signature: string | null | undefined },
    rawBody: string,
  ): Promise<boolean> {
    return verifyChannelWebhook({ key: this.appKey, secret: this.#secret }, headers, rawBody);
  }

  #channelConn(): Connection {
    return { baseUrl: this.baseUrl, appKey: this.appKey, appSecret: this.#secret };
  }

  async #issue(socketId: string, clientId: string, capabilities: string[]): Promise<AuthResult> {
    const body = {
      socket_id: socketId,
      client_id: clientId,
      capabilities: checkCapabilities(capabilities),
    };
    const res = await this.request("POST", "/api/auth", body) as { auth: string };
    return { auth: res.auth };
  }
}
