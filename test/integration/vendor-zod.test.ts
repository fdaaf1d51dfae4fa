/**
 * The build's zod (scripts/vendor-zod.mjs): the compiled modules import a bundle of zod with its
 * English locale only, which must be zod in every other respect: the same exports, the same
 * messages, the same results.
 */
import { readFile, readdir } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import * as zod from "zod";
import { ensureBuilt } from "../helpers/leader-rig.js";

const DIST = path.resolve(import.meta.dirname, "..", "..", "dist", "teams-hooks");
type Zod = typeof zod;
let vendored: Zod;

beforeAll(async () => {
  await ensureBuilt();
  vendored = (await import(pathToFileURL(path.join(DIST, "vendor", "zod.js")).href)) as Zod;
}, 180_000);

describe("the vendored zod", () => {
  it("exports what zod exports, and of the locales only English", () => {
    expect(Object.keys(vendored).sort()).toEqual(Object.keys(zod).sort());
    expect(Object.keys(vendored.z).sort()).toEqual(Object.keys(zod.z).sort());
    expect(Object.keys(vendored.z.locales)).toEqual(["en"]);
    expect(Object.keys(zod.z.locales).length).toBeGreaterThan(10); // (else there was nothing to leave out)
  });

  it("gives zod's results and English messages", () => {
    const shape = (z: Zod["z"]) =>
      z.object({ id: z.string().regex(/^\d+$/), n: z.number().int().min(1), when: z.iso.datetime().optional() });
    for (const input of [{ id: "7", n: 2 }, { id: "x", n: 0, when: "yesterday" }, { n: "2" }, null, "text"]) {
      const mine = shape(vendored.z).safeParse(input);
      const theirs = shape(zod.z).safeParse(input);
      expect(mine.success).toBe(theirs.success);
      expect(mine.error?.issues).toEqual(theirs.error?.issues);
    }
    expect(shape(vendored.z).safeParse({ id: "x", n: 1 }).error?.issues[0]?.message).toMatch(/^Invalid string/);
  });

  it("is what every compiled module imports instead of zod", async () => {
    let importers = 0;
    for (const name of (await readdir(DIST, { recursive: true })).filter(
      (n) => n.endsWith(".js") && !n.startsWith("vendor"),
    )) {
      const text = await readFile(path.join(DIST, name), "utf8");
      expect(text, name).not.toMatch(/from\s*"zod"/);
      const bundle = path.relative(path.dirname(path.join(DIST, name)), path.join(DIST, "vendor", "zod.js"));
      if (text.includes(`from "${bundle.startsWith(".") ? bundle : `./${bundle}`}"`)) importers += 1;
    }
    expect(importers).toBeGreaterThanOrEqual(5);
  });
});
