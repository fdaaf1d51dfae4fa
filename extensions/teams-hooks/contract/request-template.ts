/**
 * The request an HTTP handler sends when it speaks another API (contract v1, additive;
 * docs/ci-gates.md): its `body`, a JSON object whose strings may hold `{{…}}` placeholders, filled
 * from the document the handler is shown and from its run. Pure: a template and values in, the JSON
 * text out; the runner (runner/http.ts) reads the secrets from the environment and hands them in.
 *
 * The grammar, in one place for the settings check, the runner, doctor and the messages:
 *
 * - `{{name}}`, blanks inside the braces allowed; every `{{` starts one, in any string value of the
 *   template (never in a key: what the receiver's field names are is no business of the event).
 * - A name is a run value (`runId`, `eventKey`, `attempt`), a secret (`secret.VARIABLE`, read from the
 *   leader's environment when the request goes out, as `secretHeaders` are), or a field of the
 *   context document as `hooks.projection` names fields (`event`, `member`, `team.id`,
 *   `task.subject`, `task.metadata.<key>…`, `notification`, …). Anything else is a config error.
 * - One pass: a value is never read for placeholders again, so a subject that holds `{{secret.X}}`
 *   sends that text, not the secret.
 * - Each placeholder becomes text inside its string: a string as it is, a number or boolean as
 *   written, an object or list as its JSON, a missing value (no task on `idle`, no member, a field
 *   the handler's view hides) as nothing. The receiver gets valid JSON whatever the values hold:
 *   the result is serialised once, at the end, so quotes and newlines in a value are escaped there.
 */
import type { ContextDocument } from "./contract.js";
import { projectionPathProblem } from "./projection.js";

/** The run's own values a template may name. */
const RUN_PLACEHOLDERS = ["runId", "eventKey", "attempt"] as const;
type RunPlaceholder = (typeof RUN_PLACEHOLDERS)[number];

/** `{{secret.NAME}}`: the value of environment variable NAME, read at send time. */
const SECRET_PREFIX = "secret.";
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A placeholder and the name inside it (trimmed later). Lazy: `{{a}}{{b}}` is two. */
const PLACEHOLDER = /\{\{(.*?)\}\}/g;

/** A JSON value as config.json holds it. */
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

interface TemplateProblem {
  /** Where in the template (object keys and list indexes below `body`). */
  path: Array<string | number>;
  message: string;
}

/** What a name refers to, or why it refers to nothing. */
type Placeholder =
  | { kind: "run"; name: RunPlaceholder }
  | { kind: "secret"; variable: string }
  | { kind: "field"; path: string[] }
  | { kind: "unknown"; problem: string };

function classify(raw: string): Placeholder {
  const name = raw.trim();
  if (name === "") return { kind: "unknown", problem: "is empty" };
  if ((RUN_PLACEHOLDERS as readonly string[]).includes(name)) return { kind: "run", name: name as RunPlaceholder };
  if (name.startsWith(SECRET_PREFIX)) {
    const variable = name.slice(SECRET_PREFIX.length);
    return ENV_NAME.test(variable)
      ? { kind: "secret", variable }
      : {
          kind: "unknown",
          problem: "needs an environment variable name after secret. (letters, digits, _; not starting with a digit)",
        };
  }
  const problem = projectionPathProblem(name);
  if (problem === null) return { kind: "field", path: name.split(".") };
  return {
    kind: "unknown",
    problem: `${problem}; the other placeholders are ${RUN_PLACEHOLDERS.join(", ")} and secret.<VARIABLE>`,
  };
}

/** Every placeholder of every string of `template`, with where it stands. */
function* placeholders(
  template: unknown,
  at: Array<string | number> = [],
): Generator<{ path: Array<string | number>; raw: string; inKey: boolean }> {
  if (typeof template === "string") {
    for (const match of template.matchAll(PLACEHOLDER)) yield { path: at, raw: match[1] ?? "", inKey: false };
  } else if (Array.isArray(template)) {
    for (const [index, item] of template.entries()) yield* placeholders(item, [...at, index]);
  } else if (template !== null && typeof template === "object") {
    for (const [key, value] of Object.entries(template)) {
      for (const match of key.matchAll(PLACEHOLDER)) yield { path: [...at, key], raw: match[1] ?? "", inKey: true };
      yield* placeholders(value, [...at, key]);
    }
  }
}

/**
 * What is wrong with a body template, each problem where it stands; `handler` names the handler in
 * every message (a config.json may declare several, and the path alone says only its index).
 */
export function templateProblems(template: unknown, handler: string): TemplateProblem[] {
  const problems: TemplateProblem[] = [];
  for (const found of placeholders(template)) {
    const shown = `{{${found.raw}}}`;
    if (found.inKey) {
      problems.push({
        path: found.path,
        message: `handler ${JSON.stringify(handler)}: ${shown} is in a key; placeholders go in values only`,
      });
      continue;
    }
    const placeholder = classify(found.raw);
    if (placeholder.kind === "unknown")
      problems.push({
        path: found.path,
        message: `handler ${JSON.stringify(handler)}: ${shown} ${placeholder.problem}`,
      });
  }
  return problems;
}

/** The environment variables a template's `{{secret.NAME}}` placeholders read, each once, in order. */
export function templateSecretVariables(template: unknown): string[] {
  const names = new Set<string>();
  for (const found of placeholders(template)) {
    const placeholder = classify(found.raw);
    if (!found.inKey && placeholder.kind === "secret") names.add(placeholder.variable);
  }
  return [...names];
}

interface TemplateValues {
  /** The document the handler is shown (its projection and the team's confidentiality applied). */
  doc: ContextDocument;
  runId: string;
  /** As the handler is shown it (`X-Pi-Teams-Hook-Event-Key`): hashed when a projection hides the task. */
  eventKey?: string;
  attempt?: number;
  /** The leader's environment, for `{{secret.NAME}}`. */
  env: Readonly<Record<string, string | undefined>>;
}

export interface RenderedBody {
  json: string;
  /** The secret values it holds (to redact from anything kept of the answer). */
  secrets: string[];
  /** Variables named by `{{secret.…}}` that were not set (or empty): their placeholders became nothing. */
  missingSecrets: string[];
}

/** The body a handler sends: `template` with its placeholders filled, as JSON text. */
export function renderTemplate(template: unknown, values: TemplateValues): RenderedBody {
  const secrets = new Set<string>();
  const missing = new Set<string>();
  const valueOfPlaceholder = (raw: string): unknown => {
    const placeholder = classify(raw);
    switch (placeholder.kind) {
      case "run":
        return placeholder.name === "runId"
          ? values.runId
          : placeholder.name === "eventKey"
            ? values.eventKey
            : values.attempt;
      case "secret": {
        const value = values.env[placeholder.variable];
        // An empty value counts as unset, as for a secret header: an empty token authenticates nothing.
        if (value === undefined || value === "") missing.add(placeholder.variable);
        else secrets.add(value);
        return value;
      }
      case "field":
        return fieldOf(values.doc, placeholder.path);
      case "unknown":
        // The settings refuse such a template before a handler runs; a library caller gets nothing for it.
        return undefined;
    }
  };
  const fill = (node: unknown): Json => {
    if (typeof node === "string")
      return node.replace(PLACEHOLDER, (_whole, raw: string) => asText(valueOfPlaceholder(raw)));
    if (Array.isArray(node)) return node.map(fill);
    if (node !== null && typeof node === "object") {
      // fromEntries makes own properties, so a key such as `__proto__` stays a key of the body.
      return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, fill(value)]));
    }
    return node as Json;
  };
  return { json: JSON.stringify(fill(template)), secrets: [...secrets], missingSecrets: [...missing] };
}

/** The value at `path` of the document; undefined when something on the way is not there. */
function fieldOf(doc: ContextDocument, path: readonly string[]): unknown {
  let node: unknown = doc;
  for (const key of path) {
    if (node === null || typeof node !== "object" || Array.isArray(node) || !Object.hasOwn(node, key)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

/** A value as text inside a string: itself, as written, as JSON, or nothing. */
function asText(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}
