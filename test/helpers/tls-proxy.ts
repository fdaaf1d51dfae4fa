/**
 * A TLS-terminating reverse proxy on 127.0.0.1 for tests of `serve` behind one: what the nginx and
 * Caddy blocks of docs/ci-gates.md ("serve behind a TLS proxy") do, in node:https. It forwards only
 * the paths `allow` matches (the decision route), to `target` over plain HTTP on loopback, keeping
 * the client's `Host` (nginx `proxy_set_header Host $host`), replacing `X-Forwarded-For`,
 * `X-Forwarded-Proto` and `X-Forwarded-Host` with what it saw itself, and answering 404 for anything
 * else. A certificate for `hostname` is made with node:crypto (self-signed.ts; clients trust it
 * through `certFile`).
 *
 *   const proxy = await startTlsProxy({ hostname: "gates.example.test", target: serve.url, allow: DECISION_ROUTE });
 *   curl --resolve gates.example.test:${proxy.port}:127.0.0.1 --cacert ${proxy.certFile} \
 *     https://gates.example.test:${proxy.port}/…
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { createServer, type Server } from "node:https";
import os from "node:os";
import path from "node:path";
import { selfSigned } from "./self-signed.js";

export interface TlsProxy {
  port: number;
  /** `https://<hostname>:<port>`: reached through `--resolve` (or a `.curlrc`), as a DNS name would. */
  url: string;
  /** The self-signed certificate (PEM) a client trusts. */
  certFile: string;
  /** Requests it answered itself with 404 (not forwarded), as `METHOD path`. */
  refused: string[];
  close(): Promise<void>;
}

export async function startTlsProxy(opts: { hostname: string; target: string; allow: RegExp }): Promise<TlsProxy> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "tls-proxy-"));
  const certFile = path.join(dir, "cert.pem");
  const { cert, key } = selfSigned(opts.hostname);
  await writeFile(certFile, cert);
  const target = new URL(opts.target);
  const refused: string[] = [];
  const server: Server = createServer({ cert, key }, (req, res) => {
    const pathname = new URL(req.url ?? "/", "https://proxy.invalid").pathname;
    if (!opts.allow.test(pathname)) {
      refused.push(`${req.method} ${pathname}`);
      res.writeHead(404, { "content-type": "text/plain" }).end("not here\n");
      return;
    }
    const headers = { ...req.headers };
    // What the proxy saw itself, never what the client claimed.
    headers["x-forwarded-for"] = req.socket.remoteAddress ?? "";
    headers["x-forwarded-proto"] = "https";
    headers["x-forwarded-host"] = req.headers.host ?? "";
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
      res.end("bad gateway\n");
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the proxy has no port");
  return {
    port: address.port,
    url: `https://${opts.hostname}:${address.port}`,
    certFile,
    refused,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
