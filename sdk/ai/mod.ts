/**
 * Switchboard for the Vercel AI SDK (docs/ai-sdk.md): `SwitchboardChatTransport` for
 * `useChat` / `Chat` in the browser, `pipeUIMessageStream` for agents using `streamText`.
 * Needs the `ai` package beside it; the server does not.
 */
export { SwitchboardChatTransport, type SwitchboardChatTransportOptions } from "./transport.ts";
export {
  cancelSignal,
  type PipeOptions,
  type PipeOutcome,
  pipeUIMessageStream,
  type ToolDecision,
} from "./pipe.ts";
export { runChunks } from "./run_stream.ts";
export {
  contentOf,
  contentText,
  type PartsContent,
  partsContent,
  toUIMessage,
} from "./ui_message.ts";
