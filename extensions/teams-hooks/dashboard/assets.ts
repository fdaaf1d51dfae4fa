/**
 * The dashboard's static files (`dashboard/assets/` beside this module, copied into dist/ by the
 * build): read once when the server starts, served with an ETag so that a browser revalidates
 * instead of downloading again. Nothing comes from another origin.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

const ASSET_TYPES: Readonly<Record<string, string>> = {
  "app.css": "text/css; charset=utf-8",
  "app.js": "text/javascript; charset=utf-8",
  "icon.svg": "image/svg+xml",
};

export type Assets = ReadonlyMap<string, { body: Buffer; etag: string; type: string }>;

/** Reads every asset; throws (naming the file) when one is missing: the build did not copy them. */
export function loadAssets(dir: URL = new URL("./assets/", import.meta.url)): Assets {
  const assets = new Map<string, { body: Buffer; etag: string; type: string }>();
  for (const [name, type] of Object.entries(ASSET_TYPES)) {
    const body = readFileSync(new URL(name, dir));
    assets.set(name, { body, type, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"` });
  }
  return assets;
}

export function assetAnswer(
  assets: Assets,
  name: string,
  ifNoneMatch: string | undefined,
): { status: number; body: string | Buffer; contentType: string; headers: Record<string, string> } {
  const asset = assets.get(name);
  if (!asset) return { status: 404, body: "no such asset\n", contentType: "text/plain; charset=utf-8", headers: {} };
  const headers = { ETag: asset.etag, "Cache-Control": "no-cache" };
  if (ifNoneMatch === asset.etag) return { status: 304, body: "", contentType: asset.type, headers };
  return { status: 200, body: asset.body, contentType: asset.type, headers };
}
