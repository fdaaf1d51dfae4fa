/**
 * Loads the gates' code (the leader and what `/gates` and the tool show) when it is first needed.
 * pi loads extensions through jiti, which transpiles each module as it loads it: the leader's
 * modules cost a pi session 1.2–1.6 s that way, against about 0.1 s for the compiled build loaded by
 * Node itself (docs/performance.md, "In pi"). So the leader always comes from `dist/` through Node:
 * when pi loaded the compiled entry (the package's `pi.extensions`, the installed package), and
 * when it loaded the sources (`pi -e extensions/teams-hooks/index.ts` in a checkout) and the build
 * is newer than every source file. Sources being edited, or never built, load through pi's loader.
 */
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

export interface GatesCode {
  gates: typeof import("./gates.js");
  report: typeof import("./report.js");
  from: "build" | "source";
}

/** What `/gates` and the tool are given: the one service of the session, and the report code. */
export interface GatesAccess {
  service(): Promise<import("./gates.js").GateService>;
  report(): Promise<GatesCode["report"]>;
  /** Where the gates' code came from, as `/gates status` says it. */
  origin(): Promise<GatesCode["from"]>;
}

// Node's own require, out of reach of jiti's rewriting of `import()` (inside jiti a dynamic import
// built at run time has no loader at all): Node 20.19 and later require ES modules without top-level
// await, which the build's modules are.
const nodeRequire = createRequire(import.meta.url);

export async function loadGatesCode(): Promise<GatesCode> {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const sources = path.resolve(here, "..");
  const built = path.resolve(sources, "..", "..", "dist", "teams-hooks", "pi");
  const inBuild = path.resolve(here) === built;
  if (inBuild || buildIsCurrent(sources, built)) {
    try {
      const gates = nodeRequire(path.join(built, "gates.js")) as GatesCode["gates"];
      const report = nodeRequire(path.join(built, "report.js")) as GatesCode["report"];
      return { gates, report, from: "build" };
    } catch {
      // A build that Node does not load (half-written, another Node) is no reason to fail: load the
      // modules beside this one (the sources, or this build) through pi's loader.
    }
  }
  const [gates, report] = await Promise.all([import("./gates.js"), import("./report.js")]);
  return { gates, report, from: inBuild ? "build" : "source" };
}

/** The build exists and is newer than every `.ts` source (about a millisecond for the whole tree). */
function buildIsCurrent(sources: string, built: string): boolean {
  try {
    const builtAt = Math.min(
      statSync(path.join(built, "gates.js")).mtimeMs,
      statSync(path.join(built, "report.js")).mtimeMs,
    );
    const files = readdirSync(sources, { recursive: true }) as string[];
    return files.every((f) => !f.endsWith(".ts") || statSync(path.join(sources, f)).mtimeMs <= builtAt);
  } catch {
    return false;
  }
}
