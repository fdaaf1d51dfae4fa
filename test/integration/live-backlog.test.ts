/**
 * What the kernel holds for a connection (dashboard/backlog.ts), against real sockets on 127.0.0.1
 * and the kernel's own table: with a reader that reads nothing, it is every byte the server wrote
 * that the reader's process did not take, the response head included; once the reader has read,
 * nothing.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import { type AddressInfo, type Socket, connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConnectionTables, kernelBacklog } from "../../extensions/teams-hooks/dashboard/backlog.js";
import { waitUntil } from "../helpers/leader-rig.js";

let server: Server;
let answered: Promise<{ req: IncomingMessage; res: ServerResponse }>;

beforeAll(async () => {
  let resolve: (value: { req: IncomingMessage; res: ServerResponse }) => void = () => undefined;
  answered = new Promise((r) => (resolve = r));
  server = createServer((req, res) => {
    res.writeHead(200, { "Content-Type": "text/plain" });
    resolve({ req, res });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe("kernelBacklog", () => {
  it("counts every byte a reader that reads nothing has not read, then nothing once it has read them", async () => {
    const client: Socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
    await new Promise<void>((r) => client.once("connect", r));
    client.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    const { req, res } = await answered;
    // A socket stopped before anything arrives: its own process reads nothing from the kernel.
    client.pause();
    await waitUntil("the paused socket", () => !client.readableFlowing);
    const tables = new ConnectionTables();
    let written = 0;
    for (let i = 0; i < 40; i++) {
      const chunk = `${"x".repeat(10_000)}\n`;
      res.write(chunk);
      written += chunk.length;
    }
    // Once the reader's kernel has acknowledged what it took (until then a byte may be counted on both
    // sides: more, never less), the count is what was written, with the head and the chunked framing,
    // less what the client's own process took before it stopped reading.
    const held = await waitUntil("the bytes in the kernel", async () => {
      const kernel = await kernelBacklog(req.socket, tables, performance.now());
      const total = (kernel ?? 0) + client.readableLength;
      return kernel !== null && total >= written && total < written + 2_000 ? kernel : null;
    });
    expect(held).toBeGreaterThan(written / 2);
    client.resume();
    client.on("data", () => undefined);
    await waitUntil("nothing held", async () => (await kernelBacklog(req.socket, tables, performance.now())) === 0);
    res.end();
    client.destroy();
  });

  it("is null for a socket with no address (closed, or not TCP)", async () => {
    expect(await kernelBacklog({}, new ConnectionTables(), 0)).toBeNull();
  });
});
