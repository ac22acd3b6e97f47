/** The `Topic` value for the server: the code lives in sdk/shared/topic.ts (shared with the client SDK). */
export { Topic } from "../../sdk/shared/topic.ts";
