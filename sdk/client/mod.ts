/** Client SDK: RealtimeClient (channels) and the MessagePack serializer for the phoenix Socket. */
export { ChannelSubscription, RealtimeClient } from "./realtime.ts";
export type {
  AuthResult,
  ChannelAuthParams,
  EventCallback,
  RealtimeOptions,
  SubscribeOptions,
} from "./realtime.ts";
export { msgpackDecode, msgpackEncode, msgpackSocketOptions } from "./msgpack_serializer.ts";
