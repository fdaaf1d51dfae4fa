/**
 * A real HTTP receiver on 127.0.0.1 for tests of HTTP handlers: a node:http server in the test
 * process that records every request (headers, the body's exact bytes, which connection carried it)
 * and answers as the route for its path says. One per test file (`startReceiver` in beforeAll,
 * `close` in afterAll); each test uses its own paths.
 *
 *   const receiver = await startReceiver();
 *   receiver.route("/deny", (req, res) => res.writeHead(200).end('{"decision":"deny"}'));
 *   … url: `${receiver.url}/deny` …
 *   expect(receiver.requests("/deny")[0]?.headers["x-pi-teams-hook-event"]).toBe("task_completed");
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { Socket } from "node:net";

export interface Received {
  path: string;
  method: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** 1, 2, …: the connection the request came on, in the order connections were accepted. */
  connection: number;
}

/** Answers one request; `body` is the request's whole body. */
export type Route = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;

export interface Receiver {
  url: string;
  port: number;
  route(path: string, answer: Route): void;
  /** Requests received on `path` (or all), in order of arrival. */
  requests(path?: string): Received[];
  /** Connections accepted so far. */
  connections(): number;
  /** Resolves at the next request on `path` that has been read whole. */
  nextRequest(path: string): Promise<Received>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const routes = new Map<string, Route>();
  const received: Received[] = [];
  const waiting: Array<{ path: string; resolve: (r: Received) => void }> = [];
  const sockets = new Set<Socket>();
  const ids = new WeakMap<Socket, number>();
  let accepted = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const path = (req.url ?? "/").split("?")[0] ?? "/";
      const record: Received = {
        path,
        method: req.method ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks),
        connection: ids.get(req.socket) ?? 0,
      };
      received.push(record);
      for (const w of waiting.filter((x) => x.path === path)) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(record);
      }
      const answer = routes.get(path);
      if (answer) answer(req, res, record.body);
      else res.writeHead(404, { "content-type": "text/plain" }).end(`no route ${path}\n`);
    });
  });
  server.on("connection", (socket: Socket) => {
    accepted += 1;
    ids.set(socket, accepted);
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the receiver has no port");
  return {
    url: `http://127.0.0.1:${address.port}`,
    port: address.port,
    route: (path, answer) => void routes.set(path, answer),
    requests: (path) => received.filter((r) => path === undefined || r.path === path),
    connections: () => accepted,
    nextRequest: (path) => new Promise((resolve) => waiting.push({ path, resolve })),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A port nothing listens on (taken from the kernel, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}
