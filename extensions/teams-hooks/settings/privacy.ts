/**
 * The parts of config.json's `hooks` block that say what hooks see and what is kept of what they
 * say, validated with the rest of the block (settings/team-settings.ts): `hooks.projection` (the
 * fields each hook may see), `hooks.confidential` (HTTP handlers and hook logs get no task content)
 * and `hooks.redactEnv` (variables whose values are redacted from hook output, besides the
 * handlers' secrets). docs/hook-contract.md, "What a hook is shown, and what is kept of what it
 * says", and docs/security.md, "Redaction". Pure: values in, values out.
 */
import path from "node:path";
import { z } from "zod";
import { HOOK_BASE_NAMES, HOOK_EVENTS } from "../contract/contract.js";
import { CONTEXT_TASK_FIELDS, projectionPathProblem } from "../contract/projection.js";
import { templateSecretVariables } from "../contract/request-template.js";
import type { HandlerDef } from "./handlers.js";

/** An environment variable name, as a shell writes one. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const V1_NAMES: ReadonlySet<string> = new Set(Object.values(HOOK_BASE_NAMES));
const CHAIN_NAME = new RegExp(`^(${HOOK_EVENTS.map((e) => HOOK_BASE_NAMES[e]).join("|")})\\.d/([A-Za-z0-9_.-]+)$`);
const HANDLER_GATE = /^http:([A-Za-z0-9_.-]+)$/;
/** A file bound by a binding of the task API (gates/bindings.ts): bound at run time, so any such name is accepted. */
const BINDING_GATE = /^binding:[A-Za-z0-9_.-]{1,64}$/;

/**
 * Why `name` cannot be a gate's name as logs show it (gates/chain.ts gateName), or null: the v1
 * file by its base name (`on_task_completed`), a chain file by its place
 * (`on_task_completed.d/10-lint.sh`), a handler as `http:<name>`, a file binding as `binding:<name>`.
 */
export function gateNameProblem(name: string): string | null {
  if (V1_NAMES.has(name) || CHAIN_NAME.test(name) || HANDLER_GATE.test(name) || BINDING_GATE.test(name)) return null;
  const v1 = /^(on_[a-z_]+)\.(sh|js|mjs)$/.exec(name)?.[1];
  if (v1 !== undefined && V1_NAMES.has(v1))
    return `is not a gate name: the v1 file is named ${v1} whatever its extension`;
  return `is not a gate name as logs show it (${[...V1_NAMES].join(", ")}, on_<event>.d/<file>, http:<handler>, binding:<name>)`;
}

/**
 * What the two checks above accept, as patterns for the documented config schema (cli/schema.ts),
 * built from the same lists so that a new event or task field reaches both.
 */
const EVENT_NAMES = HOOK_EVENTS.map((e) => HOOK_BASE_NAMES[e].slice("on_".length)).join("|");
const TASK_FIELDS = CONTEXT_TASK_FIELDS.filter((f) => f !== "metadata").join("|");
export const GATE_NAME_PATTERN = new RegExp(
  `^(on_(${EVENT_NAMES})(\\.d\\/[A-Za-z0-9_.-]+)?|http:[A-Za-z0-9_.-]+|binding:[A-Za-z0-9_.-]{1,64})$`,
);
export const PROJECTION_PATH_PATTERN = new RegExp(
  `^(version|event|team(\\.(id|dir|taskListId|style))?|member|timestamp|notification|task(\\.(${TASK_FIELDS}|metadata(\\.[^.]+)*))?)$`,
);

const projectionPath = z.string().superRefine((path, ctx) => {
  const problem = projectionPathProblem(path);
  if (problem !== null) ctx.addIssue({ code: "custom", message: `${JSON.stringify(path)} ${problem}` });
});

/** `hooks.projection`: gate name → the dotted fields it may see (identity fields always). */
export const ProjectionSchema = z.record(z.string(), z.array(projectionPath)).superRefine((projection, ctx) => {
  for (const name of Object.keys(projection)) {
    const problem = gateNameProblem(name);
    if (problem !== null) ctx.addIssue({ code: "custom", path: [name], message: problem });
  }
});
export type Projection = Readonly<Record<string, readonly string[]>>;

/** `hooks.confidential`: a boolean (JSON's, or the words a person would write in a file). */
export const ConfidentialSchema = z.union([z.boolean(), z.enum(["true", "false"]).transform((v) => v === "true")]);

/** `hooks.redactEnv`: names of variables whose values never reach a log, a task or a message. */
export const RedactEnvSchema = z.array(
  z.string().regex(ENV_NAME, "must be an environment variable name (letters, digits, _; not starting with a digit)"),
);

/**
 * The block-wide check (the handlers are in the same block): a projection for `http:<name>` must
 * name a declared handler. Returns one problem per bad key, with the path of its field.
 */
export function projectionHandlerProblems(
  projection: Projection | null | undefined,
  handlers: readonly HandlerDef[] | null | undefined,
): Array<{ path: string[]; message: string }> {
  const declared = new Map((handlers ?? []).map((h) => [h.name.toLowerCase(), h.name]));
  const problems: Array<{ path: string[]; message: string }> = [];
  for (const name of Object.keys(projection ?? {})) {
    const handler = HANDLER_GATE.exec(name)?.[1];
    if (handler === undefined) continue;
    const found = declared.get(handler.toLowerCase());
    if (found === handler) continue;
    problems.push({
      path: ["projection", name],
      message:
        found === undefined
          ? `names no handler of hooks.handlers (${[...declared.values()].map((n) => `http:${n}`).join(", ") || "none declared"})`
          : `names no handler of hooks.handlers: did you mean http:${found}?`,
    });
  }
  return problems;
}

/** What hooks see and what is redacted, as one event needs it (settings/team-settings.ts `privacyOf`). */
export interface PrivacySettings {
  projection: Projection;
  confidential: boolean;
  redactEnv: readonly string[];
}

/** The fields `gate` may see, or null: every field (no projection names it). */
export function projectionFor(projection: Projection, gate: string): readonly string[] | null {
  return Object.hasOwn(projection, gate) ? (projection[gate] ?? null) : null;
}

/**
 * The variables whose values are redacted from what hooks say: every handler's secret headers,
 * signing key and `{{secret.…}}` placeholders (a file hook runs with the same environment, so it can
 * print them too), then `hooks.redactEnv`; each once.
 */
export function secretEnvNames(handlers: readonly HandlerDef[], redactEnv: readonly string[]): string[] {
  const names = new Set<string>();
  for (const handler of handlers) {
    for (const variable of Object.values(handler.secretHeaders ?? {})) names.add(variable);
    if (handler.signingSecretEnv !== undefined) names.add(handler.signingSecretEnv);
    for (const variable of templateSecretVariables(handler.body)) names.add(variable);
  }
  for (const variable of redactEnv) names.add(variable);
  return [...names];
}

/** A privacy setting as settings/team-settings.ts reports it (its `Effective`). */
type PrivacySetting<T> = { value: T; source: "config" | "default"; origin: string };

/**
 * The privacy settings in force when config.json's `hooks` block was refused (`refused`: that block
 * as written): a refusal must not put what the team asked to keep secret on disk. The variables the
 * refused block names for redaction (`redactEnv`, its handlers' secret headers and signing keys, read
 * leniently: each a variable name) are redacted too, and `confidential: true` still keeps content out
 * of the logs. This widens what is withheld, never narrows it: everything else of the block stays
 * refused (its handlers do not run).
 */
export function keepRefusedPrivacy(
  refused: unknown,
  file: string,
  settings: { confidential: PrivacySetting<boolean>; redactEnv: PrivacySetting<readonly string[]> },
): { confidential: PrivacySetting<boolean>; redactEnv: PrivacySetting<readonly string[]> } {
  if (refused === null || typeof refused !== "object" || Array.isArray(refused)) return settings;
  const block = refused as Record<string, unknown>;
  const names = new Set(settings.redactEnv.value);
  const before = names.size;
  const add = (value: unknown): void => void (typeof value === "string" && ENV_NAME.test(value) && names.add(value));
  if (Array.isArray(block.redactEnv)) block.redactEnv.forEach(add);
  for (const handler of Array.isArray(block.handlers) ? (block.handlers as unknown[]) : []) {
    if (handler === null || typeof handler !== "object") continue;
    const { secretHeaders, signingSecretEnv, body } = handler as Record<string, unknown>;
    if (secretHeaders !== null && typeof secretHeaders === "object") Object.values(secretHeaders).forEach(add);
    add(signingSecretEnv);
    templateSecretVariables(body).forEach(add);
  }
  const where = `${path.basename(file)} hooks`;
  const kept = " (of the refused block: kept, for what is withheld)";
  return {
    confidential:
      block.confidential === true && !settings.confidential.value
        ? { value: true, source: "config", origin: `${where}.confidential${kept}` }
        : settings.confidential,
    redactEnv:
      names.size > before
        ? { value: Object.freeze([...names]), source: "config", origin: `${where}.redactEnv${kept}` }
        : settings.redactEnv,
  };
}
