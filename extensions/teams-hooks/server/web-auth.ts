/**
 * Placeholder until the dashboard's access control lands: loopback serves every team, a server
 * started with --allow-remote refuses every dashboard request.
 */
import type { KeyStore } from "./keys.js";

export interface WebAuthContext {
  teamsRoot: string;
  keys: KeyStore;
  remote: boolean;
  now(): Date;
}

export type WebAccess =
  | { kind: "allowed"; teams: readonly string[] | null; keyName: string | null }
  | { kind: "refused"; status: 401 | 403; headers: Record<string, string>; body: string; contentType: string };

export async function webAccess(ctx: WebAuthContext, _req: { host: string | undefined; authorization: string | undefined; cookie: string | undefined; accept: string | undefined }): Promise<WebAccess> {
  if (!ctx.remote) return { kind: "allowed", teams: null, keyName: null };
  return { kind: "refused", status: 401, headers: {}, body: "a key is needed\n", contentType: "text/plain; charset=utf-8" };
}

export async function webLogin(_ctx: WebAuthContext, _req: { host: string | undefined; token: string | null }): Promise<{ status: number; headers: Record<string, string>; body: string; contentType: string }> {
  return { status: 401, headers: {}, body: "no login yet\n", contentType: "text/plain; charset=utf-8" };
}
