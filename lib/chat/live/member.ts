/**
 * Who joined a thread channel, as the push handlers see it (built by channel.ts's join
 * authorization, read by pushes.ts): its own module so that the two do not import each other.
 */
import type { Principal } from "../../auth/principal.ts";

/** Who joined, as the pushes see it. */
export interface Member {
  principal: Principal;
  clientId: string;
  agent: boolean;
}
