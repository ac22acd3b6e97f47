/**
 * Who is behind a channel join, after verification. Products ask `can(capability)` instead of
 * reading the list themselves, so wildcard matching lives in one place.
 */
export interface Principal {
  /** The server-assigned socket id the join arrived on. */
  socketId: string;
  /** The client id bound to the token, or taken from join params when no token is used. */
  clientId?: string;
  /** How the principal was established. */
  kind: "token" | "anonymous" | "agent" | "secret";
  /** The granted capability strings (`product:verb:resource`). */
  capabilities: string[];
  /** Whether the granted list covers the needed capability (wildcards honoured). */
  can(needed: string): boolean;
}
