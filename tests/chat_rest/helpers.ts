// Shared helpers of the chat REST end-to-end tests.
import type { TestServer } from "../helpers/server.ts";

/** A parsed response. */
export interface ApiResponse {
  status: number;
  body: any;
  headers: Headers;
}

/** Calls the chat REST API as app key1 (or with `headers` overriding the credentials). */
export async function api(
  server: TestServer,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<ApiResponse> {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: {
      "X-App-Key": "key1",
      "X-App-Secret": "secret1",
      ...(body !== undefined ? { "Content-Type": "application/vnd.api+json" } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

/** Calls the chat REST API like `api` and returns only the status code. */
export async function statusOf(
  server: TestServer,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<number> {
  return (await api(server, method, path, body, headers)).status;
}

/** A JSON:API create/patch body. */
export function doc(
  type: string,
  attributes?: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) {
  return { data: { type, ...(attributes ? { attributes } : {}), ...extra } };
}

/** Creates a thread and returns its id. */
export async function makeThread(server: TestServer, id: string, title = "t"): Promise<string> {
  const r = await api(server, "POST", "/api/chat/threads", doc("threads", { title }, { id }));
  if (r.status !== 201) {
    throw new Error(`thread create failed: ${r.status} ${JSON.stringify(r.body)}`);
  }
  return id;
}

/** Creates a message. */
export async function makeMessage(
  server: TestServer,
  tid: string,
  id: string,
  extra: Record<string, unknown> = {},
) {
  const r = await api(
    server,
    "POST",
    `/api/chat/threads/${tid}/messages`,
    doc("messages", { role: "user", content: `text ${id}`, ...extra }, { id }),
  );
  if (r.status !== 201) {
    throw new Error(`message create failed: ${r.status} ${JSON.stringify(r.body)}`);
  }
  return r.body.data;
}
