/** The four products a topic can address. */
export type Product = "pubsub" | "durable" | "chat" | "spaces";

/** A parsed topic: product and the part after `{product}:{appKey}:`. */
export interface ParsedTopic {
  product: Product;
  appKey: string;
  name: string;
}

const PRODUCTS = new Set<Product>(["pubsub", "durable", "chat", "spaces"]);

/**
 * Splits `{product}:{appKey}:{rest}` (CONTRACT.md "Topics"). Returns the spec's join error
 * reason when the shape is wrong or the app key is not the connected app's.
 */
export function parseTopic(topic: string, connectedAppKey: string): ParsedTopic | string {
  const first = topic.indexOf(":");
  const second = first < 0 ? -1 : topic.indexOf(":", first + 1);
  if (first < 0 || second < 0) return "invalid topic format";
  const product = topic.slice(0, first) as Product;
  const appKey = topic.slice(first + 1, second);
  const name = topic.slice(second + 1);
  if (!PRODUCTS.has(product) || appKey === "" || name === "") return "invalid topic format";
  if (product === "durable") {
    const colon = name.indexOf(":");
    if (colon <= 0 || colon === name.length - 1) return "invalid topic format";
  }
  if (appKey !== connectedAppKey) return "app_key mismatch";
  return { product, appKey, name };
}
