/**
 * The parts of config.json's `hooks` block that reach past the hooks dir, validated with the rest of
 * the block (settings/team-settings.ts): HTTP handlers (`hooks.handlers`, gates that run on another
 * machine), task templates (`hooks.templates`, what the task API may create) and how long a deferred
 * gate waits for its decision (`hooks.deferTimeoutMs`). docs/remote-gates.md has the whole story.
 * Pure: values in, values out.
 */
import { z } from "zod";
import { HOOK_EVENTS, canDefer } from "../contract/contract.js";
import { templateProblems } from "../contract/request-template.js";
import { SETTINGS } from "./table.js";

// ---------------------------------------------------------------------------------------------
// HTTP handlers

/** The methods a handler may send: those that carry a body. */
const HANDLER_METHODS = ["POST", "PUT", "PATCH"] as const;
/**
 * How a handler's answer is read: `verdict` (the default), a verdict in a 2xx body; `held`, any 2xx
 * holds the gate until a decision comes back (docs/ci-gates.md), whatever the body says.
 */
export const HANDLER_ANSWERS = ["verdict", "held"] as const;

/** A handler's timeout: at least a second, at most five minutes. */
export const HANDLER_TIMEOUT_MS = Object.freeze({ min: 1_000, max: 300_000, default: 10_000 });

/** A header name as HTTP defines it (a token: letters, digits and ``!#$%&'*+-.^_`|~``). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Headers the runner sets itself: a handler may not set them. */
const RESERVED_HEADERS = new Set([
  "content-type",
  "content-length",
  "host",
  "connection",
  "transfer-encoding",
  "keep-alive",
  "expect",
  "upgrade",
  "te",
  "trailer",
]);
/** The context headers' prefix (and the signature's): ours alone. */
const RESERVED_PREFIX = "x-pi-teams-";
/** An environment variable name, as a shell writes one. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A handler's name: in gate names (`http:ci`), logs and the trust record. */
const HANDLER_NAME = /^[A-Za-z0-9_.-]+$/;

/**
 * Why `name` cannot be a handler's header, or null when it can. (A record key's own schema loses its message in zod.)
 */
function headerNameProblem(name: string): string | null {
  if (!HEADER_NAME.test(name)) return "must be a header name (letters, digits and !#$%&'*+-.^_`|~, no blanks)";
  if (RESERVED_HEADERS.has(name.toLowerCase())) return "is set by pi-teams-hooks itself";
  if (name.toLowerCase().startsWith(RESERVED_PREFIX))
    return `names starting with ${RESERVED_PREFIX} are pi-teams-hooks' own`;
  return null;
}

const headerValue = z.string().refine((value) => !/[\r\n\0]/.test(value), "must not contain CR, LF or NUL");

const envName = z
  .string()
  .regex(ENV_NAME, "must be an environment variable name (letters, digits, _; not starting with a digit)");

/** An absolute http(s) URL without credentials (those go in secretHeaders, which never reach a log). */
const handlerUrl = z.string().superRefine((value, ctx) => {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    ctx.addIssue({ code: "custom", message: "must be an absolute URL (http:// or https://)" });
    return;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    ctx.addIssue({ code: "custom", message: `must be http:// or https://, got ${url.protocol}//` });
  if (url.username !== "" || url.password !== "")
    ctx.addIssue({
      code: "custom",
      message: "must not hold credentials (they would be logged): put them in secretHeaders",
    });
});

/** A handler's `timeoutMs` as written: a whole number (or a string of digits); `"lots"`, `1.5`, `true` are mistakes. */
const handlerTimeout = z
  .union([
    z.number().int("expected a whole number of milliseconds"),
    z
      .string()
      .trim()
      .regex(/^-?\d+$/, "expected a whole number of milliseconds")
      .transform(Number),
  ])
  .meta({
    description: `milliseconds; a value outside ${HANDLER_TIMEOUT_MS.min}–${HANDLER_TIMEOUT_MS.max} is capped to that range, with a warning`,
  });

export const HandlerSchema = z
  .strictObject({
    name: z
      .string()
      .trim()
      .min(1, "must not be blank")
      .max(64, "must be at most 64 characters")
      .regex(HANDLER_NAME, "must hold only letters, digits, _ . -"),
    events: z
      .array(z.enum(HOOK_EVENTS))
      .min(1, "must name at least one event")
      .refine((events) => new Set(events).size === events.length, "must not name an event twice"),
    url: handlerUrl,
    headers: z.record(z.string(), headerValue).optional(),
    /** Header name → the environment variable that holds its value (read at send time, never logged). */
    secretHeaders: z.record(z.string(), envName).optional(),
    /** The environment variable holding the HMAC key of `X-Pi-Teams-Signature`. */
    signingSecretEnv: envName.optional(),
    /**
     * A whole number of milliseconds, in range or not: one outside HANDLER_TIMEOUT_MS is a request the
     * settings cap (settings/team-settings.ts `capLimits`), with a warning, as the limits are.
     */
    timeoutMs: handlerTimeout.default(HANDLER_TIMEOUT_MS.default),
    /** The request's method; POST when not given. */
    method: z.enum(HANDLER_METHODS).optional(),
    /**
     * The body to send instead of the context document: JSON whose strings may hold `{{…}}` placeholders
     * (contract/request-template.ts).
     */
    body: z.record(z.string(), z.unknown()).optional(),
    /**
     * `held`: any 2xx holds the gate until a decision comes back; `verdict` (the default): the answer's verdict
     * decides.
     */
    answer: z.enum(HANDLER_ANSWERS).optional(),
    /**
     * `false`: the handler is skipped, and each event's log says so. Not part of its trusted definition
     * (trust/trust.ts `handlerDefinitionText`): switching it off or on again needs no approval.
     */
    enabled: z.boolean().optional(),
  })
  .superRefine((handler, ctx) => {
    for (const problem of templateProblems(handler.body, handler.name))
      ctx.addIssue({ code: "custom", path: ["body", ...problem.path], message: problem.message });
    const waitless = handler.answer === "held" ? handler.events.filter((event) => !canDefer(event)) : [];
    if (waitless.length > 0) {
      ctx.addIssue({
        code: "custom",
        path: ["answer"],
        message: `"held" holds a gate until a decision comes back, and ${waitless.join(" and ")} cannot wait (only task_completed and task_failed can be held): give this handler only those events, or answer "verdict"`,
      });
    }
    const seen = new Map<string, string>();
    for (const [where, names] of [
      ["headers", Object.keys(handler.headers ?? {})],
      ["secretHeaders", Object.keys(handler.secretHeaders ?? {})],
    ] as const) {
      for (const name of names) {
        const problem = headerNameProblem(name);
        if (problem !== null) ctx.addIssue({ code: "custom", path: [where, name], message: problem });
        const lower = name.toLowerCase();
        const first = seen.get(lower);
        if (first !== undefined)
          ctx.addIssue({
            code: "custom",
            path: [where, name],
            message: `is the same header as ${first} (header names are unique, whatever their case)`,
          });
        else seen.set(lower, `${where}.${name}`);
      }
    }
  });
export type HandlerDef = z.output<typeof HandlerSchema>;
export type HandlerInput = z.input<typeof HandlerSchema>;

export const HandlersSchema = z.array(HandlerSchema).superRefine((handlers, ctx) => {
  const seen = new Map<string, number>();
  handlers.forEach((handler, index) => {
    const first = seen.get(handler.name.toLowerCase());
    if (first !== undefined)
      ctx.addIssue({
        code: "custom",
        path: [index, "name"],
        message: `${JSON.stringify(handler.name)} is also the name of handler ${first} (names are unique, whatever their case)`,
      });
    else seen.set(handler.name.toLowerCase(), index);
  });
});

/** Whether a handler runs: `enabled` is true unless it says `false`. */
export function handlerEnabled(handler: Pick<HandlerDef, "enabled">): boolean {
  return handler.enabled !== false;
}

/** The gate name of a handler, as logs, task metadata and the trust record name it: `http:ci`. */
export function handlerGateName(name: string): string {
  return `http:${name}`;
}

// ---------------------------------------------------------------------------------------------
// Task templates (the task API creates tasks only from these)

const PARAMETER_TYPES = ["string", "number", "boolean", "object", "array"] as const;
export type ParameterType = (typeof PARAMETER_TYPES)[number];

/** A template's slug: what the API's `template` names, compared lower case. */
const SLUG = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
/** A parameter's name, as `{{parameters.<name>}}` refers to it. */
const PARAMETER_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** `{{parameters.name}}`, blanks inside the braces allowed. */
export const PLACEHOLDER = /\{\{\s*parameters\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

const ParameterSchema = z.strictObject({
  type: z.enum(PARAMETER_TYPES),
  required: z.boolean().optional(),
  description: z.string().optional(),
});

export const TemplateSchema = z
  .strictObject({
    subject: z.string().refine((s) => s.trim() !== "", "must not be blank"),
    description: z.string().optional(),
    /** The member the new task is assigned to (and told, as a lead would). */
    owner: z
      .string()
      .regex(/^[A-Za-z0-9_-]+$/, "must be a member name (letters, digits, _ and -)")
      .optional(),
    parameters: z.record(z.string(), ParameterSchema).optional(),
  })
  .superRefine((template, ctx) => {
    const declared = new Map<string, string>();
    for (const name of Object.keys(template.parameters ?? {})) {
      if (!PARAMETER_NAME.test(name))
        ctx.addIssue({
          code: "custom",
          path: ["parameters", name],
          message: "must be a parameter name (letters, digits, _; not starting with a digit; at most 64)",
        });
      const first = declared.get(name.toLowerCase());
      if (first !== undefined)
        ctx.addIssue({
          code: "custom",
          path: ["parameters", name],
          message: `is the same parameter as ${first} (names match whatever their case)`,
        });
      else declared.set(name.toLowerCase(), name);
    }
    for (const field of ["subject", "description"] as const) {
      for (const match of (template[field] ?? "").matchAll(PLACEHOLDER)) {
        const name = match[1] ?? "";
        if (!declared.has(name.toLowerCase()))
          ctx.addIssue({
            code: "custom",
            path: [field],
            message: `{{parameters.${name}}} names no declared parameter`,
          });
      }
    }
  });
export type TemplateDef = z.output<typeof TemplateSchema>;

export const TemplatesSchema = z.record(z.string(), TemplateSchema).superRefine((templates, ctx) => {
  const seen = new Map<string, string>();
  for (const slug of Object.keys(templates)) {
    if (!SLUG.test(slug))
      ctx.addIssue({
        code: "custom",
        path: [slug],
        message: "must be a slug (letters, digits, _ and -, at most 64, starting with a letter or digit)",
      });
    const first = seen.get(slug.toLowerCase());
    if (first !== undefined)
      ctx.addIssue({
        code: "custom",
        path: [slug],
        message: `is the same template as ${first} (slugs match whatever their case)`,
      });
    else seen.set(slug.toLowerCase(), slug);
  }
});

// ---------------------------------------------------------------------------------------------
// Deferred gates

/**
 * How long a deferred gate waits for its decision: 24 h unless `hooks.deferTimeoutMs` says otherwise;
 * a value outside the range is capped to it (settings/team-settings.ts `capLimits`).
 */
export const DEFER_TIMEOUT_MS = Object.freeze({
  min: SETTINGS.deferTimeoutMs.range.min,
  max: SETTINGS.deferTimeoutMs.range.max,
  default: SETTINGS.deferTimeoutMs.default,
});
