// The cluster nemesis's `/readyz` prober (cluster.ts), in a worker of its own: its requests and
// their timing do not wait for the nemesis's main thread (writers, JetStream probes, checks),
// so the time recorded is the node's answer plus the loopback, not the harness's own holds.
// Told the nodes' URLs (again after a restart: a new port) and which nodes are down (not
// probed); posts each probe back.

/** A probe's outcome, as posted to the main thread. */
export interface ReadyzProbe {
  node: number;
  at: number;
  ms: number;
  status: number;
  body?: string;
}

/** Messages the main thread sends: the nodes to probe, the nodes down, or stop. */
export type ReadyzCommand = { urls: string[]; everyMs: number } | { down: number[] } | {
  stop: true;
};

const self = globalThis as unknown as {
  onmessage: ((e: MessageEvent<ReadyzCommand>) => void) | null;
  postMessage(m: ReadyzProbe | { stopped: true }): void;
};
let urls: string[] = [];
let everyMs = 250;
let down = new Set<number>();
let stop = false;
let started = false;

async function loop(): Promise<void> {
  while (!stop) {
    await Promise.all(urls.map(async (url, node) => {
      if (down.has(node)) return;
      const at = Date.now();
      try {
        const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5000) });
        const body = await res.text();
        self.postMessage({ node, at, ms: Date.now() - at, status: res.status, body });
      } catch {
        if (!down.has(node)) self.postMessage({ node, at, ms: Date.now() - at, status: 0 });
      }
    }));
    await new Promise((r) => setTimeout(r, everyMs));
  }
  self.postMessage({ stopped: true });
}

self.onmessage = (e) => {
  const m = e.data;
  if ("urls" in m) {
    urls = m.urls;
    everyMs = m.everyMs;
    if (!started) void loop();
    started = true;
  } else if ("down" in m) down = new Set(m.down);
  else stop = true;
};
