/** Client SDK: RealtimeClient (channels, objects) and the MessagePack serializer for phoenix. */
export { ChannelSubscription, RealtimeClient } from "./realtime.ts";
export type {
  AuthResult,
  ChannelAuthParams,
  EventCallback,
  RealtimeOptions,
  SubscribeOptions,
} from "./realtime.ts";
export { msgpackDecode, msgpackEncode, msgpackSocketOptions } from "./msgpack_serializer.ts";
export { ObjectSubscription } from "./object_subscription.ts";
export type { ObjectChange } from "./object_subscription.ts";
export { ChatClient } from "./chat_client.ts";
