// A DOM for React tests under Deno: happy-dom's window, with its globals installed where Deno
// has none (Deno's own fetch, WebSocket, timers and events stay). Import before React DOM.
import { Window } from "happy-dom";

const win = new Window({ url: "http://localhost/" });
const g = globalThis as Record<string, unknown>;
const names = [
  "document",
  "HTMLElement",
  "HTMLIFrameElement",
  "Element",
  "Node",
  "Text",
  "DocumentFragment",
  "MutationObserver",
  "getComputedStyle",
  "requestAnimationFrame",
  "cancelAnimationFrame",
];
g.window = win;
for (const name of names) {
  if (!(name in g)) g[name] = (win as unknown as Record<string, unknown>)[name];
}
// Updates here come from the network, outside act(); testing-library's act() and waitFor
// handle their own. Without this React warns on every socket-driven render.
g.IS_REACT_ACT_ENVIRONMENT = false;

/** Closes the window (its timers) at the end of a test file. */
export function closeDom(): Promise<void> {
  return win.happyDOM.close();
}
