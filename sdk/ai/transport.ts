/**
 * `SwitchboardChatTransport`: the AI SDK's `ChatTransport` over Switchboard chat threads
 * (docs/ai-sdk.md). The AI SDK's `chatId` is the thread id. A turn is a run
 * of the thread, so it survives reloads, second tabs and dropped connections: `sendMessages`
 * posts the new user message (or regenerates, or answers a tool approval) and returns the
 * run's chunk stream; aborting cancels the run; `reconnectToStream` gives the thread's active
 * run from its first chunk, or null.
 */
import type { ChatRequestOptions, ChatTransport, UIMessage, UIMessageChunk } from "ai";
import { ChatClient, type ChatClientOptions, type ChatSession, TERMINAL } from "../client/mod.ts";
import { runChunks } from "./run_stream.ts";
import { contentOf, toUIMessage } from "./ui_message.ts";

/** Options of the transport: where, which app, and who. */
export interface SwitchboardChatTransportOptions
  extends Pick<ChatClientOptions, "authEndpoint" | "authCallback" | "authHeaders" | "authParams"> {
  /** The socket URL, `ws://HOST:PORT/socket`. */
  endpoint: string;
  appKey: string;
  /** The human's client id (a token's client_id wins) [a random id per transport]. */
  clientId?: string;
}

/** See the module comment. */
export class SwitchboardChatTransport<UI_MESSAGE extends UIMessage = UIMessage>
  implements ChatTransport<UI_MESSAGE> {
  /** A reconnect replays the active run from its first chunk. */
  readonly resumeStreamIsReplay = true;
  readonly client: ChatClient;
  #clientId: string;
  #sessions = new Map<string, Promise<ChatSession>>();

  constructor(options: SwitchboardChatTransportOptions) {
    const { endpoint, appKey, clientId, ...auth } = options;
    this.client = new ChatClient(appKey, { endpoint, ...auth });
    this.#clientId = clientId ?? `ai-${crypto.randomUUID()}`;
  }

  /** The joined thread `chatId` (joined once, then shared by every call). */
  session(chatId: string): Promise<ChatSession> {
    let s = this.#sessions.get(chatId);
    if (!s) {
      s = this.client.connect(chatId, { clientId: this.#clientId });
      s.catch(() => this.#sessions.delete(chatId));
      this.#sessions.set(chatId, s);
    }
    return s;
  }

  /** The thread's messages of the selected branch as UIMessages (for `useChat({ messages })`). */
  async messages(chatId: string): Promise<UI_MESSAGE[]> {
    const view = (await this.session(chatId)).view;
    return view.getMessages().map((m) =>
      toUIMessage(m, m.runId ? view.getStream(m.runId) : undefined) as UI_MESSAGE
    );
  }

  /** Sends the new user message, regenerates, or answers a tool approval; streams the run. */
  async sendMessages(
    options: {
      trigger: "submit-message" | "regenerate-message";
      chatId: string;
      messageId: string | undefined;
      messages: UI_MESSAGE[];
      abortSignal: AbortSignal | undefined;
    } & ChatRequestOptions,
  ): Promise<ReadableStream<UIMessageChunk>> {
    const view = (await this.session(options.chatId)).view;
    const last = options.messages.at(-1);
    if (options.trigger === "regenerate-message") {
      const target = options.messageId ??
        [...view.getMessages()].reverse().find((m) => m.role === "assistant")?.messageId;
      if (!target) throw new Error("nothing to regenerate: the thread has no assistant message");
      const run = await view.regenerate(target);
      return this.#follow(view, run.runId, options.abortSignal);
    }
    if (last?.role === "assistant") {
      // An answered tool approval (useChat's addToolApprovalResponse) continues the run.
      const run = view.runs().find((r) =>
        r.messageId === last.id && r.status === "suspended" && r.suspendedTool
      );
      const tool = run &&
        last.parts.find((p) =>
          (p as { toolCallId?: string }).toolCallId === run.suspendedTool!.toolCallId
        ) as
          | { approval?: { approved?: boolean; reason?: string } }
          | undefined;
      if (!run || tool?.approval?.approved === undefined) {
        throw new Error("no tool approval to answer in the last message");
      }
      const textOffset = view.getStream(run.runId).length;
      if (tool.approval.approved) await view.approveTool(run.runId, run.suspendedTool!.toolCallId);
      else await view.rejectTool(run.runId, run.suspendedTool!.toolCallId, tool.approval.reason);
      return this.#follow(view, run.runId, options.abortSignal, {
        textOffset,
        afterApproval: true,
      });
    }
    if (!last || last.role !== "user") throw new Error("sendMessages needs a user message last");
    const previous = options.messages.at(-2)?.id;
    const known = previous !== undefined &&
      view.getChannelMessages().some((m) => m.messageId === previous);
    const run = await view.send(contentOf(last.parts, last.metadata), {
      messageId: last.id,
      ...(known ? { parentId: previous } : {}),
    });
    return this.#follow(view, run.runId, options.abortSignal);
  }

  /** The chunk stream of the thread's active run (from its first chunk), or null. */
  async reconnectToStream(
    options: { chatId: string; abortSignal?: AbortSignal } & ChatRequestOptions,
  ): Promise<ReadableStream<UIMessageChunk> | null> {
    const view = (await this.session(options.chatId)).view;
    const active = view.runs().filter((r) => !TERMINAL.has(r.status) && r.status !== "suspended")
      .at(-1);
    return active ? this.#follow(view, active.runId, options.abortSignal) : null;
  }

  /** Leaves every thread and closes the socket. */
  close(): void {
    for (const s of this.#sessions.values()) s.then((session) => session.close(), () => {});
    this.#sessions.clear();
    this.client.disconnect();
  }

  /** The run's stream; aborting `signal` cancels the run (and ends the stream with `abort`). */
  #follow(
    view: ChatSession["view"],
    runId: string,
    signal: AbortSignal | undefined,
    start?: Parameters<typeof runChunks>[2],
  ) {
    const stream = runChunks(view, runId, start);
    if (signal) {
      const cancel = () => {
        const run = view.run(runId);
        if (run && !TERMINAL.has(run.status)) view.cancel(runId).catch(() => {});
      };
      if (signal.aborted) cancel();
      else signal.addEventListener("abort", cancel, { once: true });
    }
    return stream;
  }
}
