/**
 * The playground's built-in demo agent: joins chat threads of the development app as an agent
 * over this server's own WebSocket and answers user messages.
 */

/** Where and as whom the agent connects. */
export interface AgentConnection {
  /** Socket URL as the Phoenix client takes it, e.g. `ws://127.0.0.1:4000/socket`. */
  endpoint: string;
  appKey: string;
  appSecret: string;
}

/** One demo agent per thread, started on demand and closed on shutdown. */
export class DemoAgents {
  /** The agent id the demo agent joins with. */
  readonly agentId = "demo-agent";

  /** Joins `threadId` as the demo agent unless it already has. */
  ensure(_threadId: string, _conn: AgentConnection): Promise<void> {
    return Promise.reject(new Error("the chat product is not available yet"));
  }

  /** Leaves every thread. */
  close(): void {}
}
