/**
 * React bindings (React 18+, a peer dependency: the server never loads this module):
 * `SwitchboardProvider` holds one connection for the tree; `useChannel`, `usePresence`,
 * `useObject` and `useThread` subscribe while mounted and clean up on unmount. No suspense,
 * and SSR-safe: nothing connects during a server render (sockets open in effects), so the
 * server renders the empty initial state. Details: docs/ai-sdk.md "React".
 */
import {
  createContext,
  createElement,
  type ReactNode,
  useCallback,
  useContext,
  useEffect,
  useRef,
  useState,
} from "react";
import {
  type ChannelSubscription,
  type ChatAuthCallback,
  ChatClient,
  type ChatMessage,
  type ChatSession,
  RealtimeClient,
  type RealtimeOptions,
  type RunInfo,
} from "../client/mod.ts";

/** Where and how the tree connects. */
export interface SwitchboardProviderProps
  extends Pick<RealtimeOptions, "endpoint" | "authEndpoint" | "authCallback" | "authHeaders"> {
  appKey: string;
  /** Token source for chat threads (defaults: none, for apps without user authentication). */
  chatAuthEndpoint?: string;
  chatAuthCallback?: ChatAuthCallback;
  children?: ReactNode;
}

/** The clients of one provider, created on first use (in an effect, never during render). */
class Clients {
  #realtime?: RealtimeClient;
  #chat?: ChatClient;
  #users = new Map<string, number>();
  constructor(readonly props: SwitchboardProviderProps) {}

  /**
   * The subscription to `channel`, shared by every hook on it; `release` leaves the channel
   * once its last user is gone.
   */
  channel(
    name: string,
    opts: { afterSerial?: number } = {},
  ): { sub: ChannelSubscription; release(): void } {
    const sub = this.realtime.subscribe(name, opts);
    this.#users.set(name, (this.#users.get(name) ?? 0) + 1);
    let released = false;
    return {
      sub,
      release: () => {
        if (released) return;
        released = true;
        const left = this.#users.get(name)! - 1;
        if (left > 0) return void this.#users.set(name, left);
        this.#users.delete(name);
        sub.unsubscribe();
      },
    };
  }

  /** The channel and object client. */
  get realtime(): RealtimeClient {
    const { appKey, endpoint, authEndpoint, authCallback, authHeaders } = this.props;
    return this.#realtime ??= new RealtimeClient(appKey, {
      endpoint,
      authEndpoint,
      authCallback,
      authHeaders,
    });
  }

  /** The chat client, on the same socket. */
  get chat(): ChatClient {
    return this.#chat ??= new ChatClient(this.props.appKey, {
      realtime: this.realtime,
      authEndpoint: this.props.chatAuthEndpoint,
      authCallback: this.props.chatAuthCallback,
    });
  }

  /** Closes the connection (provider unmount); a later use connects afresh. */
  close(): void {
    this.#realtime?.disconnect();
    this.#realtime = undefined;
    this.#chat = undefined;
    this.#users.clear();
  }
}

const Context = createContext<Clients | null>(null);

/** Provides one Switchboard connection to the hooks below it. */
export function SwitchboardProvider(props: SwitchboardProviderProps) {
  const ref = useRef<Clients | null>(null);
  if (
    ref.current === null || ref.current.props.appKey !== props.appKey ||
    ref.current.props.endpoint !== props.endpoint
  ) {
    ref.current = new Clients(props);
  }
  const clients = ref.current;
  useEffect(() => () => clients.close(), [clients]);
  return createElement(Context.Provider, { value: clients }, props.children);
}

function useClients(): Clients {
  const clients = useContext(Context);
  if (!clients) throw new Error("Switchboard hooks need a <SwitchboardProvider> above them.");
  return clients;
}

/** Join state of a subscription. */
export type Status = "idle" | "joining" | "joined" | "error";

/** One event received on a channel. */
export interface ChannelEvent {
  event: string;
  data: unknown;
  serial: number | null;
}

/** What `useChannel` returns. */
export interface ChannelState {
  status: Status;
  error?: string;
  /** The latest events (at most `keep`), oldest first. */
  events: ChannelEvent[];
  /** Publishes a client event on the channel. */
  publish(event: string, data?: Record<string, unknown>): Promise<{ serial: number | null }>;
}

/**
 * Subscribes to a channel while mounted. `events` lists the events named in `names` (all
 * events when omitted), the last `keep` (100); `onEvent` is called for each.
 */
export function useChannel(
  channel: string,
  options: {
    names?: string[];
    keep?: number;
    onEvent?: (e: ChannelEvent) => void;
    afterSerial?: number;
  } = {},
): ChannelState {
  const clients = useClients();
  const [state, setState] = useState<{ status: Status; error?: string; events: ChannelEvent[] }>({
    status: "idle",
    events: [],
  });
  const onEvent = useRef(options.onEvent);
  onEvent.current = options.onEvent;
  const keep = options.keep ?? 100;
  const names = options.names?.join("\n");
  const subRef = useRef<ChannelSubscription | null>(null);
  useEffect(() => {
    const wanted = names === undefined ? null : new Set(names.split("\n"));
    const { sub, release } = clients.channel(
      channel,
      options.afterSerial !== undefined ? { afterSerial: options.afterSerial } : {},
    );
    subRef.current = sub;
    let live = true;
    setState({ status: "joining", events: [] });
    sub.ready.then(
      () => live && setState((s) => ({ ...s, status: "joined" })),
      (err: Error) => live && setState((s) => ({ ...s, status: "error", error: err.message })),
    );
    const onAny = (event: string, data: unknown, meta: Record<string, unknown>) => {
      if (event.startsWith("presence:") || (wanted && !wanted.has(event))) return;
      const e: ChannelEvent = {
        event,
        data,
        serial: typeof meta.serial === "number" ? meta.serial : null,
      };
      onEvent.current?.(e);
      if (live) setState((s) => ({ ...s, events: [...s.events, e].slice(-keep) }));
    };
    sub.bindAll(onAny);
    return () => {
      live = false;
      subRef.current = null;
      sub.unbindAll(onAny);
      release();
    };
  }, [clients, channel, names, keep, options.afterSerial]);
  const publish = useCallback(async (event: string, data: Record<string, unknown> = {}) => {
    if (!subRef.current) throw new Error("not subscribed");
    return await subRef.current.publish(event, data);
  }, []);
  return { ...state, publish };
}

/** One presence member. */
export interface Member {
  user_id: string;
  user_info?: unknown;
}

/** Members of a `presence-` channel while mounted (the token source signs the membership). */
export function usePresence(
  channel: string,
): { status: Status; error?: string; members: Member[]; count: number } {
  const clients = useClients();
  const [state, setState] = useState<{ status: Status; error?: string; members: Member[] }>({
    status: "idle",
    members: [],
  });
  useEffect(() => {
    const { sub, release } = clients.channel(channel);
    let live = true;
    const refresh = (status?: Status) => {
      if (!live) return;
      const members = [...sub.members].map((
        [user_id, user_info],
      ) => (user_info === undefined ? { user_id } : { user_id, user_info }));
      setState((s) => ({ status: status ?? s.status, members }));
    };
    setState({ status: "joining", members: [] });
    sub.ready.then(
      () => refresh("joined"),
      (err: Error) => live && setState({ status: "error", error: err.message, members: [] }),
    );
    const onPresence = (event: string) => event.startsWith("presence:") && refresh();
    sub.bindAll(onPresence);
    return () => {
      live = false;
      sub.unbindAll(onPresence);
      release();
    };
  }, [clients, channel]);
  return { ...state, count: state.members.length };
}

/** A Durable Object's live state while mounted: `state` is slot -> value at `logId`. */
export function useObject(
  type: string,
  key: string,
): { status: Status; error?: string; state: Record<string, unknown>; logId: number } {
  const clients = useClients();
  const [snap, setSnap] = useState<
    { status: Status; error?: string; state: Record<string, unknown>; logId: number }
  >({ status: "idle", state: {}, logId: 0 });
  useEffect(() => {
    const obj = clients.realtime.object(type, key);
    setSnap({ status: "joining", state: {}, logId: 0 });
    const offChange = obj.on(
      "change",
      () => setSnap({ status: "joined", state: { ...obj.state }, logId: obj.logId }),
    );
    const offError = obj.on(
      "error",
      (reason: string) => setSnap((s) => ({ ...s, status: "error", error: reason })),
    );
    return () => {
      offChange();
      offError();
      obj.close();
    };
  }, [clients, type, key]);
  return snap;
}

/** What `useThread` returns: the selected branch, streaming text and the actions. */
export interface ThreadState {
  status: Status;
  error?: string;
  /** Messages of the selected branch, root first. */
  messages: ChatMessage[];
  /** Text streamed so far per running run id. */
  streaming: Record<string, string>;
  /** Every known run (pending, active, suspended ones are the live ones). */
  runs: RunInfo[];
  /** Runs waiting for a tool approval. */
  suspended: RunInfo[];
  send(content: unknown): Promise<void>;
  cancel(runId?: string): Promise<void>;
  regenerate(messageId: string): Promise<void>;
  edit(messageId: string, content: unknown): Promise<void>;
  /** Ids of the messages beside `parentId`'s child (branches), oldest first. */
  siblings(parentId: string | null): string[];
  selectBranch(parentId: string | null, messageId: string): void;
  approveTool(runId: string, toolCallId: string): Promise<void>;
  rejectTool(runId: string, toolCallId: string, reason?: string): Promise<void>;
}

const LIVE = new Set(["pending", "active", "suspended"]);

/** A chat thread while mounted, as `clientId` (a token's client_id wins). */
export function useThread(threadId: string, options: { clientId: string }): ThreadState {
  const clients = useClients();
  const [session, setSession] = useState<ChatSession | null>(null);
  const [status, setStatus] = useState<{ status: Status; error?: string }>({ status: "idle" });
  const [, setVersion] = useState(0);
  useEffect(() => {
    let live = true;
    let joined: ChatSession | null = null;
    setStatus({ status: "joining" });
    setSession(null);
    const bump = () => live && setVersion((v) => v + 1);
    clients.chat.connect(threadId, { clientId: options.clientId }).then(
      (s) => {
        joined = s;
        if (!live) return s.close();
        s.on("update", bump);
        setSession(s);
        setStatus({ status: "joined" });
      },
      (err: Error) => live && setStatus({ status: "error", error: err.message }),
    );
    return () => {
      live = false;
      joined?.off("update", bump);
      joined?.close();
    };
  }, [clients, threadId, options.clientId]);
  const view = session?.view;
  const need = () => {
    if (!view) throw new Error("the thread is not joined yet");
    return view;
  };
  const runs = view?.runs() ?? [];
  const streaming: Record<string, string> = {};
  for (const r of runs) if (LIVE.has(r.status)) streaming[r.runId] = view!.getStream(r.runId);
  return {
    ...status,
    messages: view?.getMessages() ?? [],
    streaming,
    runs,
    suspended: runs.filter((r) => r.status === "suspended"),
    send: async (content) => void await need().send(content),
    cancel: async (runId) => {
      const v = need();
      const id = runId ?? v.runs().filter((r) => LIVE.has(r.status)).at(-1)?.runId;
      if (id) await v.cancel(id);
    },
    regenerate: async (messageId) => void await need().regenerate(messageId),
    edit: async (messageId, content) => void await need().edit(messageId, content),
    siblings: (parentId) => view?.siblings(parentId) ?? [],
    selectBranch: (parentId, messageId) => need().selectSibling(parentId, messageId),
    approveTool: (runId, toolCallId) => need().approveTool(runId, toolCallId),
    rejectTool: (runId, toolCallId, reason) => need().rejectTool(runId, toolCallId, reason),
  };
}
