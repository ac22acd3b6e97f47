// Helpers of the console tests: a server started with --console-secret, logins, and requests
// that carry the session cookie (and, for POSTs, this host's Origin unless told otherwise).
import {
  startInProcess,
  type StartOptions,
  type TestApp,
  type TestServer,
} from "../helpers/in_process.ts";
export { until } from "../helpers/until.ts";

/** The console secret of these tests. */
export const ADMIN_SECRET = "console-admin-secret-0123456789";

/** Two apps whose secrets open one app each. */
export const CONSOLE_APPS: TestApp[] = [
  { id: "app-1", key: "key1", secret: "app-one-secret-abcdefgh" },
  { id: "app-2", key: "key2", secret: "app-two-secret-ijklmnop" },
];

/** Starts a server with the console on (admin secret `ADMIN_SECRET`). */
export function startConsole(opts: StartOptions = {}): Promise<TestServer> {
  return startInProcess({
    apps: CONSOLE_APPS,
    ...opts,
    args: ["--console-secret", ADMIN_SECRET, ...(opts.args ?? [])],
  });
}

/** A request to the console; `origin: null` sends no Origin header. */
export async function call(
  server: TestServer,
  path: string,
  opts: {
    method?: string;
    cookie?: string;
    body?: unknown;
    origin?: string | null;
    headers?: Record<string, string>;
  } = {},
): Promise<{ status: number; body: Record<string, unknown>; headers: Headers; text: string }> {
  const method = opts.method ?? "GET";
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.cookie) headers.cookie = opts.cookie;
  if (method !== "GET" && opts.origin !== null) headers.origin = opts.origin ?? server.baseUrl;
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(server.baseUrl + path, {
    method,
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    redirect: "manual",
  });
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text);
  } catch { /* not JSON */ }
  return { status: res.status, body, headers: res.headers, text };
}

/** Logs in with `secret`; resolves with the `name=value` cookie to send back. */
export async function login(server: TestServer, secret: string): Promise<string> {
  const res = await call(server, "/console/login", { method: "POST", body: { secret } });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`);
  const set = res.headers.get("set-cookie") ?? "";
  return set.split(";")[0];
}
