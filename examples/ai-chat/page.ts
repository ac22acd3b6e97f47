/**
 * The example's page: `useChat` from @ai-sdk/react over SwitchboardChatTransport. Reload the
 * page or open it in a second tab: the answer being streamed continues there (resume: true);
 * Stop cancels the agent's model call; a weather question asks you to approve the tool.
 */
import { createElement as h, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { useChat } from "@ai-sdk/react";
import { lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from "ai";
import { SwitchboardChatTransport } from "../../sdk/ai/mod.ts";

// Browser globals, typed here (the repository type-checks as Deno, without the DOM library).
const { AI_CHAT: config, location, document } = globalThis as unknown as {
  AI_CHAT: { appKey: string; endpoint: string };
  location: { hash: string };
  document: { getElementById(id: string): Element | null };
};
const threadId = location.hash.slice(1) || (location.hash = crypto.randomUUID()).slice(1);
const transport = new SwitchboardChatTransport({ endpoint: config.endpoint, appKey: config.appKey, clientId: "you" });

function Chat({ initial }: { initial: UIMessage[] }) {
  const { messages, sendMessage, status, stop, regenerate, addToolApprovalResponse, error } = useChat({
    id: threadId,
    transport,
    messages: initial,
    resume: true,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [input, setInput] = useState("");
  return h("main", null,
    h("p", { id: "status" }, `thread ${threadId} · ${status}${error ? ` · ${error.message}` : ""}`),
    ...messages.map((m) =>
      h("div", { key: m.id, className: `msg ${m.role}` },
        h("b", null, m.role === "user" ? "You: " : "Agent: "),
        ...m.parts.map((p, i) => {
          if (p.type === "text") return h("span", { key: i, className: "text" }, p.text);
          if (p.type === "reasoning") return h("em", { key: i, className: "reasoning" }, ` (${p.text}) `);
          if (p.type === "tool-weather") {
            const t = p as { state: string; approval?: { id: string }; input?: unknown; output?: unknown };
            if (t.state === "approval-requested") {
              return h("span", { key: i, className: "approval" }, `weather ${JSON.stringify(t.input)}? `,
                h("button", { onClick: () => addToolApprovalResponse({ id: t.approval!.id, approved: true }) }, "Approve"),
                h("button", { onClick: () => addToolApprovalResponse({ id: t.approval!.id, approved: false }) }, "Deny"));
            }
            return h("code", { key: i, className: "tool" }, ` [weather: ${t.state}${t.output ? ` ${JSON.stringify(t.output)}` : ""}] `);
          }
          return null;
        })),
    ),
    h("form", {
      onSubmit: (e: { preventDefault(): void }) => {
        e.preventDefault();
        if (input.trim()) void sendMessage({ text: input });
        setInput("");
      },
    },
      h("input", { id: "input", value: input, placeholder: "Say something (try: weather in Paris)", onChange: (e: { target: { value: string } }) => setInput(e.target.value) }),
      h("button", { type: "submit", id: "send" }, "Send"),
      h("button", { type: "button", id: "stop", onClick: () => void stop() }, "Stop"),
      h("button", { type: "button", id: "again", onClick: () => void regenerate() }, "Regenerate")),
  );
}

function App() {
  const [initial, setInitial] = useState<UIMessage[] | null>(null);
  useEffect(() => {
    // Ask the example server to put its agent on this thread, then load the stored messages.
    fetch("/api/agent", { method: "POST", body: JSON.stringify({ threadId }) })
      .then(() => transport.messages(threadId))
      .then(setInitial);
  }, []);
  return initial ? h(Chat, { initial }) : h("p", { id: "status" }, "connecting…");
}

createRoot(document.getElementById("root")!).render(h(App));
