/**
 * Bindings: gates attached to a team at run time, through the task API (`POST …/bindings`, a
 * `gates:admin` key), kept in `<teamDir>/hook-state/bindings.json`. A binding names a handler (one of
 * the teams root's `handlers.json`, or of the team's config.json `hooks.handlers`), the events it
 * judges and settings over the handler's own (`timeoutMs`, `answer`, `enabled`); it runs as the HTTP
 * gate `http:<binding name>`, after the team's handlers, with the named handler's definition, its
 * events and settings replaced by the binding's.
 *
 * A binding is trusted content like a gate edit: its gate's definition is hashed into the team's trust
 * record as any handler's (trust/trust.ts), so a binding added is `new` (its events held as
 * `untrusted_hook`) until the team lead approves it (`pi-teams-hooks trust`), and one removed that was
 * trusted is `gate_missing` until the lead approves that too. The file is read at every discovery,
 * as the gate files are. Never throws for anything on disk.
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { HooksError } from "../contract/errors.js";
import { HOOK_EVENTS } from "../contract/contract.js";
import { HANDLER_ANSWERS, type HandlerDef, HandlerSchema } from "../settings/handlers.js";
import { readRegularFile, writeJsonAtomic } from "../team/json-file.js";
import { withLock } from "../team/lock.js";

/** A binding's name: as a handler's (it becomes the gate `http:<name>`). */
const BINDING_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** What a binding may set over its handler's own definition. */
export const BindingSettingsSchema = z.strictObject({
  timeoutMs: z.number().int().optional(),
  answer: z.enum(HANDLER_ANSWERS).optional(),
  enabled: z.boolean().optional(),
});

export const BindingSchema = z.strictObject({
  name: z.string().regex(BINDING_NAME, "must be 1 to 64 letters, digits, _ . -"),
  handler: z.string().min(1, "must name a handler").max(64),
  events: z
    .array(z.enum(HOOK_EVENTS))
    .min(1, "must name at least one event")
    .refine((events) => new Set(events).size === events.length, "must not name an event twice"),
  settings: BindingSettingsSchema.optional(),
  createdAt: z.string().optional(),
  createdBy: z.string().optional(),
});
export type Binding = z.output<typeof BindingSchema>;

const BindingsFileSchema = z.strictObject({ version: z.literal(1), bindings: z.array(BindingSchema) });

/** `<teamDir>/hook-state/bindings.json`. */
export function bindingsFile(teamDir: string): string {
  return path.join(teamDir, "hook-state", "bindings.json");
}

export interface BindingsRead {
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

/** A binding resolved against the handlers it may name: the definition its gate runs, or why it cannot run. */
export type ResolvedBinding = { binding: Binding; handler: HandlerDef } | { binding: Binding; problem: string };

/**
 * Each binding's handler definition: the named handler's (`handlers` in lookup order: the team's,
 * then the global ones), renamed to the binding, its events the binding's, its settings over the
 * handler's, checked whole by the handlers' schema. A binding whose name is a declared handler's, or
 * whose handler is not declared, cannot run.
 */
export function resolveBindings(bindings: readonly Binding[], handlers: readonly HandlerDef[]): ResolvedBinding[] {
  const byName = new Map<string, HandlerDef>();
  for (const h of handlers) if (!byName.has(h.name.toLowerCase())) byName.set(h.name.toLowerCase(), h);
  return bindings.map((binding): ResolvedBinding => {
    if (byName.has(binding.name.toLowerCase()))
      return { binding, problem: `its name is a declared handler's (http:${binding.name}): give it another` };
    const base = byName.get(binding.handler.toLowerCase());
    if (!base) {
      const known = [...byName.values()].map((h) => h.name).join(", ") || "none declared";
      return { binding, problem: `names no handler (handlers: ${known})` };
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
      return { binding, problem: `${field}: ${issue?.message ?? "invalid"}` };
    }
    return { binding, handler: checked.data };
  });
}

/** What `changeBindings` did: the binding added or removed, or why nothing was. */
export type BindingChange =
  | { kind: "added"; binding: Binding }
  | { kind: "removed"; binding: Binding }
  | { kind: "exists"; binding: Binding }
  | { kind: "unknown" }
  | { kind: "invalid"; field: string; problem: string };

/**
 * Adds `binding` (refused when its name is taken, or it names no declared handler: `handlers`, the
 * team's and the global ones) or removes the binding called `remove`, under the file's lock. A file
 * that cannot be read as bindings is never overwritten: E_CONFIG names it.
 */
export async function changeBindings(
  teamDir: string,
  change: { add: Binding; handlers: readonly HandlerDef[] } | { remove: string },
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
      const [resolved] = resolveBindings([change.add], change.handlers);
      if (resolved && "problem" in resolved) {
        const field = resolved.problem.startsWith("its name")
          ? "name"
          : resolved.problem.startsWith("names no")
            ? "handler"
            : "settings";
        return { kind: "invalid", field, problem: resolved.problem };
      }
      await writeJsonAtomic(file, { version: 1, bindings: [...read.bindings, change.add] });
      return { kind: "added", binding: change.add };
    },
    { label: `pi-teams-hooks serve (the bindings of ${teamDir})` },
  );
}
