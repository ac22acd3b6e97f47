/**
 * React bindings (React 18+, a peer dependency: the server never loads this module):
 * `SwitchboardProvider` holds one connection for the tree; `useChannel`, `usePresence`,
 * `useObject` and `useThread` subscribe while mounted and clean up on unmount. No suspense,
 * and SSR-safe: nothing connects during a server render (sockets open in effects), so the
 * server renders the empty initial state. Reference: docs/hooks.md.
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
  type ConnectionError,
  type EventMap,
  type ObjectState,
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
  channel<Events extends EventMap, Member>(
    name: string,
    opts: { afterSerial?: number } = {},
  ): { sub: ChannelSubscription<Events, Member>; release(): void } {
    const sub = this.realtime.subscribe<Events, Member>(name, opts);
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

/**
 * The connection error of the provider's client, re-rendering when it changes: a refusal
 * (`error.fatal`, e.g. `unknown app key`: no more reconnects) or a retried failure; null
 * while none happened (or after the next successful connection).
 */
export function useConnectionError(): ConnectionError | null {
  const clients = useClients();
  const [error, setError] = useState<ConnectionError | null>(null);
  useEffect(() => {
    const realtime = clients.realtime;
    setError(realtime.error);
    const off = realtime.on("error", (err) => setError(err));
    const ref = realtime.socket.onOpen(() => setError(null));
    return () => {
      off();
      realtime.socket.off([ref]);
    };
  }, [clients]);
  return error;
}

/** Join state of a subscription. */
export type Status = "idle" | "joining" | "joined" | "error";

/**
 * One event received on a channel; with typed `Events` (name -> data) a union narrowed by
 * `event`.
 */
export type ChannelEvent<Events extends EventMap = EventMap> = {
  [E in keyof Events & string]: { event: E; data: Events[E]; serial: number | null };
}[keyof Events & string];

/** What `useChannel` returns. */
export interface ChannelState<Events extends EventMap = EventMap> {
  status: Status;
  /** Why joining failed (`status: "error"`). */
  error?: string;
  /** The latest events (at most `keep`), oldest first. */
  events: ChannelEvent<Events>[];
  /** Publishes a client event on the channel. */
  publish<E extends keyof Events & string>(
    event: E,
    data?: Events[E] & object,
  ): Promise<{ serial: number | null }>;
}

/** Options of `useChannel`. */
export interface UseChannelOptions<Events extends EventMap = EventMap> {
  /** Only these events are kept in `events` and passed to `onEvent` [all of the app's]. */
  names?: (keyof Events & string)[];
  /** How many events `events` keeps, the latest [100]. */
  keep?: number;
  /** Called for each event (also those beyond `keep`). */
  onEvent?: (e: ChannelEvent<Events>) => void;
  /**
   * Replay the channel's history after this serial on the first join (`0`: from the start of
   * the retained history) [none: live events only]. Rejoins after a lost connection always
   * resume where the hook was, whatever this says.
   */
  afterSerial?: number;
}

/**
 * Subscribes to a channel while mounted. `events` lists the app's events (never presence
 * events or the client's own `switchboard:*` events), those named in `names` when given, the
 * last `keep`; `onEvent` is called for each. Type the events with
 * `useChannel<{ message: { text: string } }>(name)`.
 */
export function useChannel<Events extends EventMap = EventMap>(
  channel: string,
  options: UseChannelOptions<Events> = {},
): ChannelState<Events> {
  const clients = useClients();
  const [state, setState] = useState<
    { status: Status; error?: string; events: ChannelEvent<Events>[] }
  >({
    status: "idle",
    events: [],
  });
  const onEvent = useRef(options.onEvent);
  onEvent.current = options.onEvent;
  const keep = options.keep ?? 100;
  const names = options.names?.join("\n");
  const subRef = useRef<ChannelSubscription<Events, unknown> | null>(null);
  useEffect(() => {
    const wanted = names === undefined ? null : new Set(names.split("\n"));
    const { sub, release } = clients.channel<Events, unknown>(
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
      if (INTERNAL.test(event) || (wanted && !wanted.has(event))) return;
      const e = {
        event,
        data,
        serial: typeof meta.serial === "number" ? meta.serial : null,
      } as ChannelEvent<Events>;
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
  const publish = useCallback(
    async <E extends keyof Events & string>(event: E, data?: Events[E] & object) => {
      if (!subRef.current) throw new Error(`publish of ${event} on ${channel}: not subscribed`);
      return await subRef.current.publish(event, data);
    },
    [channel],
  );
  return { ...state, publish };
}

/** Events `useChannel` leaves out: presence and the client's own. */
const INTERNAL = /^(presence:|switchboard:)/;

/** One presence member; `Info` types `user_info` (what the token source signed). */
export interface Member<Info = unknown> {
  user_id: string;
  user_info?: Info;
}

/** What `usePresence` returns. */
export interface PresenceState<Info = unknown> {
  status: Status;
  error?: string;
  members: Member<Info>[];
  count: number;
}

/**
 * Members of a `presence-` channel while mounted (the token source signs the membership).
 * Type the members' info with `usePresence<{ name: string }>(name)`.
 */
export function usePresence<Info = unknown>(channel: string): PresenceState<Info> {
  const clients = useClients();
  const [state, setState] = useState<
    { status: Status; error?: string; members: Member<Info>[] }
  >({
    status: "idle",
    members: [],
  });
  useEffect(() => {
    const { sub, release } = clients.channel<EventMap, Info>(channel);
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

/** What `useObject` returns. */
export interface ObjectHookState<State extends ObjectState = ObjectState> {
  status: Status;
  error?: string;
  /** Slot -> value as of `logId` (a slot never written is absent). */
  state: Partial<State>;
  logId: number;
}

/**
 * A Durable Object's live state while mounted: `state` is slot -> value at `logId`. Type the
 * slots with `useObject<{ count: number }>(type, key)`.
 */
export function useObject<State extends ObjectState = ObjectState>(
  type: string,
  key: string,
): ObjectHookState<State> {
  const clients = useClients();
  const [snap, setSnap] = useState<ObjectHookState<State>>({
    status: "idle",
    state: {},
    logId: 0,
  });
  useEffect(() => {
    const obj = clients.realtime.object<State>(type, key);
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

/**
 * What `useThread` returns: the selected branch, streaming text and the actions. `Content`
 * types the messages' content (with the AI SDK: `string | PartsContent<Metadata>`).
 */
export interface ThreadState<Content = unknown> {
  status: Status;
  error?: string;
  /** Messages of the selected branch, root first. */
  messages: ChatMessage<Content>[];
  /** Text streamed so far per running run id. */
  streaming: Record<string, string>;
  /** Every known run (pending, active, suspended ones are the live ones). */
  runs: RunInfo[];
  /** Runs waiting for a tool approval. */
  suspended: RunInfo[];
  send(content: Content): Promise<void>;
  cancel(runId?: string): Promise<void>;
  regenerate(messageId: string): Promise<void>;
  edit(messageId: string, content: Content): Promise<void>;
  /** Ids of the messages beside `parentId`'s child (branches), oldest first. */
  siblings(parentId: string | null): string[];
  selectBranch(parentId: string | null, messageId: string): void;
  approveTool(runId: string, toolCallId: string): Promise<void>;
  rejectTool(runId: string, toolCallId: string, reason?: string): Promise<void>;
}

const LIVE = new Set(["pending", "active", "suspended"]);

/**
 * A chat thread while mounted, as `clientId` (a token's client_id wins). Type the content
 * with `useThread<MyContent>(threadId, { clientId })`.
 */
export function useThread<Content = unknown>(
  threadId: string,
  options: { clientId: string },
): ThreadState<Content> {
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
    messages: (view?.getMessages() ?? []) as ChatMessage<Content>[],
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
