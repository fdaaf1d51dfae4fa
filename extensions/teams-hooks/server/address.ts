/**
 * Where `serve` listens: `HOST:PORT` (`[::1]:PORT` for IPv6), port 0 for a free one, and whether the
 * host is loopback — any other address needs `--allow-remote`, since the API speaks plain HTTP and
 * a bearer key on the wire must not leave the machine unless TLS is put in front.
 */
import { isIP } from "node:net";
import { HooksError } from "../contract/errors.js";

export const DEFAULT_LISTEN = "127.0.0.1:7420";

interface ListenAddress {
  host: string;
  port: number;
}

/** `127.0.0.1:7420`, `[::1]:0`, `localhost:8080` → host and port; E_USAGE naming `--listen` otherwise. */
export function parseListen(text: string): ListenAddress {
  const match = /^\[([^\]]+)\]:(\d+)$/.exec(text) ?? /^([^:[\]\s]+):(\d+)$/.exec(text);
  const host = match?.[1];
  const port = Number(match?.[2]);
  if (host === undefined || !Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new HooksError(
      "E_USAGE",
      `--listen "${text}" must be HOST:PORT (e.g. 127.0.0.1:7420, [::1]:7420; port 0 picks a free one)`,
    );
  }
  if (text.startsWith("[") && isIP(host) !== 6)
    throw new HooksError("E_USAGE", `--listen "${text}": [${host}] is not an IPv6 address`);
  return { host, port };
}

/** True for `localhost`, 127.0.0.0/8, `::1` and an IPv4 loopback mapped into IPv6. */
export function isLoopback(host: string): boolean {
  const lower = host.toLowerCase();
  if (lower === "localhost") return true;
  if (isIP(lower) === 4) return lower.startsWith("127.");
  if (isIP(lower) === 6) return lower === "::1" || lower === "0:0:0:0:0:0:0:1" || /^::ffff:127\./.test(lower);
  return false;
}

/**
 * True when a request's `Host` header names this machine: `localhost` or a name under `.localhost`,
 * 127.0.0.0/8 or `[::1]`, with or without a port. A browser tricked by DNS rebinding sends the
 * attacker's name instead, so a server for loopback only refuses anything else.
 */
export function isLoopbackHostHeader(header: string | undefined): boolean {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::\d{1,5})?$/.exec(header ?? "");
  const host = (match?.[1] ?? match?.[2] ?? "").toLowerCase();
  if (match?.[1] !== undefined) return isIP(host) === 6 && isLoopback(host);
  return /^(?:[a-z0-9-]+\.)+localhost$/.test(host) || (isLoopback(host) && isIP(host) !== 6);
}

/** The URL of an address the server reports (IPv6 in brackets). */
export function urlOf(host: string, port: number): string {
  return `http://${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}
