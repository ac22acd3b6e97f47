// Reads the log stream's messages from each nats-server's own store files (after the servers
// stopped), so the nemesis can tell whether JetStream's replicas agree: with nats-server 2.9.10
// they do not after a stream leader is frozen and resumed (docs/cluster-internals.md). The record
// layout is nats-server's file store (`msgs/*.blk`): length (with a headers flag), sequence,
// timestamp, subject, headers, payload, checksum.
import { join } from "node:path";

const HEADERS_FLAG = 0x80000000;
/** Sequence flags of an erased or deleted record. */
const DELETED = (1n << 63n) | (1n << 62n);

/** Each stored position's message id (`Nats-Msg-Id`) in the store dir of one server. */
function storedIds(storeDir: string, stream: string): Map<number, string> {
  const dir = join(storeDir, "jetstream", "$G", "streams", stream, "msgs");
  const ids = new Map<number, string>();
  let files: string[];
  try {
    files = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.endsWith(".blk"));
  } catch {
    return ids;
  }
  for (const name of files.sort((a, b) => parseInt(a) - parseInt(b))) {
    const buf = Deno.readFileSync(join(dir, name));
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    for (let at = 0; at + 22 <= buf.length;) {
      const raw = view.getUint32(at, true);
      const length = raw & ~HEADERS_FLAG;
      if (length < 22 || at + length > buf.length) break;
      const seq = view.getBigUint64(at + 4, true);
      let p = at + 22 + view.getUint16(at + 20, true);
      let id = "";
      if (raw & HEADERS_FLAG) {
        const hlen = view.getUint32(p, true);
        id =
          /Nats-Msg-Id:\s*(\S+)/i.exec(new TextDecoder().decode(buf.subarray(p + 4, p + 4 + hlen)))
            ?.[1] ?? "";
        p += 4 + hlen;
      }
      if ((seq & DELETED) === 0n && seq > 0n) ids.set(Number(seq), id);
      at += length;
    }
  }
  return ids;
}

/** How the replicas of `stream` under `natsDir/<server>` compare: their last positions, and
 * how many positions hold different messages (or exist on some only). */
export function compareReplicas(
  natsDir: string,
  servers: string[],
  stream: string,
): { last: number[]; differing: number } {
  const stores = servers.map((s) => storedIds(join(natsDir, s), stream));
  const last = stores.map((m) => [...m.keys()].reduce((max, seq) => Math.max(max, seq), 0));
  let differing = 0;
  for (let seq = 1; seq <= Math.max(0, ...last); seq++) {
    const ids = new Set(stores.map((m) => m.get(seq) ?? ""));
    if (ids.size > 1) differing++;
  }
  return { last, differing };
}
