/**
 * Task templates at request time, purely: a request's parameters matched against the template's
 * declared ones (names without regard to case, each declared JSON kind and required flag checked,
 * every problem named), and `{{parameters.<name>}}` rendered in one pass. Values are literal: the
 * text a value brings in is never looked at again, so a value holding `{{parameters.x}}` stays as it
 * is. Strings render without quotes, other JSON values as raw JSON, an optional parameter not given
 * as nothing.
 */
import { PLACEHOLDER, type ParameterType, type TemplateDef } from "../settings/handlers.js";
import type { Problem } from "../settings/problems.js";

type MatchedParameters = { ok: true; values: Record<string, unknown> } | { ok: false; problems: Problem[] };

/** The template a slug names in `templates`, whatever its case; null when there is none. */
export function findTemplate(
  templates: Readonly<Record<string, TemplateDef>>,
  slug: string,
): { slug: string; template: TemplateDef } | null {
  const lower = slug.toLowerCase();
  for (const [name, template] of Object.entries(templates))
    if (name.toLowerCase() === lower) return { slug: name, template };
  return null;
}

/**
 * The supplied parameters by their declared names, or one problem per parameter that is unknown,
 * given twice (in two cases), of the wrong kind, or required and missing (`request_parameter`, its
 * path `parameters.<name>` as the request spelt it).
 */
export function matchParameters(template: TemplateDef, supplied: Readonly<Record<string, unknown>>): MatchedParameters {
  const declared = new Map(
    Object.entries(template.parameters ?? {}).map(([name, def]) => [name.toLowerCase(), { name, def }]),
  );
  const values: Record<string, unknown> = {};
  const givenAs = new Map<string, string>();
  const problems: Problem[] = [];
  const problem = (name: string, text: string): void =>
    void problems.push({ kind: "request_parameter", path: `parameters.${name}`, message: `${name}: ${text}` });
  for (const [name, value] of Object.entries(supplied)) {
    const match = declared.get(name.toLowerCase());
    if (!match) {
      problem(
        name.slice(0, 100),
        "unknown parameter" +
          (declared.size
            ? ` (declared: ${[...declared.values()].map((d) => d.name).join(", ")})`
            : " (the template declares none)"),
      );
      continue;
    }
    const first = givenAs.get(match.name);
    if (first !== undefined) {
      problem(name, `given twice, also as ${first} (names match whatever their case)`);
      continue;
    }
    givenAs.set(match.name, name);
    const kind = kindOf(value);
    if (kind !== match.def.type) {
      problem(name, `expected ${match.def.type}, got ${kind}`);
      continue;
    }
    values[match.name] = value;
  }
  for (const { name, def } of declared.values()) {
    if (def.required && !givenAs.has(name)) problem(name, `missing (required, ${def.type})`);
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, values };
}

/** The JSON kind of a value as templates name them (`null` and `integer` are not kinds of their own). */
function kindOf(value: unknown): ParameterType | "null" {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  switch (typeof value) {
    case "string":
      return "string";
    case "number":
      return "number";
    case "boolean":
      return "boolean";
    default:
      return "object";
  }
}

/** `text` with each `{{parameters.<name>}}` replaced, in one pass (`values` by declared name). */
export function renderTemplate(text: string, values: Readonly<Record<string, unknown>>): string {
  const byLower = new Map(Object.entries(values).map(([name, value]) => [name.toLowerCase(), value]));
  return text.replace(PLACEHOLDER, (_whole, name: string) => {
    const value = byLower.get(name.toLowerCase());
    if (value === undefined) return "";
    return typeof value === "string" ? value : JSON.stringify(value);
  });
}

/** The new task's subject and description. */
export function renderTask(
  template: TemplateDef,
  values: Readonly<Record<string, unknown>>,
): { subject: string; description: string } {
  return {
    subject: renderTemplate(template.subject, values),
    description: renderTemplate(template.description ?? "", values),
  };
}
