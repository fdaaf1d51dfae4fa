/** The library surface of pi-teams-hooks: named re-exports only, no logic. */
export {
  HOOK_CONTRACT_VERSION,
  HOOK_EVENTS,
  HOOK_BASE_NAMES,
  CONTEXT_LIMITS,
  ContextDocumentSchema,
  HookInvocationSchema,
  buildContextDocument,
  truncateText,
} from "./contract/contract.js";
export type { HookEventName, ContextDocument, HookInvocation } from "./contract/contract.js";
export { TaskSchema, TeamConfigSchema, IdleNotificationSchema, MailboxMessageSchema } from "./contract/team-files.js";
export type { Task, TeamIdentity, IdleNotification, MailboxMessage } from "./contract/team-files.js";
export { MAX_ENV_VALUE_BYTES, RunResultSchema, buildHookEnvironment } from "./contract/hook-run.js";
export type { HookCommand, RunResult, RunOutcome } from "./contract/hook-run.js";
export { HooksError, isHooksError, type ErrorCode } from "./contract/errors.js";
export { findHook, type HookDiscovery, type HookCandidate } from "./gates/discover.js";
export { runHook, terminateAllRuns, type RunHookOptions } from "./runner/run-hook.js";
export { runHandler, HANDLER_HEADERS, type RunHandlerOptions } from "./runner/http.js";
export { HandlerSchema, type HandlerDef } from "./settings/handlers.js";
export { writeHookLog, listHookLogs, readHookLog, HookLogRecordSchema, type HookLogRecord } from "./logs/hook-log.js";
export { resolvePolicy, resolveTimeoutMs, type EffectivePolicy, type ResolvedPolicy } from "./settings/options.js";
export { decide } from "./policy/decide.js";
export type { RemediationPlan } from "./policy/plan.js";
export { invokeEvent, type InvokeRequest, type InvokeOutcome } from "./event/invoke.js";
export { decideDeferral, type DecisionInput, type DecideResult } from "./event/deferral-decision.js";
export type { DeferralRecord, DeferralDecision } from "./deferrals/record.js";
export { resolveTeamSetup, type TeamSetup, type TeamSetupInput } from "./team/setup.js";
export { Leader } from "./leader/leader.js";
export type { LeaderOptions, LeaderNotice, EventReport, LeaderState } from "./leader/notices.js";
export { taskEvent, idleEvents, type HookEvent } from "./contract/events.js";
export { main as runCli, type CliIo } from "./cli/main.js";
export { startTaskServer, type TaskServer, type TaskServerOptions } from "./server/server.js";
export {
  createKey,
  listKeys,
  revokeKey,
  keySpec,
  SCOPES,
  type KeyInfo,
  type KeySpec,
  type Scope,
} from "./server/keys.js";
