/**
 * The HTTP handlers' half of doctor: for each event, each handler of config.json `hooks.handlers`
 * declared for it — where it posts and how (its method, a body template, an answer that holds), its
 * header names, each secret's variable (a header's or a `{{secret.…}}` of the body) and whether it
 * is set in this environment, whether requests are signed, its timeout — and its trust state (a
 * handler is a gate trusted by its definition, trust/trust.ts), plus every trusted handler that no
 * longer runs for the event. Secret values are never read into the report: only whether they are set.
 * Data only; doctor/diagnose.ts assembles the report.
 */
import path from "node:path";
import type { HookEventName } from "../contract/contract.js";
import { templateSecretVariables } from "../contract/request-template.js";
import type { ChainDiscovery } from "../gates/chain.js";
import type { ChainTrust } from "../trust/trust.js";
import { handlerEnabled, type HandlerDef } from "../settings/handlers.js";
import type { Check } from "./gate-checks.js";

/** What doctor says about one handler (never a secret value). */
export interface HandlerReport {
  url: string;
  method: string;
  /** A body template is sent instead of the context document. */
  template: boolean;
  /** `held`: any 2xx holds the gate until a decision comes back. */
  answer: "verdict" | "held";
  /** The variables of the body's `{{secret.…}}` placeholders, and whether each is set. */
  bodySecrets: Array<{ variable: string; set: boolean }>;
  timeoutMs: number;
  /** The static headers' names. */
  headers: string[];
  secretHeaders: Array<{ header: string; variable: string; set: boolean }>;
  /** `signingSecretEnv` and whether it is set; null: requests are not signed. */
  signing: { variable: string; set: boolean } | null;
  /** `no_record`: no trust record yet (the leader's first start trusts it). */
  trust: "trusted" | "new" | "changed" | "no_record";
  /** False: `enabled: false` switches it off; every event skips it and its log says so. */
  enabled: boolean;
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Each handler of `chain` (by gate name), and the checks of the event's handlers. `trust`: the chain
 * checked against the record (null when there is no record yet). `teamId`: config.json's (the context
 * document's `team.id`), which a body template may send.
 */
export function diagnoseHandlers(
  event: HookEventName,
  chain: ChainDiscovery,
  env: Env,
  trust: ChainTrust | null,
  teamDir: string,
  teamId: string,
): { reports: Map<string, HandlerReport>; checks: Check[] } {
  const reports = new Map<string, HandlerReport>();
  const checks: Check[] = [];
  const isSet = (variable: string): boolean => (env[variable] ?? "") !== "";
  const approve = (gate: string): string => `pi-teams-hooks trust --team-dir ${teamDir} ${gate}`;
  for (const hook of chain.hooks) {
    if (hook.kind !== "http" || !hook.handler) continue;
    const gate = hook.name;
    const handler: HandlerDef = hook.handler;
    const change = trust?.changes.find((c) => c.path === gate);
    const report: HandlerReport = {
      url: handler.url,
      method: handler.method ?? "POST",
      template: handler.body !== undefined,
      answer: handler.answer ?? "verdict",
      bodySecrets: templateSecretVariables(handler.body).map((variable) => ({ variable, set: isSet(variable) })),
      timeoutMs: handler.timeoutMs,
      headers: Object.keys(handler.headers ?? {}),
      secretHeaders: Object.entries(handler.secretHeaders ?? {}).map(([header, variable]) => ({
        header,
        variable,
        set: isSet(variable),
      })),
      signing:
        handler.signingSecretEnv === undefined
          ? null
          : { variable: handler.signingSecretEnv, set: isSet(handler.signingSecretEnv) },
      trust:
        trust === null
          ? "no_record"
          : change?.change === "new"
            ? "new"
            : change?.change === "changed"
              ? "changed"
              : "trusted",
      enabled: handlerEnabled(handler),
    };
    reports.set(gate, report);
    if (!report.enabled) {
      const how = "skipped at every event, and each log says so; switching it on again needs no approval";
      const message = `${gate}: disabled (hooks.handlers[].enabled: false): ${how}`;
      checks.push({ level: "info", message, field: "hooks.handlers" });
      continue;
    }

    const parts = [`${report.method} ${report.url}`, `timeout ${report.timeoutMs}ms`];
    if (report.template) parts.push("body from its template");
    if (report.answer === "held") parts.push("a 2xx holds the gate until a decision comes back");
    if (report.headers.length > 0) parts.push(`headers ${report.headers.join(", ")}`);
    for (const s of report.secretHeaders)
      parts.push(`secret ${s.header} from ${s.variable} (${s.set ? "set" : "NOT SET"})`);
    for (const s of report.bodySecrets)
      parts.push(`secret {{secret.${s.variable}}} in the body (${s.set ? "set" : "NOT SET"})`);
    parts.push(
      report.signing
        ? `signed with ${report.signing.variable} (${report.signing.set ? "set" : "NOT SET"})`
        : "not signed",
    );
    if (report.trust === "trusted") parts.push("trusted");
    checks.push({ level: "ok", message: `${gate}: ${parts.join("; ")}` });

    for (const s of report.secretHeaders.filter((x) => !x.set)) {
      checks.push({
        level: "warn",
        message: `${gate}: ${s.variable} is not set in this environment: header ${s.header} is left out of every request (the receiver may refuse it); set it where the leader runs`,
        field: "hooks.handlers",
        kind: "handler_env",
        path: gate,
      });
    }
    for (const s of report.bodySecrets.filter((x) => !x.set)) {
      checks.push({
        level: "warn",
        message: `${gate}: ${s.variable} is not set in this environment: {{secret.${s.variable}}} is left empty in every request's body (the receiver may refuse it); set it where the leader runs`,
        field: "hooks.handlers",
        kind: "handler_env",
        path: gate,
      });
    }
    if (report.signing && !report.signing.set) {
      checks.push({
        level: "warn",
        message: `${gate}: signingSecretEnv ${report.signing.variable} is not set in this environment: requests go out unsigned`,
        field: "hooks.handlers",
        kind: "handler_env",
        path: gate,
      });
    }
    const folder = path.basename(teamDir);
    if (teamId !== folder && sendsTeamId(handler.body)) {
      checks.push({
        level: "warn",
        message: `${gate}: its body sends {{team.id}}, config.json's teamId ${JSON.stringify(teamId)}, but serve, its keys and the task API know this team by its folder's name ${JSON.stringify(folder)}: a job that reports back to /api/v1/teams/${teamId}/… is refused (403 team_not_allowed with a key for ${folder}); set "teamId": ${JSON.stringify(folder)} in ${path.join(teamDir, "config.json")}, or rename the folder to ${teamId}`,
        field: "hooks.handlers",
        path: gate,
      });
    }
    if (cleartext(report.url)) {
      checks.push({
        level: "warn",
        message: `${gate}: ${report.url} is plain http to another machine: the task and any secret header travel unencrypted (use https://)`,
        field: "hooks.handlers",
        kind: "handler_env",
        path: gate,
      });
    }
    if (report.trust === "no_record")
      checks.push({ level: "info", message: `${gate}: trusted when the leader first starts (no trust record yet)` });
    else if (report.trust !== "trusted") {
      const what =
        report.trust === "new"
          ? "is new, not trusted yet"
          : `changed since it was trusted (${change?.detail ?? "its definition"})`;
      checks.push({
        level: "error",
        message: `${gate} ${what}: its events are held (untrusted_hook) until the team lead approves it: ${approve(gate)}`,
        field: "hooks.handlers",
        kind: "gate_untrusted",
        path: gate,
      });
    }
  }
  for (const removed of trust?.changes.filter((c) => c.change === "removed" && c.path.startsWith("http:")) ?? []) {
    checks.push({
      level: "error",
      message: `trusted handler ${removed.path} no longer runs for ${event} (${removed.detail}): its events are held (gate_missing) until the team lead approves: ${approve(removed.path)}`,
      kind: "gate_missing",
      path: removed.path,
    });
  }
  return { reports, checks };
}

/** Plain http to anything but this machine. */
function cleartext(url: string): boolean {
  try {
    const u = new URL(url);
    return (
      u.protocol === "http:" &&
      !["localhost", "127.0.0.1", "[::1]"].includes(u.hostname) &&
      !u.hostname.startsWith("127.")
    );
  } catch {
    return false; // refused by the settings already
  }
}

/** Whether a body template has `{{team.id}}` in any of its strings (request-template.ts's grammar: blanks allowed). */
function sendsTeamId(body: unknown): boolean {
  if (typeof body === "string") return /\{\{\s*team\.id\s*\}\}/.test(body);
  if (Array.isArray(body)) return body.some(sendsTeamId);
  if (body !== null && typeof body === "object") return Object.values(body).some(sendsTeamId);
  return false;
}
