/**
 * Bindings: gates attached to a team at run time, through the task API (`POST …/bindings`, a
 * `gates:admin` key), kept in `<teamDir>/hook-state/bindings.json`. A binding names either
 *
 * - a handler (`handler`: one of the teams root's `handlers.json`, or of the team's config.json
 *   `hooks.handlers`), the events it judges and settings over the handler's own (`timeoutMs`,
 *   `answer`, `enabled`); it runs as the HTTP gate `http:<binding name>`, after the team's handlers,
 *   with the named handler's definition, its events and settings replaced by the binding's; or
 * - a gate file (`file`: a path inside the team's hooks dir, else inside the global hooks dir, as the
 *   layers go for gate files), the events it judges and settings (`timeoutMs`, `enabled`); it runs as
 *   the gate `binding:<binding name>`, after the event's `.d` files and before the handlers, as a file
 *   gate found by its name runs (its settings line, sandbox, run ids and logs).
 *
 * A binding is trusted content like a gate edit: a handler binding's definition is hashed into the
 * team's trust record as any handler's; a file binding's record (its name, file, events, settings)
 * and the file's bytes are hashed together under `binding:<name>` (trust/trust.ts), so an edit of
 * either holds its events. A binding added is `new` (its events held as `untrusted_hook`) until the team
 * lead approves it (`pi-teams-hooks trust`), and one removed that was trusted is `gate_missing` until
 * the lead approves that too. The file is read at every discovery, as the gate files are. Never throws
 * for anything on disk.
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { HooksError } from "../contract/errors.js";
import { HOOK_EVENTS } from "../contract/contract.js";
import { HANDLER_ANSWERS, HANDLER_TIMEOUT_MS, type HandlerDef, HandlerSchema } from "../settings/handlers.js";
import { readRegularFile, writeJsonAtomic } from "../team/json-file.js";
import { withLock } from "../team/lock.js";
import { existsNoFollow } from "../team/paths.js";

/** A binding's name: as a handler's (it becomes the gate `http:<name>` or `binding:<name>`). */
const BINDING_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** A file binding's path inside a hooks dir: names of `[A-Za-z0-9_.-]` joined by `/`, never `.` or `..`. */
const BINDING_FILE = /^(?!.*(?:^|\/)\.{1,2}(?:\/|$))[A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+)*$/;

/** What a file binding's `settings.timeoutMs` may be: a handler's range. */
const FILE_TIMEOUT_MS = HANDLER_TIMEOUT_MS;

/** The gate name of a file binding: `binding:<name>` (its key in the trust record, its name in logs and policy). */
export function bindingGateName(name: string): string {
  return `binding:${name}`;
}

/** What a binding may set over its handler's own definition. */
const BindingSettingsSchema = z.strictObject({
  timeoutMs: z.number().int().optional(),
  answer: z.enum(HANDLER_ANSWERS).optional(),
  enabled: z.boolean().optional(),
});

const BindingFields = z.strictObject({
  name: z.string().regex(BINDING_NAME, "must be 1 to 64 letters, digits, _ . -"),
  handler: z.string().min(1, "must name a handler").max(64).optional(),
  file: z
    .string()
    .max(255, "must be at most 255 characters")
    .regex(BINDING_FILE, "must be a path inside a hooks dir (names of letters, digits, _ . - joined by /; no . or ..)")
    .optional(),
  events: z
    .array(z.enum(HOOK_EVENTS))
    .min(1, "must name at least one event")
    .refine((events) => new Set(events).size === events.length, "must not name an event twice"),
  settings: BindingSettingsSchema.optional(),
  createdAt: z.string().optional(),
  createdBy: z.string().optional(),
});

/** A binding names a handler or a gate file, never both; a file binding has no handler's `answer`. */
function oneTarget(
  binding: { handler?: string | undefined; file?: string | undefined; settings?: object },
  ctx: z.RefinementCtx,
): void {
  if (binding.handler === undefined && binding.file === undefined)
    ctx.addIssue({ code: "custom", path: ["handler"], message: "must name a handler (handler) or a gate file (file)" });
  else if (binding.handler !== undefined && binding.file !== undefined)
    ctx.addIssue({
      code: "custom",
      path: ["file"],
      message: "must not be given with handler: a binding names one gate",
    });
  else if (binding.file !== undefined && binding.settings && "answer" in binding.settings)
    ctx.addIssue({
      code: "custom",
      path: ["settings", "answer"],
      message: "is a handler's setting: a gate file says its own answer",
    });
}

const BindingSchema = BindingFields.superRefine(oneTarget);
export type Binding = z.output<typeof BindingSchema>;

/** A binding as a request gives it: what is recorded of who and when is the server's. */
export const BindingRequestSchema = BindingFields.omit({ createdAt: true, createdBy: true }).superRefine(oneTarget);

const BindingsFileSchema = z.strictObject({ version: z.literal(1), bindings: z.array(BindingSchema) });

/** `<teamDir>/hook-state/bindings.json`. */
function bindingsFile(teamDir: string): string {
  return path.join(teamDir, "hook-state", "bindings.json");
}

interface BindingsRead {
  file: string;
  bindings: Binding[];
  /** Why the file was refused whole (naming it and the field), or null. */
  problem: string | null;
}

/** The team's bindings as written; none when the file is missing. */
export function readBindings(teamDir: string): BindingsRead {
  const file = bindingsFile(teamDir);
  const read = readRegularFile(file, { maxBytes: 1024 * 1024 });
  if (!read.ok)
    return read.problem.kind === "missing"
      ? { file, bindings: [], problem: null }
      : { file, bindings: [], problem: `${read.problem.message} — no binding runs` };
  let raw: unknown;
  try {
    raw = JSON.parse(read.text);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return { file, bindings: [], problem: `${file}: invalid JSON (${why}) — no binding runs` };
  }
  const parsed = BindingsFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.length ? issue.path.map(String).join(".") : "(the file)";
    return { file, bindings: [], problem: `${file}: ${field}: ${issue?.message ?? "invalid"} — no binding runs` };
  }
  return { file, bindings: parsed.data.bindings, problem: null };
}

/** The file a file binding runs, and the layer it was found in. */
interface BoundFile {
  /** Absolute: `<team hooks dir>/<file>`, else `<global hooks dir>/<file>`. */
  path: string;
  layer: "global" | "team";
}

/** The hooks dirs a file binding's `file` is looked up in: the team's first, then the global one. */
interface BindingDirs {
  /** `<teamDir>/hooks`; null: no team layer. */
  team: string | null;
  global: string;
}

/**
 * A binding resolved against the handlers and hooks dirs it may name: the handler definition or the
 * file its gate runs, or why it cannot run (`field`: the binding's field at fault).
 */
type ResolvedBinding =
  | { binding: Binding; handler: HandlerDef }
  | { binding: Binding; file: BoundFile }
  | { binding: Binding; problem: string; field: string };

/**
 * Each binding's gate. A handler binding: the named handler's definition (`handlers` in lookup order:
 * the team's, then the global ones), renamed to the binding, its events the binding's, its settings
 * over the handler's, checked whole by the handlers' schema; one whose name is a declared handler's,
 * or whose handler is not declared, cannot run. A file binding: its file in the team's hooks dir when
 * there is anything of that name there (as a team file replaces a global one), else in the global
 * hooks dir; one naming neither cannot run. Whether the file can start is discovery's to say.
 */
export function resolveBindings(
  bindings: readonly Binding[],
  handlers: readonly HandlerDef[],
  dirs: BindingDirs,
): ResolvedBinding[] {
  const byName = new Map<string, HandlerDef>();
  for (const h of handlers) if (!byName.has(h.name.toLowerCase())) byName.set(h.name.toLowerCase(), h);
  return bindings.map((binding): ResolvedBinding => {
    if (binding.file !== undefined) return resolveFile(binding, binding.file, dirs);
    if (byName.has(binding.name.toLowerCase()))
      return {
        binding,
        field: "name",
        problem: `its name is a declared handler's (http:${binding.name}): give it another`,
      };
    const base = byName.get((binding.handler ?? "").toLowerCase());
    if (!base) {
      const known = [...byName.values()].map((h) => h.name).join(", ") || "none declared";
      return { binding, field: "handler", problem: `names no handler (handlers: ${known})` };
    }
    const { enabled: _enabled, ...definition } = base;
    const checked = HandlerSchema.safeParse({
      ...definition,
      ...binding.settings,
      name: binding.name,
      events: binding.events,
    });
    if (!checked.success) {
      const issue = checked.error.issues[0];
      const field = issue?.path.length ? issue.path.map(String).join(".") : "binding";
      return { binding, field: "settings", problem: `${field}: ${issue?.message ?? "invalid"}` };
    }
    return { binding, handler: checked.data };
  });
}

function resolveFile(binding: Binding, file: string, dirs: BindingDirs): ResolvedBinding {
  const timeoutMs = binding.settings?.timeoutMs;
  if (timeoutMs !== undefined && (timeoutMs < FILE_TIMEOUT_MS.min || timeoutMs > FILE_TIMEOUT_MS.max))
    return {
      binding,
      field: "settings.timeoutMs",
      problem: `settings.timeoutMs: must be ${FILE_TIMEOUT_MS.min} to ${FILE_TIMEOUT_MS.max} milliseconds, got ${timeoutMs}`,
    };
  if (binding.settings?.answer !== undefined)
    return { binding, field: "settings.answer", problem: "settings.answer: is a handler's setting, not a gate file's" };
  const team = dirs.team === null ? null : path.resolve(dirs.team, file);
  if (team !== null && existsNoFollow(team)) return { binding, file: { path: team, layer: "team" } };
  const global = path.resolve(dirs.global, file);
  if (existsNoFollow(global)) return { binding, file: { path: global, layer: "global" } };
  const where =
    dirs.team === null ? path.resolve(dirs.global) : `${path.resolve(dirs.team)} or ${path.resolve(dirs.global)}`;
  return { binding, field: "file", problem: `names no file ${file} in ${where}` };
}

/** What `changeBindings` did: the binding added or removed, or why nothing was. */
type BindingChange =
  | { kind: "added"; binding: Binding }
  | { kind: "removed"; binding: Binding }
  | { kind: "exists"; binding: Binding }
  | { kind: "unknown" }
  | { kind: "invalid"; field: string; problem: string };

/**
 * Adds `binding` (refused when its name is taken, it names no declared handler — `handlers`, the
 * team's and the global ones — or no file of the hooks dirs `dirs`) or removes the binding called `remove`, under the file's lock. A file
 * that cannot be read as bindings is never overwritten: E_CONFIG names it.
 */
export async function changeBindings(
  teamDir: string,
  change: { add: Binding; handlers: readonly HandlerDef[]; dirs: BindingDirs } | { remove: string },
): Promise<BindingChange> {
  const file = bindingsFile(teamDir);
  await mkdir(path.dirname(file), { recursive: true });
  return withLock(
    file,
    async (): Promise<BindingChange> => {
      const read = readBindings(teamDir);
      if (read.problem !== null) throw new HooksError("E_CONFIG", read.problem);
      if ("remove" in change) {
        const found = read.bindings.find((b) => b.name.toLowerCase() === change.remove.toLowerCase());
        if (!found) return { kind: "unknown" };
        await writeJsonAtomic(file, { version: 1, bindings: read.bindings.filter((b) => b !== found) });
        return { kind: "removed", binding: found };
      }
      const taken = read.bindings.find((b) => b.name.toLowerCase() === change.add.name.toLowerCase());
      if (taken) return { kind: "exists", binding: taken };
      const [resolved] = resolveBindings([change.add], change.handlers, change.dirs);
      if (resolved && "problem" in resolved)
        return { kind: "invalid", field: resolved.field, problem: resolved.problem };
      await writeJsonAtomic(file, { version: 1, bindings: [...read.bindings, change.add] });
      return { kind: "added", binding: change.add };
    },
    { label: `pi-teams-hooks serve (the bindings of ${teamDir})` },
  );
}
