/**
 * The debug tap behind the playground's live console and the operators' console
 * (lib/console/): every broadcast event (presence changes included), join, API call,
 * connection and webhook delivery of an app, as it happens. It costs one boolean check per
 * call site while no console is open and no counting sink is registered; entries are built
 * only for apps someone is watching.
 */

/** One thing that happened in an app. */
export interface TapEntry {
  time: number;
  kind: TapKind;
  /** Short fields: topic and event, topic and outcome, method, path and status. */
  [field: string]: unknown;
}

/** What a tap entry is about. */
export type TapKind = "event" | "join" | "api" | "connection" | "webhook";

type Listener = (entry: TapEntry) => void;
/** Sees every call's fields (no entry built): the console's per-app counters. */
export type TapSink = (appKey: string, kind: TapKind, fields: Record<string, unknown>) => void;

const watchers = new Map<string, Set<Listener>>();
const sinks = new Set<TapSink>();
/** Whether any console is open; call sites check it before building an entry. */
export let tapActive = false;

/** Starts delivering `appKey`'s entries to `listener`; returns the stop function. */
export function watchApp(appKey: string, listener: Listener): () => void {
  let set = watchers.get(appKey);
  if (!set) watchers.set(appKey, set = new Set());
  set.add(listener);
  tapActive = true;
  return () => {
    set!.delete(listener);
    if (set!.size === 0) watchers.delete(appKey);
    tapActive = watchers.size > 0 || sinks.size > 0;
  };
}

/** Hands every tap call of every app to `sink` from now on; returns the stop function. */
export function addTapSink(sink: TapSink): () => void {
  sinks.add(sink);
  tapActive = true;
  return () => {
    sinks.delete(sink);
    tapActive = watchers.size > 0 || sinks.size > 0;
  };
}

/** Hands an entry to the consoles watching `appKey` (call only when `tapActive`). */
export function tap(appKey: string, kind: TapKind, fields: Record<string, unknown>): void {
  for (const sink of sinks) sink(appKey, kind, fields);
  const set = watchers.get(appKey);
  if (!set) return;
  const entry: TapEntry = { time: Date.now(), kind, ...fields };
  for (const listener of set) listener(entry);
}
