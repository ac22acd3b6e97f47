// The React hooks with React DOM and @testing-library/react on happy-dom, against a real
// server: live channel events, presence, a Durable Object, a chat thread with streaming,
// cancel, branches and tool approval; clean-up on unmount; a server render opens no socket.
import { closeDom } from "./dom.ts";
import assert from "node:assert/strict";
import { createElement as h, type ReactNode } from "react";
import { renderToString } from "react-dom/server";
import {
  act,
  cleanup,
  configure,
  fireEvent,
  render,
  screen,
  waitFor,
} from "@testing-library/react";
import {
  SwitchboardProvider,
  useChannel,
  useConnectionError,
  useObject,
  usePresence,
  useThread,
} from "../../sdk/react/mod.ts";
import { ChatClient } from "../../sdk/client/mod.ts";
import type { AuthResult, ChannelAuthParams } from "../../sdk/client/realtime.ts";
import { startInProcess, type TestServer } from "../helpers/in_process.ts";
import { call, sdkFor, trigger } from "../pubsub/helpers.ts";

configure({ asyncUtilTimeout: 5000 });
/** The DOM document (happy-dom's, installed by ./dom.ts). */
const dom = (globalThis as unknown as {
  document: { body: { appendChild<T>(n: T): T }; createElement(t: string): HTMLElement };
}).document;

/** The customer's token endpoint, in-process: channels, presence (as `who`) and objects. */
function authCallback(server: TestServer, who: string) {
  const sdk = sdkFor(server);
  return (p: ChannelAuthParams, done: (err: unknown, r?: AuthResult) => void) => {
    const out = typeof p.object_type === "string"
      ? sdk.authenticateObject(p.socket_id, p.object_type, String(p.object_key))
      : sdk.authenticate(
        p.socket_id,
        p.channel_name,
        p.channel_name.startsWith("presence-") ? { user_id: who } : undefined,
      );
    out.then((r) => done(null, r), done);
  };
}

function Channel() {
  const { status, events } = useChannel("news");
  return h(
    "div",
    null,
    h("p", null, `channel ${status}`),
    ...events.map((e) =>
      h("p", { key: e.serial }, `${e.event}:${JSON.stringify(e.data)}:${e.serial}`)
    ),
  );
}

/** A reloaded page replaying the channel from the start: every event the hook lists. */
function Replayed() {
  const { status, events } = useChannel<{ hello: { a: number }; bye: null }>("news", {
    afterSerial: 0,
  });
  return h(
    "div",
    null,
    h("p", null, `replayed ${status}`),
    h("p", null, `replayed events ${events.map((e) => e.event).join(",")}`),
  );
}

/** Every hook and the connection error, for a provider with a wrong app key. */
function Refused() {
  const channel = useChannel("news");
  const object = useObject("counter", "c1");
  const thread = useThread("t1", { clientId: "alice" });
  const error = useConnectionError();
  return h(
    "div",
    null,
    h("p", null, `refused channel ${channel.status}: ${channel.error ?? ""}`),
    h("p", null, `refused object ${object.status}: ${object.error ?? ""}`),
    h("p", null, `refused thread ${thread.status}: ${thread.error ?? ""}`),
    h("p", null, `connection error ${error?.reason ?? "none"} ${error?.status ?? ""}`),
  );
}

function Presence() {
  const { count, members } = usePresence("presence-room");
  return h("p", null, `present ${count}: ${members.map((m) => m.user_id).join(",")}`);
}

function Counter() {
  const { status, state, logId } = useObject("counter", "c1");
  return h("p", null, `object ${status} n=${String(state.n ?? 0)} at ${logId}`);
}

/** Refusals of the actions the page's buttons started (asserted empty at the end). */
const actionErrors: string[] = [];
const settle = (p: Promise<unknown>) =>
  void p.catch((e: { reason?: string }) => actionErrors.push(String(e?.reason ?? e)));

function Thread() {
  const t = useThread("t1", { clientId: "alice" });
  return h(
    "div",
    null,
    h("p", null, `thread ${t.status}`),
    ...t.messages.map((m) =>
      h(
        "p",
        { key: m.messageId },
        `${m.role}: ${
          m.status === "streaming" ? t.streaming[m.runId!] ?? "" : String(m.content)
        } [${m.status}]`,
      )
    ),
    ...t.suspended.map((r) =>
      h("button", {
        key: r.runId,
        onClick: () => settle(t.approveTool(r.runId, r.suspendedTool!.toolCallId)),
      }, `approve ${r.suspendedTool!.toolName}`)
    ),
    h("button", { onClick: () => settle(t.send("hello")) }, "send hello"),
    h("button", { onClick: () => settle(t.send("tool please")) }, "send tool"),
    h("button", { onClick: () => settle(t.send("slow")) }, "send slow"),
    h("button", { onClick: () => settle(t.cancel()) }, "stop"),
    h("button", { onClick: () => settle(t.regenerate(t.messages.at(-1)!.messageId)) }, "again"),
    h("p", null, `branches ${t.messages[0] ? t.siblings(t.messages[0].messageId).length : 0}`),
  );
}

/** An agent on t1: streams a fixed answer; "tool" asks for approval first; "slow" takes 3 s. */
async function agent(server: TestServer) {
  const client = new ChatClient("key1", { endpoint: `ws://127.0.0.1:${server.port}/socket` });
  const a = await client.connectAgent("t1", { secret: "secret1", agentId: "bot" });
  a.on(
    "run:pending",
    (run: { runId: string; parentId: string | null }) => void answer(run).catch(() => {}),
  );
  // The agent's own pushes may lose a race with a human's cancel (invalid_state): not a failure.
  const answer = async (run: { runId: string; parentId: string | null }) => {
    const prompt = String(
      a.view.getChannelMessages().find((m) => m.messageId === run.parentId)?.content ?? "",
    );
    await a.startRun(run.runId);
    if (prompt.includes("tool")) {
      await a.suspend(run.runId, { toolName: "lookup", args: { q: 1 } });
      await new Promise<void>((resolve) => a.on("tool:approved", () => resolve()));
      await a.resume(run.runId);
    }
    const words = prompt.includes("slow")
      ? Array.from({ length: 100 }, (_, i) => `s${i} `)
      : ["Hi ", "there"];
    for (const w of words) {
      if (a.view.run(run.runId)?.status === "cancelled") return;
      await a.token(run.runId, w).catch(() => {});
      if (prompt.includes("slow")) await new Promise((r) => setTimeout(r, 30));
    }
    if (a.view.run(run.runId)?.status !== "cancelled") {
      await a.end(run.runId, "complete").catch(() => {});
    }
  };
  // Agents answer runs that were pending before they joined too; none here.
  return client;
}

Deno.test({
  name: "React hooks: channel, presence, object and thread against a real server",
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const server = await startInProcess({ apps: [{ id: "app-1", key: "key1", secret: "secret1" }] });
  const endpoint = `ws://127.0.0.1:${server.port}/socket`;
  const bot = await agent(server);
  const app = (who: string, children: ReactNode) =>
    h(
      SwitchboardProvider,
      { appKey: "key1", endpoint, authCallback: authCallback(server, who) },
      children,
    );
  try {
    await t.step("a server render shows the initial state and opens no socket", () => {
      const Real = globalThis.WebSocket;
      let opened = 0;
      globalThis.WebSocket = class extends Real {
        constructor(...args: ConstructorParameters<typeof Real>) {
          super(...args);
          opened++;
        }
      };
      try {
        const html = renderToString(
          app("ssr", [h(Channel, { key: 1 }), h(Counter, { key: 2 }), h(Thread, { key: 3 })]),
        );
        assert.match(html, /channel idle/);
        assert.match(html, /object idle n=0 at 0/);
        assert.match(html, /thread idle/);
        assert.equal(opened, 0);
      } finally {
        globalThis.WebSocket = Real;
      }
    });

    await t.step("useChannel shows triggered events live; unmount leaves the channel", async () => {
      const view = render(app("u1", h(Channel)));
      await waitFor(() => screen.getByText("channel joined"));
      await trigger(server, "news", "hello", { a: 1 });
      await trigger(server, "news", "bye", null);
      await waitFor(() => screen.getByText("bye:null:2"));
      screen.getByText('hello:{"a":1}:1');
      view.unmount();
      await waitFor(async () => {
        const r = await call(server, "GET", "/api/apps/app-1/channels/news");
        assert.equal(r.body.occupied, false);
      });
    });

    await t.step(
      "useChannel with afterSerial 0 (a reload) lists the history and only the app's events",
      async () => {
        const view = render(app("u1", h(Replayed)));
        await waitFor(() => screen.getByText("replayed joined"));
        // The join's own `switchboard:subscribed` event is not among them.
        await waitFor(() => screen.getByText("replayed events hello,bye"));
        view.unmount();
      },
    );

    await t.step(
      "a wrong app key: every hook and useConnectionError report the refusal",
      async () => {
        const view = render(
          h(SwitchboardProvider, { appKey: "no-such-key", endpoint }, h(Refused)),
        );
        await waitFor(() => screen.getByText("connection error unknown app key 401"));
        await waitFor(() => screen.getByText(/^refused channel error: .*unknown app key/));
        await waitFor(() => screen.getByText("refused object error: unknown app key"));
        await waitFor(() => screen.getByText(/^refused thread error: .*unknown app key/));
        view.unmount();
      },
    );

    await t.step(
      "usePresence lists members of two trees; one leaving updates the other",
      async () => {
        const first = render(app("ann", h(Presence)));
        await waitFor(() => screen.getByText("present 1: ann"));
        const second = render(app("ben", h(Presence)), {
          container: dom.body.appendChild(dom.createElement("div")),
        });
        await waitFor(() => assert.equal(screen.getAllByText("present 2: ann,ben").length, 2));
        second.unmount();
        await waitFor(() => screen.getByText("present 1: ann"));
        first.unmount();
      },
    );

    await t.step("useObject follows a Durable Object's writes", async () => {
      const view = render(app("u1", h(Counter)));
      await waitFor(() => screen.getByText(/object joined/));
      const objects = sdkFor(server).objects("counter", "c1");
      await objects.increment("n", 2);
      await objects.increment("n", 3);
      await waitFor(() => screen.getByText("object joined n=5 at 2"));
      view.unmount();
    });

    await t.step(
      "useThread: send streams the answer; tool approval; regenerate makes a branch; stop cancels",
      async () => {
        const view = render(app("alice", h(Thread)));
        await waitFor(() => screen.getByText("thread joined"));
        await act(() => fireEvent.click(screen.getByText("send hello")));
        await waitFor(() => screen.getByText("assistant: Hi there [complete]"));
        screen.getByText("user: hello [complete]");

        await act(() => fireEvent.click(screen.getByText("again")));
        await waitFor(() => screen.getByText("branches 2"));

        await act(() => fireEvent.click(screen.getByText("send tool")));
        await waitFor(() => screen.getByText("approve lookup"));
        await act(() => fireEvent.click(screen.getByText("approve lookup")));
        await waitFor(() => {
          if (screen.queryByText("approve lookup")) {
            throw new Error("still waiting for the approval");
          }
        });
        await waitFor(() => screen.getByText("user: tool please [complete]"));
        await waitFor(() =>
          assert.equal(screen.getAllByText("assistant: Hi there [complete]").length, 2)
        );

        await act(() => fireEvent.click(screen.getByText("send slow")));
        await waitFor(() => screen.getByText(/assistant: s0 .*\[streaming\]/));
        await act(() => fireEvent.click(screen.getByText("stop")));
        await waitFor(() => screen.getByText(/assistant: s0 .*\[cancelled\]/));
        view.unmount();
        assert.deepEqual(actionErrors, [], "every button's action was accepted");
      },
    );
  } finally {
    cleanup();
    bot.disconnect();
    await server.stop();
    await closeDom();
  }
});
