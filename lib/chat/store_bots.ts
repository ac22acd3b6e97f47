/** Bot service functions. Bots are per-app records outside any thread log. */
import type { App } from "../config/apps.ts";
import type { Storage } from "../store/storage.ts";
import { conflict, notFound } from "./errors.ts";
import type { Collection, Page, PageQuery } from "./store_collection.ts";
import { type Bot, BOT_EVENT_TYPES, type BotEventType } from "./types.ts";

/** Input of `create`. */
export interface NewBot {
  id?: string;
  name: string;
  webhookUrl?: string | null;
  events?: BotEventType[];
  metadata?: Record<string, unknown>;
}

/** A fresh random webhook secret: `whsec_` + 32 random bytes as hex. */
export function newWebhookSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return "whsec_" + [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Bots keyed `[appId, seq]`. */
export class BotStore {
  constructor(readonly rows: Collection<Bot>, private env: Storage) {}

  /** The bot, or undefined. */
  get(app: App, id: string): Bot | undefined {
    return this.rows.get(app.id, [], id);
  }

  /** The bot or a 404 ApiError. */
  require(app: App, id: string): Bot {
    const b = this.get(app, id);
    if (!b) throw notFound("Bot", id);
    return b;
  }

  /** One page of bots in creation order. */
  list(app: App, q: PageQuery): Page<Bot> {
    return this.rows.page(app.id, [], q);
  }

  /** Creates a bot with a fresh webhook secret (409 on a duplicate id). */
  async create(app: App, input: NewBot): Promise<Bot> {
    const now = Date.now();
    const bot: Bot = {
      id: input.id ?? crypto.randomUUID(),
      appId: app.id,
      name: input.name,
      webhookUrl: input.webhookUrl ?? null,
      events: input.events ?? [...BOT_EVENT_TYPES],
      metadata: input.metadata ?? {},
      webhookSecret: newWebhookSecret(),
      createdAt: now,
      updatedAt: now,
    };
    return await this.env.transaction(() => {
      if (this.get(app, bot.id)) throw conflict(`Bot ${bot.id} already exists.`);
      this.rows.insert(app.id, [], bot);
      return bot;
    });
  }

  /** Updates name, webhook URL, events or metadata. */
  update(
    app: App,
    id: string,
    patch: Partial<Pick<Bot, "name" | "webhookUrl" | "events" | "metadata">>,
  ): Promise<Bot> {
    return this.#replace(app, id, (b) => ({ ...b, ...patch }));
  }

  /** Replaces the webhook secret; the new one is returned to the caller once. */
  rotateSecret(app: App, id: string): Promise<Bot> {
    return this.#replace(app, id, (b) => ({ ...b, webhookSecret: newWebhookSecret() }));
  }

  /** Deletes the bot. Threads keep their `botId`; deliveries to it stop. */
  async delete(app: App, id: string): Promise<void> {
    await this.env.transaction(() => {
      this.require(app, id);
      this.rows.remove(app.id, [], id);
    });
  }

  async #replace(app: App, id: string, fn: (b: Bot) => Bot): Promise<Bot> {
    return await this.env.transaction(() => {
      const next = { ...fn(this.require(app, id)), updatedAt: Date.now() };
      this.rows.replace(app.id, [], next);
      return next;
    });
  }
}
