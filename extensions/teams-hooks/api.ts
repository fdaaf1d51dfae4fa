/** The library surface of pi-teams-hooks: named re-exports only, no logic. */
export {
  HOOK_CONTRACT_VERSION,
  HOOK_EVENTS,
  HOOK_BASE_NAMES,
  CONTEXT_LIMITS,
  MAX_ENV_VALUE_BYTES,
  TaskSchema,
  TeamConfigSchema,
  IdleNotificationSchema,
  MailboxMessageSchema,
  ContextDocumentSchema,
  HookInvocationSchema,
  RunResultSchema,
  buildContextDocument,
  buildHookEnvironment,
  truncateText,
} from "./contract.js";
export type {
  HookEventName,
  Task,
  TeamIdentity,
  IdleNotification,
  MailboxMessage,
  ContextDocument,
  HookInvocation,
  HookCommand,
  RunResult,
  RunOutcome,
} from "./contract.js";
export { HooksError, isHooksError, type ErrorCode } from "./errors.js";
export { findHook, type HookDiscovery, type HookCandidate } from "./discover.js";
export { runHook, terminateAllRuns, type RunHookOptions } from "./run.js";
export { writeHookLog, listHookLogs, readHookLog, HookLogRecordSchema, type HookLogRecord } from "./hook-log.js";
export { resolvePolicy, resolveTimeoutMs, type EffectivePolicy, type ResolvedPolicy } from "./options.js";
export { decide, type RemediationPlan } from "./policy.js";
export { invokeEvent, type InvokeRequest, type InvokeOutcome } from "./invoke.js";
export { resolveTeamSetup, type TeamSetup, type TeamSetupInput } from "./team-setup.js";
export { Leader, type LeaderOptions, type LeaderNotice, type EventReport, type LeaderState } from "./leader.js";
export { taskEvent, idleEvents, type HookEvent } from "./events.js";
export { main as runCli, type CliIo } from "./cli.js";
