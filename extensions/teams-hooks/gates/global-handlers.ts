/**
 * HTTP handlers declared once for every team of a teams root: `handlers.json` in the global hooks dir,
 * beside the global gate files (`<teams root>/_hooks/handlers.json`, or in `PI_TEAMS_HOOKS_DIR`):
 *
 *   { "handlers": [ { "name": "ci", "events": ["task_completed"], "url": "https://ci.example/gate" } ] }
 *
 * Each entry is what a team's config.json `hooks.handlers` holds (settings/handlers.ts, the same
 * schema). They are the global layer's handlers, as the dir's files are its gates: looked up at every
 * discovery (gates/chain.ts), trusted per team like the global files (a team's trust record holds
 * `http:ci` whatever layer it came from), and run before the team's own handlers. A team handler of
 * the same name replaces the global one, as a team file replaces the global file of its name (declared
 * with `"enabled": false`, it switches it off).
 *
 * The file is read whole or not at all: one bad entry refuses the file (every global handler then goes
 * missing, which holds the events they were trusted for: nothing runs that was not approved). A file
 * that any user may write is refused as a world-writable gate is. Read synchronously, as the gate files
 * are looked up, and kept while its stat signature stays the same.
 */
import path from "node:path";
import { z } from "zod";
import { type HandlerDef, HandlersSchema } from "../settings/handlers.js";
import { readRegularFile } from "../team/json-file.js";

/** The file's name in the global hooks dir. */
const GLOBAL_HANDLERS_FILE = "handlers.json";

/** At most this many bytes: a handlers file is a few KB. */
const MAX_BYTES = 1024 * 1024;

const GlobalHandlersFileSchema = z.strictObject({
  version: z.literal(1).optional(),
  handlers: HandlersSchema,
});

interface GlobalHandlers {
  /** The file, absolute. */
  file: string;
  /** Its handlers, in declaration order; none when the file is missing or refused. */
  handlers: readonly HandlerDef[];
  /** Why the file was refused (naming it and the field), or null: missing, or read whole. */
  problem: string | null;
}

const cache = new Map<string, { signature: string; read: GlobalHandlers }>();

/** The global handlers of the hooks dir `globalDir`. Never throws for anything on disk. */
export function readGlobalHandlers(globalDir: string): GlobalHandlers {
  const file = path.join(path.resolve(globalDir), GLOBAL_HANDLERS_FILE);
  const read = readRegularFile(file, { maxBytes: MAX_BYTES });
  if (!read.ok) {
    cache.delete(file);
    if (read.problem.kind === "missing") return { file, handlers: [], problem: null };
    return { file, handlers: [], problem: `${read.problem.message} — no global handler runs` };
  }
  const { stat } = read;
  const signature = `${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}:${stat.mode}:${stat.uid}`;
  const kept = cache.get(file);
  if (kept && kept.signature === signature) return kept.read;
  const result = parse(file, read.text, stat.mode);
  if (cache.size > 64) cache.clear();
  cache.set(file, { signature, read: result });
  return result;
}

function parse(file: string, text: string, mode: number): GlobalHandlers {
  const refused = (why: string): GlobalHandlers => ({
    file,
    handlers: [],
    problem: `${file}: ${why} — the file is refused whole: no global handler runs`,
  });
  if ((mode & 0o002) !== 0)
    return refused(`mode ${(mode & 0o777).toString(8)} lets any user rewrite it (chmod o-w '${file}')`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return refused(`invalid JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  const parsed = GlobalHandlersFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.length ? issue.path.map(String).join(".") : "(the file)";
    return refused(`${field}: ${issue?.message ?? "invalid"}`);
  }
  return { file, handlers: Object.freeze(parsed.data.handlers), problem: null };
}

/** Every handler a team may run: the global ones first, then the team's (for redaction, lookups by name). */
export function allHandlers(globalDir: string, teamHandlers: readonly HandlerDef[]): HandlerDef[] {
  const names = new Set(teamHandlers.map((h) => h.name.toLowerCase()));
  return [...readGlobalHandlers(globalDir).handlers.filter((h) => !names.has(h.name.toLowerCase())), ...teamHandlers];
}
