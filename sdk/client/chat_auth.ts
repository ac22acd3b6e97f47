/**
 * Token resolution for chat joins (spec "Customer auth endpoint contract"): POST
 * `{ socket_id, thread_id, client_id }` (+ authParams) to authEndpoint with authHeaders, or
 * call authCallback(params, done). No token source means joining without a token.
 */

/** Params handed to the auth endpoint or callback. */
export interface ChatAuthParams {
  socket_id: string;
  thread_id: string;
  client_id: string;
}

/** `(params, done)`: call done(null, token) or return the token (or a promise of it). */
export type ChatAuthCallback = (
  params: ChatAuthParams,
  done: (err: unknown, token?: string | { auth: string }) => void,
) => unknown;

/** The token-source options of ChatClient. */
export interface ChatAuthOptions {
  authEndpoint?: string;
  authCallback?: ChatAuthCallback;
  authHeaders?: Record<string, string>;
  authParams?: Record<string, unknown>;
}

function tokenOf(v: unknown): string {
  if (typeof v === "string") return v;
  if (v && typeof v === "object" && typeof (v as { auth?: unknown }).auth === "string") {
    return (v as { auth: string }).auth;
  }
  throw new Error("chat auth: expected a token string or { auth }");
}

/** Whether a token source is configured. */
export function hasTokenSource(o: ChatAuthOptions): boolean {
  return !!(o.authEndpoint || o.authCallback);
}

/** Resolves the join token, or undefined without a token source. */
export async function resolveToken(
  o: ChatAuthOptions,
  params: ChatAuthParams,
): Promise<string | undefined> {
  if (o.authCallback) {
    const cb = o.authCallback;
    return await new Promise<string>((resolve, reject) => {
      let settled = false;
      const done = (err: unknown, token?: string | { auth: string }) => {
        if (settled) return;
        settled = true;
        if (err) reject(err instanceof Error ? err : new Error(String(err)));
        else {
          try {
            resolve(tokenOf(token));
          } catch (e) {
            reject(e);
          }
        }
      };
      try {
        const r = cb(params, done);
        if (r !== undefined) {
          Promise.resolve(r).then((t) => done(null, t as string), (e) => done(e));
        }
      } catch (e) {
        done(e);
      }
    });
  }
  if (o.authEndpoint) {
    const res = await fetch(o.authEndpoint, {
      method: "POST",
      headers: { "content-type": "application/json", ...(o.authHeaders ?? {}) },
      body: JSON.stringify({ ...(o.authParams ?? {}), ...params }),
    });
    if (!res.ok) {
      await res.body?.cancel();
      throw new Error(`chat auth: ${o.authEndpoint} answered ${res.status}`);
    }
    return tokenOf(await res.json());
  }
  return undefined;
}
