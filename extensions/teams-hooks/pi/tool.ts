/**
 * `quality_gates`, the tool the leader's model calls to see why a teammate's task bounced and to tune
 * the policy: `status`, `recent_failures`, `policy_get`, `policy_set`. It reads files and writes
 * config.json under its lock; it never waits for a gate that is running.
 */
import { Type, type Static } from "typebox";
import type { GatesAccess } from "./load.js";
import type { PiTool, PiToolResult } from "./pi-api.js";

type Env = Readonly<Record<string, string | undefined>>;

const ACTIONS = ["status", "recent_failures", "policy_get", "policy_set"] as const;

// A plain string enum (not a union of literals): what every model provider's tool schema accepts.
const Parameters = Type.Object({
  action: Type.Unsafe<(typeof ACTIONS)[number]>({ type: "string", enum: [...ACTIONS], description: "what to do" }),
  failureAction: Type.Optional(Type.String({ description: "policy_set: warn, followup, reopen or reopen_followup" })),
  maxReopens: Type.Optional(
    Type.Integer({ minimum: 0, description: "policy_set: how many times one task may be reopened by the gate" }),
  ),
  followupOwner: Type.Optional(Type.String({ description: "policy_set: member, lead or none" })),
  reset: Type.Optional(
    Type.Boolean({ description: "policy_set: remove the three settings from config.json first (defaults apply)" }),
  ),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 50, description: "recent_failures: how many (default 10)" }),
  ),
});
type Params = Static<typeof Parameters>;

function text(body: string, details: unknown): PiToolResult {
  return { content: [{ type: "text", text: body.trimEnd() }], details };
}

/** The gates' code loads on first use: a session that never calls the tool never loads it. */
export function gatesTool(gates: GatesAccess, env: Env, cwd: string): PiTool<typeof Parameters> {
  return {
    name: "quality_gates",
    label: "Quality gates",
    description:
      "The team's quality gates (pi-teams-hooks): status (gates per event, trust, policy, last outcomes), recent_failures (why tasks bounced: summaries and log names), policy_get, policy_set (failureAction, maxReopens, followupOwner, reset).",
    promptSnippet: "See and tune the team's quality gates (why a task was reopened, the failure policy)",
    promptGuidelines: [
      "Use quality_gates with action recent_failures when a teammate's task was reopened or a gate failed, before asking the teammate.",
    ],
    parameters: Parameters,
    async execute(_toolCallId, params: Params) {
      const service = await gates.service();
      const { failuresText, recentFailures, runCli, statusText } = await gates.report();
      const teamDir = await service.teamDir();
      if (params.action === "status")
        return text(await statusText(service.status, teamDir, env, cwd), { phase: service.status.phase, teamDir });
      if (!teamDir) throw new Error(`quality gates: no team yet (${service.status.detail})`);
      if (params.action === "recent_failures") {
        const timeoutMs = service.status.setup?.settings.timeoutMs.value ?? 60_000;
        const { items, problems } = await recentFailures(teamDir, params.limit ?? 10, timeoutMs);
        const note = problems.length
          ? `\n(${problems.length} log file(s) could not be read: ${problems.slice(0, 3).join("; ")})`
          : "";
        return text(failuresText(items) + note, { failures: items });
      }
      const argv =
        params.action === "policy_get"
          ? ["policy", "get", "--team-dir", teamDir]
          : ["policy", "set", ...setFlags(params), "--team-dir", teamDir];
      const out = await runCli(argv, env, cwd);
      // A refused value is an error the model sees with the CLI's reason (the flag, the value, what is allowed).
      if (out.code !== 0)
        throw new Error(
          inToolTerms(out.stderr.trim() || out.stdout.trim() || `policy ${argv[1]} failed (exit ${out.code})`),
        );
      return text(out.stdout, { teamDir });
    },
  };
}

const PARAM_OF_FLAG: ReadonlyArray<[string, string]> = [
  ["--failure-action", "failureAction"],
  ["--max-reopens", "maxReopens"],
  ["--followup-owner", "followupOwner"],
  ["--reset", "reset"],
];

/** The CLI's message as the model asked: parameter names for flags, no pointer to `--help`. */
function inToolTerms(message: string): string {
  let out = message.replace(/^pi-teams-hooks policy: /, "").replace(/\n?\(see: pi-teams-hooks [^)]*\)/g, "");
  for (const [flag, param] of PARAM_OF_FLAG) out = out.replaceAll(flag, param);
  return `policy_set refused: ${out}`;
}

function setFlags(p: Params): string[] {
  return [
    ...(p.reset ? ["--reset"] : []),
    ...(p.failureAction !== undefined ? ["--failure-action", p.failureAction] : []),
    ...(p.maxReopens !== undefined ? ["--max-reopens", String(p.maxReopens)] : []),
    ...(p.followupOwner !== undefined ? ["--followup-owner", p.followupOwner] : []),
  ];
}
