/**
 * The example's page: `useChat` from @ai-sdk/react over SwitchboardChatTransport, drawn as a
 * chat (bubbles, a typing state, Stop while a run is live). Reload the page or open it in a
 * second tab: the answer being streamed continues there (resume: true); Stop cancels the
 * agent's model call; a weather question asks you to approve the tool. The thread id is the
 * URL's fragment (a new random one when there is none), so a reload keeps the conversation.
 */
import { createElement as h, type ReactNode, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { useChat } from "@ai-sdk/react";
import { lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from "ai";
import { SwitchboardChatTransport } from "../../sdk/ai/mod.ts";

// Browser globals, typed here (the repository type-checks as Deno, without the DOM library).
const { AI_CHAT: config, location, history, document } = globalThis as unknown as {
  AI_CHAT: { appKey: string; endpoint: string };
  location: { hash: string };
  history: { replaceState(state: unknown, unused: string, url: string): void };
  document: { getElementById(id: string): Element | null };
};

/** The thread of this page: the URL fragment, or a new random id written into it. */
function threadOfPage(): string {
  const raw = location.hash.slice(1);
  if (raw) {
    try {
      return decodeURIComponent(raw);
    } catch {
      return raw; // not %-encoded: the fragment as it is
    }
  }
  const id = crypto.randomUUID();
  history.replaceState(null, "", `#${id}`); // no extra history entry
  return id;
}

const threadId = threadOfPage();
const transport = new SwitchboardChatTransport({
  endpoint: config.endpoint,
  appKey: config.appKey,
  clientId: "you",
});

type Part = UIMessage["parts"][number];
type ToolPart = {
  state: string;
  approval?: { id: string };
  input?: unknown;
  output?: unknown;
  errorText?: string;
};

const TOOL_STATE: Record<string, string> = {
  "input-streaming": "preparing…",
  "input-available": "running…",
  "approval-requested": "needs your approval",
  "approval-responded": "answered",
  "output-available": "done",
  "output-denied": "denied",
  "output-error": "failed",
};

/** One bubble. Reasoning is drawn first: it arrives after the text while streaming and
 * before it once stored, so a fixed place keeps the bubble the same across a reload. */
function Bubble(
  props: { message: UIMessage; live: boolean; onApproval: (id: string, approved: boolean) => void },
) {
  const { message, live } = props;
  const parts = message.parts as Part[];
  const ordered = [
    ...parts.filter((p) => p.type === "reasoning"),
    ...parts.filter((p) => p.type !== "reasoning"),
  ];
  const children: ReactNode[] = ordered.map((p, i) => {
    if (p.type === "reasoning") {
      return p.text ? h("div", { key: i, className: "reasoning" }, p.text) : null;
    }
    if (p.type === "text") return h("span", { key: i, className: "text" }, p.text);
    if (p.type === "tool-weather") {
      const t = p as unknown as ToolPart;
      return h(
        "div",
        { key: i, className: "tool", "data-state": t.state },
        h("b", null, "weather"),
        ` ${(t.input as { city?: string } | undefined)?.city ?? ""}`,
        h("span", { className: "state" }, TOOL_STATE[t.state] ?? t.state),
        t.output !== undefined ? h("code", null, JSON.stringify(t.output)) : null,
        t.errorText ? h("code", null, t.errorText) : null,
        t.state === "approval-requested" && t.approval
          ? h(
            "div",
            null,
            h("button", {
              type: "button",
              className: "approve",
              onClick: () => props.onApproval(t.approval!.id, true),
            }, "Approve"),
            h("button", {
              type: "button",
              className: "secondary deny",
              onClick: () => props.onApproval(t.approval!.id, false),
            }, "Deny"),
          )
          : null,
      );
    }
    return null;
  });
  if (live) children.push(h("span", { key: "cursor", className: "cursor" }));
  return h("div", {
    className: `msg ${message.role}${live ? " streaming" : ""}`,
    "data-id": message.id,
  }, ...children);
}

function Chat({ initial }: { initial: UIMessage[] }) {
  const { messages, sendMessage, status, stop, regenerate, addToolApprovalResponse, error } =
    useChat({
      id: threadId,
      transport,
      messages: initial,
      resume: true,
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
  const [input, setInput] = useState("");
  const busy = status === "submitted" || status === "streaming";
  const last = messages[messages.length - 1];
  useEffect(() => {
    (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 1e9); // follow the newest
  }, [messages]);
  return h(
    "div",
    { className: "app" },
    h(
      "header",
      null,
      h("h1", null, "Switchboard + AI SDK"),
      h("span", { className: "thread", id: "thread", title: threadId }, `thread ${threadId}`),
      h("a", { href: "/", id: "new-chat" }, "New chat"),
      h("span", { id: "status", className: `pill ${status}` }, status),
    ),
    h(
      "main",
      { id: "log" },
      messages.length === 0
        ? h("p", { className: "empty" }, "Say something. Try: weather in Paris")
        : null,
      ...messages.map((m) =>
        h(Bubble, {
          key: m.id,
          message: m,
          live: busy && m === last && m.role === "assistant",
          onApproval: (id, approved) => void addToolApprovalResponse({ id, approved }),
        })
      ),
      status === "submitted" && last?.role !== "assistant"
        ? h(
          "div",
          { className: "msg assistant typing", "aria-label": "the agent is typing" },
          h("span"),
          h("span"),
          h("span"),
        )
        : null,
      !busy && last?.role === "assistant"
        ? h(
          "div",
          { className: "actions" },
          h("button", {
            type: "button",
            id: "again",
            className: "secondary",
            onClick: () => void regenerate(),
          }, "Regenerate"),
        )
        : null,
    ),
    error ? h("p", { id: "error" }, error.message) : null,
    h(
      "form",
      {
        onSubmit: (e: { preventDefault(): void }) => {
          e.preventDefault();
          if (!input.trim() || busy) return;
          void sendMessage({ text: input });
          setInput("");
        },
      },
      h("input", {
        id: "input",
        value: input,
        autoFocus: true,
        placeholder: "Message the agent (try: weather in Paris)",
        onChange: (e: { target: { value: string } }) => setInput(e.target.value),
      }),
      h("button", { type: "submit", id: "send", disabled: busy || !input.trim() }, "Send"),
      h("button", {
        type: "button",
        id: "stop",
        className: "secondary",
        disabled: !busy,
        onClick: () => void stop(),
      }, "Stop"),
    ),
  );
}

function App() {
  const [initial, setInitial] = useState<UIMessage[] | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  useEffect(() => {
    // Ask the example server to put its agent on this thread, then load the stored messages.
    fetch("/api/agent", { method: "POST", body: JSON.stringify({ threadId }) })
      .then(async (res) => {
        if (!res.ok) throw new Error(await res.text());
      })
      .then(() => transport.messages(threadId))
      .then(setInitial, (err: Error) => setFailure(err.message));
  }, []);
  if (failure) return h("p", { id: "error" }, failure);
  return initial
    ? h(Chat, { initial })
    : h("p", { className: "empty", id: "status" }, "connecting…");
}

createRoot(document.getElementById("root")!).render(h(App));
