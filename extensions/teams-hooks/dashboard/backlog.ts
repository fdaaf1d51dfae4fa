/**
 * What this machine's kernel holds for one TCP connection of the server, read from Linux's
 * `/proc/net/tcp` (`tcp6` for IPv6): the connection's send queue (`tx_queue`: bytes written and not
 * yet acknowledged by the peer) and, when the peer is a socket of this machine too (a viewer on
 * loopback, a proxy in front), that socket's receive queue (`rx_queue`: bytes its reader has not
 * read). Node shows neither: `writableLength` counts only what waits in the process, and the kernel
 * takes megabytes before that grows (4 MiB of send buffer per connection at most, by default).
 *
 * A byte the peer's kernel has received and not yet acknowledged is in both queues for that moment
 * (a delayed ACK lasts up to 40 ms): the count errs high then, never low.
 *
 * Reading a table walks the kernel's whole table of connections: 4.5 to 8 ms on the project's 2-core
 * machine with three connections in it. So a caller asks once per 256 KiB written, not per write,
 * and reads are shared (`ConnectionTables`): a read that started after a connection's last write
 * answers for it. Elsewhere than on Linux (no such file) the answer is null: unknown.
 */
import { readFile } from "node:fs/promises";
import { isIPv4, isIPv6 } from "node:net";

const TCP4 = "/proc/net/tcp";
const TCP6 = "/proc/net/tcp6";

/** One end of a connection as `net.Socket` names it. */
interface SocketEnds {
  localAddress?: string | undefined;
  localPort?: number | undefined;
  remoteAddress?: string | undefined;
  remotePort?: number | undefined;
}

/** Reads of the tables, shared by every connection they can answer for. */
export class ConnectionTables {
  readonly #reads = new Map<string, { startedMs: number; text: Promise<string | null> }>();

  /** `file` as read at `notBeforeMs` (`performance.now()`) or later: a read started since is shared. */
  read(file: string, notBeforeMs: number): Promise<string | null> {
    const last = this.#reads.get(file);
    if (last !== undefined && last.startedMs >= notBeforeMs) return last.text;
    const read = { startedMs: performance.now(), text: readTable(file) };
    this.#reads.set(file, read);
    return read.text;
  }
}

/**
 * Bytes the kernel holds for the connection, as `tables` read it at `notBeforeMs` or later (after the
 * last write to it): its send queue plus, when the peer is on this machine, the peer's receive queue;
 * 0 when the connection is not in the table (closed); null when unknown.
 */
export async function kernelBacklog(
  socket: SocketEnds,
  tables: ConnectionTables,
  notBeforeMs: number,
): Promise<number | null> {
  const { localAddress, localPort, remoteAddress, remotePort } = socket;
  if (localAddress === undefined || localPort === undefined) return null;
  if (remoteAddress === undefined || remotePort === undefined) return null;
  const local = procAddress(localAddress, localPort);
  const remote = procAddress(remoteAddress, remotePort);
  if (local === null || remote === null) return null;
  const ours = await tables.read(local.file, notBeforeMs);
  if (ours === null) return null;
  const sent = queues(ours, local.text, remote.text)?.tx ?? 0;
  // A peer on this machine that reached an IPv6 socket through an IPv4-mapped address is an IPv4
  // socket itself, in the other table.
  const mapped = remote.file === TCP6 ? /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(remoteAddress)?.[1] : undefined;
  const peerLocal = mapped === undefined ? remote : procAddress(mapped, remotePort);
  const peerRemote = mapped === undefined ? local : procAddress(localAddress.replace(/^::ffff:/i, ""), localPort);
  if (peerLocal === null || peerRemote === null) return sent;
  const theirs = peerLocal.file === local.file ? ours : await tables.read(peerLocal.file, notBeforeMs);
  return sent + (theirs === null ? 0 : (queues(theirs, peerLocal.text, peerRemote.text)?.rx ?? 0));
}

async function readTable(file: string): Promise<string | null> {
  try {
    return await readFile(file, "latin1");
  } catch {
    return null; // not Linux, or no /proc: what the kernel holds is unknown
  }
}

/** The `tx_queue` and `rx_queue` of the row whose local and remote ends are these (`0100007F:1F90`). */
function queues(table: string, local: string, remote: string): { tx: number; rx: number } | null {
  const at = table.indexOf(` ${local} ${remote} `);
  if (at < 0) return null;
  // `  sl  local_address rem_address   st tx_queue:rx_queue …`
  const end = table.indexOf("\n", at);
  const fields = table
    .slice(at, end < 0 ? undefined : end)
    .trim()
    .split(/\s+/);
  const [tx, rx] = (fields[3] ?? "").split(":").map((hex) => Number.parseInt(hex, 16));
  return tx === undefined || rx === undefined || Number.isNaN(tx) || Number.isNaN(rx) ? null : { tx, rx };
}

/**
 * An address and port as the table writes them: the address's bytes in groups of four, each group
 * as a number in the machine's byte order (little-endian on the machines Node runs on: 127.0.0.1 is
 * `0100007F`), in upper-case hex; the port in hex.
 */
function procAddress(address: string, port: number): { file: string; text: string } | null {
  const bytes = addressBytes(address.replace(/%.*$/, ""));
  if (bytes === null) return null;
  let hex = "";
  for (let group = 0; group < bytes.length; group += 4) {
    for (let i = 3; i >= 0; i--) hex += (bytes[group + i] ?? 0).toString(16).padStart(2, "0");
  }
  const file = bytes.length === 4 ? TCP4 : TCP6;
  return { file, text: `${hex.toUpperCase()}:${port.toString(16).toUpperCase().padStart(4, "0")}` };
}

/** The 4 or 16 bytes of an IP address; null for anything else. */
export function addressBytes(address: string): number[] | null {
  if (isIPv4(address)) return address.split(".").map(Number);
  if (!isIPv6(address)) return null;
  let text = address;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  if (v4 !== undefined) {
    const [a = 0, b = 0, c = 0, d = 0] = v4.split(".").map(Number);
    text = `${text.slice(0, -v4.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const words = (part: string): string[] => (part === "" ? [] : part.split(":"));
  const first = words(head);
  const last = tail === undefined ? [] : words(tail);
  const all = [...first, ...Array<string>(8 - first.length - last.length).fill("0"), ...last];
  if (all.length !== 8) return null;
  return all.flatMap((word) => {
    const n = Number.parseInt(word, 16);
    return [n >> 8, n & 0xff];
  });
}
