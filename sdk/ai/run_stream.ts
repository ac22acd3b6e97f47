/**
 * The `UIMessageChunk` stream of one run as a thread view sees it. Live: `start` (with the
 * run's message id), the streamed text as `text-delta`s, and, when the run suspends for a tool
 * approval, the tool input and an approval request, after which the stream finishes (as the AI
 * SDK's own streams do; the human's answer continues the run through `sendMessages`). At the
 * end: the final message's other parts (reasoning, tool outputs), then `finish`, or `error`,
 * or `abort` for a cancelled run.
 */
import type { UIMessageChunk } from "ai";
import type { ChatView, RunInfo } from "../client/mod.ts";
import { contentText, partsContent, type UIPart } from "./ui_message.ts";

/** Where a stream of a run starts. */
export interface RunStreamStart {
  /** Text already shown (a continuation after a tool approval): only what follows is sent. */
  textOffset?: number;
  /** Do not send the suspension already answered (a continuation). */
  afterApproval?: boolean;
}

/** See the module comment. */
export function runChunks(
  view: ChatView,
  runId: string,
  start: RunStreamStart = {},
): ReadableStream<UIMessageChunk> {
  let sent = start.textOffset ?? 0;
  let textId: string | null = null;
  let parts = 0;
  let suspendedSent = start.afterApproval ?? false;
  // Tool calls whose input the consumer already has (no second tool-input-available).
  const knownTools = new Set<string>();
  let ended: string | null = null;
  let closed = false;
  let stop = () => {};
  return new ReadableStream<UIMessageChunk>({
    start(controller) {
      const run = view.run(runId);
      if (start.afterApproval && run?.suspendedTool) knownTools.add(run.suspendedTool.toolCallId);
      const emit = (c: UIMessageChunk) => !closed && controller.enqueue(c);
      const endText = () => {
        if (textId) emit({ type: "text-end", id: textId });
        textId = null;
      };
      const text = (all: string) => {
        if (all.length <= sent) return;
        if (!textId) emit({ type: "text-start", id: textId = `${runId}:text:${++parts}` });
        emit({ type: "text-delta", id: textId, delta: all.slice(sent) });
        sent = all.length;
      };
      const finish = (c?: UIMessageChunk) => {
        endText();
        if (c) emit(c);
        closed = true;
        stop();
        controller.close();
      };
      const update = () => {
        if (closed) return;
        const r: RunInfo | undefined = view.run(runId);
        if (!r) return;
        if (!ended) text(view.getStream(runId));
        if (r.status === "suspended" && r.suspendedTool && !suspendedSent && !r.toolDecision) {
          suspendedSent = true;
          endText();
          const { toolCallId, toolName, args } = r.suspendedTool;
          knownTools.add(toolCallId);
          emit({ type: "tool-input-available", toolCallId, toolName, input: args });
          emit({ type: "tool-approval-request", approvalId: toolCallId, toolCallId });
          return finish({ type: "finish", finishReason: "tool-calls" });
        }
        if (
          ended === null &&
          (r.status === "complete" || r.status === "error" || r.status === "cancelled")
        ) ended = r.status;
        if (ended === "cancelled") return finish({ type: "abort", reason: "cancelled" });
        if (!ended) return;
        // run:end is followed by the finalised message: wait for it.
        const m = view.getChannelMessages().find((x) => x.messageId === r.messageId);
        if (!m || m.status === "streaming") return;
        const structured = partsContent(m.content);
        text(contentText(m.content));
        endText();
        for (const p of structured?.parts ?? []) {
          for (const c of chunksOfPart(p, knownTools)) emit(c);
        }
        if (ended === "error") {
          return finish({
            type: "error",
            errorText: structured?.error ??
              (contentText(m.content) || "the run ended with an error"),
          });
        }
        finish({ type: "finish", finishReason: "stop" });
      };
      view.on("update", update);
      stop = () => view.off("update", update);
      emit({ type: "start", messageId: run?.messageId });
      update();
    },
    cancel() {
      closed = true;
      stop();
    },
  });
}

/** Chunks that add a final part the live stream did not carry (text was streamed). */
function chunksOfPart(p: UIPart, knownTools: Set<string>): UIMessageChunk[] {
  if (p.type === "reasoning") {
    const id = `reasoning:${Math.random().toString(36).slice(2)}`;
    return [{ type: "reasoning-start", id }, { type: "reasoning-delta", id, delta: p.text }, {
      type: "reasoning-end",
      id,
    }];
  }
  const tool = p as {
    type: string;
    toolCallId?: string;
    state?: string;
    input?: unknown;
    output?: unknown;
    errorText?: string;
    toolName?: string;
  };
  if (tool.toolCallId && (tool.type.startsWith("tool-") || tool.type === "dynamic-tool")) {
    const toolName = tool.type === "dynamic-tool" ? tool.toolName ?? "tool" : tool.type.slice(5);
    const out: UIMessageChunk[] = knownTools.has(tool.toolCallId) ? [] : [{
      type: "tool-input-available",
      toolCallId: tool.toolCallId,
      toolName,
      input: tool.input,
    }];
    if (tool.state === "output-available") {
      out.push({ type: "tool-output-available", toolCallId: tool.toolCallId, output: tool.output });
    }
    if (tool.state === "output-error") {
      out.push({
        type: "tool-output-error",
        toolCallId: tool.toolCallId,
        errorText: tool.errorText ?? "error",
      });
    }
    if (tool.state === "output-denied") {
      out.push({ type: "tool-output-denied", toolCallId: tool.toolCallId });
    }
    return out;
  }
  return [];
}
