/**
 * Bounded capture of a hook's output: keep the head, count the rest, keep accepting.
 *
 * A hook may print gigabytes. A buffer with a cap that kills the process (execa's `maxBuffer`,
 * docs/decisions/process-facts.md) would end a gate that only talks too much, and not
 * reading would block it on write, so the runner reads every chunk and hands it here. Up to the limit the chunks go
 * through a StringDecoder (a multi-byte character split across two chunks is joined, not turned into two U+FFFD); past
 * it, a chunk only adds its length to a counter, so memory stays O(limit) however much arrives. Pure: no I/O.
 */
import { StringDecoder } from "node:string_decoder";

export interface CaptureResult {
  /** The first `limitChars` UTF-16 units of the output, never ending in half a surrogate pair. */
  text: string;
  /**
   * Bytes of output not represented in `text`. Exact for valid UTF-8; invalid bytes kept as U+FFFD
   * count as that character's 3 bytes, so for such output the figure can be a little low.
   */
  droppedBytes: number;
}

interface HeadCapture {
  /** Accepts the next chunk. Never throws, and costs one addition once the head is full. */
  push(chunk: Buffer): void;
  /**
   * Ends the capture and returns the head and the dropped count. An incomplete character at the very
   * end becomes U+FFFD. Later calls return the same value; later pushes are only counted.
   */
  result(): CaptureResult;
}

export function headCapture(limitChars: number): HeadCapture {
  const limit = Math.max(0, Math.floor(limitChars));
  const decoder = new StringDecoder("utf8");
  const parts: string[] = [];
  let keptChars = 0;
  let totalBytes = 0;
  /** Set once a character had to be left out: from then on chunks are only counted. */
  let truncated = false;
  let ended: string | undefined;
  let droppedBeforeEnd = 0;
  let lateBytes = 0;

  const keep = (decoded: string): void => {
    const room = limit - keptChars;
    if (decoded.length <= room) {
      parts.push(decoded);
      keptChars += decoded.length;
      return;
    }
    let cut = room;
    if (cut > 0 && isHighSurrogate(decoded.charCodeAt(cut - 1))) cut -= 1;
    if (cut > 0) parts.push(decoded.slice(0, cut));
    keptChars += cut;
    truncated = true;
  };

  return {
    push(chunk: Buffer): void {
      if (ended !== undefined) {
        lateBytes += chunk.length;
        return;
      }
      totalBytes += chunk.length;
      if (truncated) return;
      const decoded = decoder.write(chunk);
      if (decoded.length > 0) keep(decoded);
    },
    result(): CaptureResult {
      if (ended === undefined) {
        if (!truncated) {
          const tail = decoder.end();
          if (tail.length > 0) keep(tail);
        }
        ended = parts.join("");
        parts.length = 0;
        // Once truncated, every input byte not in the head was dropped: the rest of the cut chunk,
        // an incomplete character held by the decoder, and every later chunk. Without truncation
        // nothing was (re-encoding U+FFFD can even exceed the input, hence no subtraction then).
        droppedBeforeEnd = truncated ? Math.max(0, totalBytes - Buffer.byteLength(ended, "utf8")) : 0;
      }
      return { text: ended, droppedBytes: droppedBeforeEnd + lateBytes };
    },
  };
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
