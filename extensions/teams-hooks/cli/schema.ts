/**
 * `pi-teams-hooks schema [context|log|task|config]`: the JSON Schema of a file format, generated from
 * its zod schema by `z.toJSONSchema`, so the documented format cannot drift from the parser. The same text is committed
 * under `docs/schema/<name>.schema.json`, and test/unit/schema.test.ts fails when the two differ.
 *
 * Schemas describe what a reader accepts (`io: "input"`): objects allow fields they do not name, as
 * the contract's compatibility policy promises additive changes within a version.
 */
import { z } from "zod";
import type { CliIo, ParsedArgs } from "./io.js";
import { ContextDocumentSchema } from "../contract/contract.js";
import { TaskSchema, TeamConfigSchema, TeamIdentitySchema } from "../contract/team-files.js";
import { HooksError } from "../contract/errors.js";
import { HookLogRecordSchema } from "../logs/hook-log.js";
import { DEFER_TIMEOUT_MS, HandlerSchema, TemplatesSchema } from "../settings/handlers.js";
import { WritableFieldsSchema } from "../contract/merge-patch.js";
import {
  EXIT_CODE_MODES,
  FAILURE_MODES,
  HOOK_POINT_MODES,
  PARTICIPATIONS,
  SWEEP_MODES,
} from "../settings/team-settings.js";
import { SANDBOX_MODES } from "../settings/hook-line.js";
import { GATE_NAME_PATTERN, PROJECTION_PATH_PATTERN, RedactEnvSchema } from "../settings/privacy.js";
import { EffectivePolicySchema } from "../settings/options.js";
import { SETTINGS } from "../settings/table.js";

const mode = z.enum(FAILURE_MODES);
const limit = (max: number) => z.number().int().min(1).max(max).optional();

/**
 * The `hooks` block as people write it. settings/team-settings.ts's `HooksBlockSchema` is what reads it,
 * but its values are normalised through pipes (`" REOPEN "` is `reopen`) that a JSON Schema of the input
 * cannot show as the allowed values; this one names them, and takes the handlers and templates from
 * settings/handlers.ts as they are.
 */
const limitsDoc = z.strictObject({
  maxHooksPerEvent: limit(SETTINGS.maxHooksPerEvent.range.max),
  chainDeadlineMs: limit(SETTINGS.chainDeadlineMs.range.max),
  maxPayloadBytes: limit(SETTINGS.maxPayloadBytes.range.max),
});
const projectionDoc = z
  .record(z.string().regex(GATE_NAME_PATTERN), z.array(z.string().regex(PROJECTION_PATH_PATTERN)))
  .meta({
    description:
      "Gate name as logs show it (on_task_completed, on_task_completed.d/10-lint.sh, http:ci) → the fields of the context document it may see; identity fields always",
  });
/** `hooks.events.<event>`: one hook point's own declaration, over the team's settings for that event. */
const pointDoc = z
  .strictObject({
    modes: z
      .array(z.enum(HOOK_POINT_MODES))
      .meta({ description: "What its gates may do: admit (always), transform (a patch), defer (task events only)" })
      .optional(),
    failureMode: mode.optional(),
    writableFields: WritableFieldsSchema.optional(),
    projection: projectionDoc.optional(),
    participation: z
      .enum(PARTICIPATIONS)
      .meta({ description: "Which global gates of the event a team may drop without an approval" })
      .optional(),
    limits: limitsDoc.optional(),
  })
  .optional();

const HooksDocSchema = EffectivePolicySchema.extend({
  failureMode: z
    .union([
      mode,
      z.strictObject({
        task_completed: mode.optional(),
        task_failed: mode.optional(),
        idle: mode.optional(),
        task_started: mode.optional(),
      }),
    ])
    .optional(),
  sweep: z.enum(SWEEP_MODES).optional(),
  exitCodes: z.enum(EXIT_CODE_MODES).default(SETTINGS.exitCodes.default).optional(),
  sandbox: z.enum(SANDBOX_MODES).default(SETTINGS.sandbox.default).optional(),
  limits: limitsDoc.optional(),
  handlers: z.array(HandlerSchema).optional(),
  templates: TemplatesSchema.optional(),
  deferTimeoutMs: z
    .number()
    .int()
    .min(DEFER_TIMEOUT_MS.min)
    .max(DEFER_TIMEOUT_MS.max)
    .default(DEFER_TIMEOUT_MS.default)
    .optional(),
  writableFields: WritableFieldsSchema.default([...SETTINGS.writableFields.default]).optional(),
  projection: projectionDoc.optional(),
  confidential: z
    .boolean()
    .default(false)
    .meta({
      description:
        "HTTP handlers are sent, and hook logs keep, no task description or metadata; the subject is replaced by the task id",
    })
    .optional(),
  events: z
    .strictObject({
      task_completed: pointDoc,
      task_failed: pointDoc,
      idle: pointDoc,
      task_started: pointDoc,
    })
    .optional(),
  redactEnv: RedactEnvSchema.meta({
    description:
      "Environment variables whose values are replaced by [redacted] in hook output, besides the handlers' secrets",
  }).optional(),
}).loose();

/**
 * `config.json`: contract/team-files.ts keeps every field `unknown` so that one bad value costs a
 * warning, not the file; the documented shape takes the identity fields from `TeamIdentitySchema` and the `hooks`
 * block from HooksDocSchema (with its defaults).
 */
const ConfigFileSchema = TeamConfigSchema.extend({
  ...TeamIdentitySchema.pick({ teamId: true, taskListId: true, leadName: true, style: true }).partial().shape,
  hooks: HooksDocSchema.optional(),
});

const SCHEMAS = Object.freeze({
  context: {
    schema: ContextDocumentSchema,
    title: "pi-teams-hooks hook context document, contract version 1",
    description:
      "What a hook receives on standard input, in PI_TEAMS_HOOK_CONTEXT_FILE and in PI_TEAMS_HOOK_CONTEXT_JSON. See docs/hook-contract.md.",
  },
  log: {
    schema: HookLogRecordSchema,
    title: "pi-teams-hooks hook log record",
    description: "One file in <team dir>/hook-logs/ per hook invocation.",
  },
  task: {
    schema: TaskSchema,
    title: "Team task file",
    description: "tasks/<taskListId>/<id>.json. Fields not named here are kept when the file is rewritten.",
  },
  config: {
    schema: ConfigFileSchema,
    title: "Team config.json",
    description: "The team's config.json. A missing or invalid value falls back to its default with a warning.",
  },
});
type SchemaName = keyof typeof SCHEMAS;
export const SCHEMA_NAMES = Object.keys(SCHEMAS) as SchemaName[];

/** The JSON Schema of `name` as committed in docs/schema/ (2-space JSON and a newline). */
export function schemaJson(name: SchemaName): string {
  const { schema, title, description } = SCHEMAS[name];
  const generated = z.toJSONSchema(schema.meta({ title, description }), { io: "input" });
  return `${JSON.stringify(generated, null, 2)}\n`;
}

export async function schemaCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const [name = "context", ...extra] = args.positionals;
  if (extra.length > 0) throw new HooksError("E_USAGE", `unexpected argument "${extra[0]}"`);
  if (!isSchemaName(name))
    throw new HooksError("E_USAGE", `unknown schema "${name}" (one of ${SCHEMA_NAMES.join(", ")})`);
  io.stdout(schemaJson(name));
  return 0;
}

function isSchemaName(name: string): name is SchemaName {
  return Object.hasOwn(SCHEMAS, name);
}
