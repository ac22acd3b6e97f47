/**
 * zod schemas of the chat REST surface. The same schemas validate requests and describe the
 * routes in the OpenAPI 3.1 document (GET /api/chat/open_api). Attribute names are snake_case;
 * times are unix milliseconds.
 */
import { z } from "@hono/zod-openapi";
import { BOT_EVENT_TYPES, PARTICIPANT_ROLES, THREAD_STATUSES } from "../types.ts";
import { byteLength, jsonBytes, MAX_ID_BYTES, MAX_MESSAGE_CONTENT_BYTES } from "../../limits.ts";

const Metadata = z.record(z.string(), z.unknown());
/** An id: it becomes part of a storage key, so it is bounded in UTF-8 bytes. */
const Id = z.string().min(1).refine((s) => byteLength(s) <= MAX_ID_BYTES, {
  message: `must be at most ${MAX_ID_BYTES} bytes (UTF-8)`,
});
/** Message content: any JSON, at most MAX_MESSAGE_CONTENT_BYTES as JSON. */
const Content = z.unknown().refine((v) => jsonBytes(v) <= MAX_MESSAGE_CONTENT_BYTES, {
  message: `content must be at most ${MAX_MESSAGE_CONTENT_BYTES} bytes as JSON`,
});
const NullableId = Id.nullable();

/** `{ data: { type, id } }` relationship linkage, or null to clear. */
export const linkage = (type: string) =>
  z.object({ data: z.object({ type: z.literal(type), id: Id }).nullable() });

/** Wraps a resource object schema into `{ data }`. */
const doc = <T extends z.ZodTypeAny>(data: T) => z.object({ data });

// ---- query parameters ----

/** `page[size]` (1..100, default 20), `page[after]`, `page[before]` (resource ids). */
export const PageQuery = z.object({
  "page[size]": z.coerce.number().int().min(1).max(100).optional().openapi({
    description: "Page size, default 20, at most 100.",
  }),
  "page[after]": Id.optional().openapi({
    description: "Cursor: the id of the last item of the previous page (see links.next).",
  }),
  "page[before]": Id.optional().openapi({
    description: "Cursor: the id of the first item of the next page (see links.prev).",
  }),
});

const Include = z.enum(["participants"]).optional().openapi({
  description: "Compound document: `participants` adds the thread's participants to `included`.",
});

/** Thread list query: pagination, filters, include. */
export const ThreadListQuery = PageQuery.extend({
  "filter[status]": z.string().regex(
    new RegExp(`^(${THREAD_STATUSES.join("|")})(,(${THREAD_STATUSES.join("|")}))*$`),
    "filter[status] must be a comma-separated list of thread statuses.",
  ).optional(),
  "filter[participant]": Id.optional().openapi({
    description: "A participant id or client id that takes part in the thread.",
  }),
  "filter[bot]": Id.optional(),
  include: Include,
});

/** Single-thread query. */
export const ThreadGetQuery = z.object({ include: Include });

// ---- path parameters ----

export const IdParam = z.object({ id: Id });
export const TidParam = z.object({ tid: Id });
export const TidIdParam = z.object({ tid: Id, id: Id });
export const TidMidParam = z.object({ tid: Id, mid: Id });
export const TidMidIdParam = z.object({ tid: Id, mid: Id, id: Id });

// ---- request bodies ----

export const ThreadCreateBody = doc(z.object({
  type: z.literal("threads"),
  id: Id.optional(),
  attributes: z.object({
    title: z.string().max(1000).nullable().optional(),
    metadata: Metadata.optional(),
  }).optional(),
  relationships: z.object({ bot: linkage("bots").optional() }).optional(),
})).openapi("ThreadCreateRequest");

export const ThreadPatchBody = doc(z.object({
  type: z.literal("threads"),
  id: Id.optional(),
  attributes: z.object({
    title: z.string().max(1000).nullable().optional(),
    metadata: Metadata.optional(),
    status: z.enum(THREAD_STATUSES as [string, ...string[]]).optional().openapi({
      description: "Only `open` (reopen a resolved thread); other statuses have action routes.",
    }),
  }).optional(),
})).openapi("ThreadPatchRequest");

export const AssignBotBody = doc(z.object({
  type: z.literal("threads"),
  id: Id.optional(),
  attributes: z.object({ bot_id: Id.optional() }).optional(),
  relationships: z.object({ bot: linkage("bots").optional() }).optional(),
})).openapi("AssignBotRequest");

export const MessageCreateBody = doc(z.object({
  type: z.literal("messages"),
  id: Id.openapi({ description: "Caller-chosen message id (the live messageId)." }),
  attributes: z.object({
    role: z.enum(["user", "assistant", "system"]),
    content: Content.optional(),
    status: z.enum(["streaming", "complete", "cancelled", "error"]).optional(),
    run_id: NullableId.optional(),
    owner_client_id: NullableId.optional(),
    fork_of: NullableId.optional(),
    msg_regenerate: NullableId.optional(),
    parent_id: NullableId.optional(),
    author_participant_id: NullableId.optional(),
    bot_id: NullableId.optional(),
  }),
  relationships: z.object({
    parent: linkage("messages").optional(),
    author: linkage("participants").optional(),
    bot: linkage("bots").optional(),
  }).optional(),
})).openapi("MessageCreateRequest");

export const MessageEditBody = doc(z.object({
  type: z.literal("messages"),
  id: Id.optional(),
  attributes: z.object({ content: Content }).refine((a) => a.content !== undefined, {
    message: "content is required.",
    path: ["content"],
  }),
})).openapi("MessageEditRequest");

export const ParticipantCreateBody = doc(z.object({
  type: z.literal("participants"),
  id: Id.optional(),
  attributes: z.object({
    client_id: NullableId.optional(),
    display_name: z.string().max(200).nullable().optional(),
    role: z.enum(PARTICIPANT_ROLES as [string, ...string[]]).optional(),
    metadata: Metadata.optional(),
  }).optional(),
  relationships: z.object({ bot: linkage("bots").optional() }).optional(),
})).openapi("ParticipantCreateRequest");

export const MarkReadBody = doc(z.object({
  type: z.literal("participants"),
  id: Id.optional(),
  attributes: z.object({ last_read_message_id: Id }),
})).openapi("MarkReadRequest");

export const RoleBody = doc(z.object({
  type: z.literal("participants"),
  id: Id.optional(),
  attributes: z.object({ role: z.enum(PARTICIPANT_ROLES as [string, ...string[]]) }),
})).openapi("ParticipantRoleRequest");

export const ReactionCreateBody = doc(z.object({
  type: z.literal("reactions"),
  attributes: z.object({
    emoji: z.string().min(1).max(64),
    participant_id: Id.optional(),
  }),
  relationships: z.object({ participant: linkage("participants").optional() }).optional(),
})).openapi("ReactionCreateRequest");

const BotAttributes = {
  name: z.string().min(1).max(200),
  webhook_url: z.url({ protocol: /^https?$/ }).nullable().optional(),
  events: z.array(z.enum(BOT_EVENT_TYPES as [string, ...string[]])).optional(),
  metadata: Metadata.optional(),
};

export const BotCreateBody = doc(z.object({
  type: z.literal("bots"),
  id: Id.optional(),
  attributes: z.object(BotAttributes),
})).openapi("BotCreateRequest");

export const BotPatchBody = doc(z.object({
  type: z.literal("bots"),
  id: Id.optional(),
  attributes: z.object({ ...BotAttributes, name: BotAttributes.name.optional() }).optional(),
})).openapi("BotPatchRequest");

// ---- response documents (for the OpenAPI description) ----

const Links = z.record(z.string(), z.string().nullable());

const resource = (name: string, type: string, attributes: z.ZodTypeAny) =>
  z.object({
    type: z.literal(type),
    id: z.string(),
    attributes,
    relationships: z.record(z.string(), z.unknown()).optional(),
    links: Links.optional(),
  }).openapi(name);

const Ms = z.number().int();
const MsOrNull = Ms.nullable();

export const ThreadResource = resource(
  "Thread",
  "threads",
  z.object({
    title: z.string().nullable(),
    status: z.enum(THREAD_STATUSES as [string, ...string[]]),
    metadata: Metadata,
    created_at: Ms,
    updated_at: Ms,
    last_message_at: MsOrNull,
    log_id: Ms,
  }),
);

export const MessageResource = resource(
  "Message",
  "messages",
  z.object({
    role: z.string(),
    content: Content,
    status: z.string(),
    run_id: z.string().nullable(),
    owner_client_id: z.string().nullable(),
    parent_id: z.string().nullable(),
    fork_of: z.string().nullable(),
    msg_regenerate: z.string().nullable(),
    created_at: Ms,
    updated_at: Ms,
    edited_at: MsOrNull,
    deleted_at: MsOrNull,
  }),
);

export const ParticipantResource = resource(
  "Participant",
  "participants",
  z.object({
    client_id: z.string().nullable(),
    display_name: z.string().nullable(),
    role: z.string(),
    metadata: Metadata,
    last_read_message_id: z.string().nullable(),
    last_read_at: MsOrNull,
    created_at: Ms,
    updated_at: Ms,
  }),
);

export const ReactionResource = resource(
  "Reaction",
  "reactions",
  z.object({
    emoji: z.string(),
    created_at: Ms,
  }),
);

export const BotResource = resource(
  "Bot",
  "bots",
  z.object({
    name: z.string(),
    webhook_url: z.string().nullable(),
    events: z.array(z.string()),
    metadata: Metadata,
    created_at: Ms,
    updated_at: Ms,
  }),
);

/** `{ data, links?, meta?, included? }` for one resource. */
export const single = (name: string, r: z.ZodTypeAny) =>
  z.object({
    data: r,
    links: Links.optional(),
    meta: z.record(z.string(), z.unknown()).optional(),
    included: z.array(z.unknown()).optional(),
  }).openapi(name);

/** `{ data: [...], links: { self, next?, prev? }, meta }` for a collection. */
export const list = (name: string, r: z.ZodTypeAny) =>
  z.object({
    data: z.array(r),
    links: Links,
    meta: z.record(z.string(), z.unknown()).optional(),
    included: z.array(z.unknown()).optional(),
  }).openapi(name);

export const ErrorDocument = z.object({
  errors: z.array(z.object({
    status: z.string(),
    title: z.string(),
    detail: z.string().optional(),
    source: z.record(z.string(), z.string()).optional(),
  })),
}).openapi("Errors");
