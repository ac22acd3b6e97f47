// An honest in-memory stand-in of the JetStream link (`ClusterLink`) for one node's replicated
// store: every publish is stored and answered, the consumer replays what the stream holds from
// its start position and then delivers each new message on a later turn, and direct reads
// answer from the stream. Used by `speculation_test.ts` and `apply_slices_test.ts`.
import { Packr } from "msgpackr";
import type { Key } from "lmdb";
import type { ClusterLink } from "../../lib/cluster/link.ts";

const codec = new Packr(
  { useRecords: false, int64AsNumber: true } as ConstructorParameters<typeof Packr>[0],
);

/** A log message as the replicated store writes it (the fields the tests look at). */
export interface Message {
  o: string;
  b: string;
  base: number;
  r: { p: [string, Key][]; g: [string, Key | null, Key | null][]; a: string[] };
  w: ([0, string, Key, unknown] | [1, string, Key])[];
}

/** The stream's messages, a link on it for node `nodeId`, the messages decoded, and `add` to
 * store another node's message. */
export function fakeStream(nodeId = "a") {
  const messages: Uint8Array[] = [];
  const followers = new Set<(seq: number, data: Uint8Array) => void>();
  const store = (data: Uint8Array) => {
    messages.push(data);
    const seq = messages.length;
    setTimeout(() => followers.forEach((f) => f(seq, data)), 1);
    return seq;
  };
  const link = {
    nodeId,
    maxPayload: 1024 * 1024,
    append: (data: Uint8Array) =>
      Promise.resolve({ kind: "stored", seq: store(data), duplicate: false }),
    read: (seq: number) => Promise.resolve(messages[seq - 1] ?? null),
    bounds: () => Promise.resolve({ first: 1, last: messages.length }),
    lastSeq: () => Promise.resolve(messages.length),
    follow(start: number, fn: (seq: number, data: Uint8Array) => void) {
      const f = (seq: number, data: Uint8Array) => seq >= start && fn(seq, data);
      followers.add(f);
      for (let s = start; s <= messages.length; s++) fn(s, messages[s - 1]);
      return { stop: () => followers.delete(f) };
    },
    subscribe: () => () => {},
    publish: () => {},
    connected: () => true,
    readFailed: () => {},
  };
  return {
    messages,
    link: link as unknown as ClusterLink,
    decoded: () => messages.map((m) => codec.unpack(m) as Message),
    add: (message: Message) => store(codec.pack(message)),
  };
}
