/**
 * Client SDK (`@switchboard/client`): RealtimeClient (channels, objects), ChatClient (threads,
 * agents) and the MessagePack serializer for phoenix. Everything the React and AI SDK
 * bindings use comes from this module, so they can depend on the published package.
 */
export { ChannelSubscription, MAX_FRAME_BYTES, RealtimeClient } from "./realtime.ts";
export type {
  AnyEventCallback,
  AuthResult,
  ChannelAuthParams,
  EventCallback,
  EventMap,
  EventMeta,
  JoinReply,
  RealtimeOptions,
  SubscribeOptions,
  SubscriptionEvents,
  WebSocketConstructor,
} from "./realtime.ts";
export { ConnectionError } from "./connection.ts";
export type { ConnectionErrorListener } from "./connection.ts";
export { msgpackDecode, msgpackEncode, msgpackSocketOptions } from "./msgpack_serializer.ts";
export type { PhoenixMessage } from "./msgpack_serializer.ts";
export { ObjectSubscription } from "./object_subscription.ts";
export type {
  ObjectChange,
  ObjectState,
  ObjectSubscriptionOptions,
  SlotOp,
} from "./object_subscription.ts";
export { ChatClient } from "./chat_client.ts";
export type { ChatClientOptions } from "./chat_client.ts";
export { ChatAgent } from "./chat_agent.ts";
export type { ToolRequest } from "./chat_agent.ts";
export { ChatPushError, ChatSession } from "./chat_session.ts";
export { ActiveRun, ChatView } from "./chat_view.ts";
export { TERMINAL } from "./chat_types.ts";
export type {
  ChatEventHandler,
  ChatEvents,
  ChatMessage,
  MessageRole,
  MessageStatus,
  PushReply,
  RunInfo,
  RunStatus,
  SuspendedTool,
  ThreadSnapshot,
} from "./chat_types.ts";
export type { ChatAuthCallback, ChatAuthOptions, ChatAuthParams } from "./chat_auth.ts";
