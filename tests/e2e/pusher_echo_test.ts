// Laravel Echo (npm laravel-echo, unmodified) with its `pusher` broadcaster on a pusher-js
// client pointed at Switchboard: public and private listeners, presence (here, joining,
// leaving) and whispers, with events triggered by the `pusher` server library.
import assert from "node:assert/strict";
import Echo from "laravel-echo";
import { startInProcess } from "../helpers/in_process.ts";
import { client, connected, type Pusher, serverLib, until } from "../pusher/helpers.ts";

Deno.test("Laravel Echo: listen, private, presence and whisper through Switchboard", async () => {
  const server = await startInProcess({ apps: [{ id: "app-1", key: "key1", secret: "secret1" }] });
  const lib = serverLib(server);
  const clients: Pusher[] = [];
  const echo = (user: string) => {
    const p = client(server, { user_id: user, user_info: { name: user } });
    clients.push(p);
    // deno-lint-ignore no-explicit-any
    return new (Echo as any)({ broadcaster: "pusher", key: "key1", client: p });
  };
  try {
    const ann = echo("ann");
    const ben = echo("ben");
    await Promise.all(clients.map(connected));
    const [annPusher, benPusher] = clients;
    /** Resolves once pusher-js has the channel's subscription_succeeded. */
    const subscribedOn = (p: Pusher, name: string) =>
      until(() => p.channel(name)?.subscribed === true, 5000, `${name} subscribed`);

    const news: unknown[] = [];
    const orders: unknown[] = [];
    ann.channel("news").listen(".published", (e: unknown) => news.push(e));
    ann.private("orders.1").listen(".OrderShipped", (e: unknown) => orders.push(e));
    await subscribedOn(annPusher, "news");
    await subscribedOn(annPusher, "private-orders.1");
    await lib.trigger("news", "published", { title: "hello" });
    await lib.trigger("private-orders.1", "OrderShipped", { id: 1 });
    await until(() => news.length === 1 && orders.length === 1, 5000, "public and private events");
    assert.deepEqual(news, [{ title: "hello" }]);
    assert.deepEqual(orders, [{ id: 1 }]);

    const here: string[][] = [];
    const joining: string[] = [];
    const leaving: string[] = [];
    const whispers: unknown[] = [];
    ann.join("room")
      .here((users: { name: string }[]) => here.push(users.map((u) => u.name)))
      .joining((u: { name: string }) => joining.push(u.name))
      .leaving((u: { name: string }) => leaving.push(u.name))
      .listenForWhisper("typing", (e: unknown) => whispers.push(e));
    await until(() => here.length === 1, 5000, "here");
    assert.deepEqual(here, [["ann"]]);
    const benRoom = ben.join("room");
    await until(() => joining.length === 1, 5000, "joining");
    assert.deepEqual(joining, ["ben"]);
    await subscribedOn(benPusher, "presence-room");
    benRoom.whisper("typing", { who: "ben" });
    await until(() => whispers.length === 1, 5000, "whisper");
    assert.deepEqual(whispers, [{ who: "ben" }]);
    ben.leave("room");
    await until(() => leaving.length === 1, 5000, "leaving");
    assert.deepEqual(leaving, ["ben"]);
  } finally {
    for (const p of clients) p.disconnect();
    await server.stop();
  }
});
