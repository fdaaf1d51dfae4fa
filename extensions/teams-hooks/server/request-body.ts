/**
 * A request's body, read under a size cap: the task API's JSON bodies and the dashboard's login form
 * both come through here.
 */
import type { IncomingMessage } from "node:http";
import { describeError } from "../contract/errors.js";
import { ApiError } from "./answers.js";

/** The body, at most `limit` bytes (413 past it, before reading when `Content-Length` says so). */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = (): ApiError => new ApiError("payload_too_large", `the body is over ${limit / 1024} KiB`);
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        done();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      done();
      resolve(Buffer.concat(chunks));
    };
    const onError = (error: Error): void => {
      done();
      reject(new ApiError("invalid_request", `the body could not be read: ${describeError(error)}`));
    };
    const done = (): void => {
      req.off("data", onData).off("end", onEnd).off("error", onError).off("aborted", onAborted);
      req.pause();
    };
    const onAborted = (): void => onError(new Error("the client went away"));
    req.on("data", onData).on("end", onEnd).on("error", onError).on("aborted", onAborted);
  });
}
