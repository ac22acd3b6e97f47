/**
 * The stream layer: between the ordered log and the products, it owns ordering (append then
 * publish in position order, the gap-free join with bounded replay, purge with epochs) and
 * topic naming. Products are thin faces over it.
 */
export type { LogRecord, Prepared, PublishFn, StreamLog } from "./stream_log.ts";
export { joinStream, type ReplayOutcome, type StreamJoinSpec } from "./join.ts";
export {
  isRefusal,
  LOG_ID,
  type PositionWire,
  readPosition,
  replyFields,
  SERIAL,
  type StreamPosition,
} from "./position.ts";
export { type EventsOf, type ProductJoin, ProductStream } from "./product_stream.ts";
export {
  channelAddress,
  objectAddress,
  objectName,
  objectOfStream,
  objectStreamPrefix,
  type StreamAddress,
  threadAddress,
  Topic,
} from "./names.ts";
