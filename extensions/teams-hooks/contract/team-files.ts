/**
 * The files of the team directory as zod schemas (the only source of their TypeScript types): task
 * files, `config.json` and its policy values, mailbox messages and the JSON some of them carry, and
 * who the team is as a hook sees it. Part of hook contract v1 (docs/hook-contract.md); no I/O here.
 */
import { z } from "zod";

const TASK_STATUSES = ["pending", "in_progress", "completed"] as const;

/** A task's `metadata`: any JSON object. */
export const MetadataSchema = z.record(z.string(), z.unknown());

/** One task file. Loose: unknown fields pass through and survive a rewrite. */
export const TaskSchema = z.looseObject({
  id: z.string(),
  subject: z.string(),
  description: z.string(),
  owner: z.string().nullish(),
  status: z.enum(TASK_STATUSES),
  blocks: z.array(z.string()),
  blockedBy: z.array(z.string()),
  metadata: MetadataSchema.optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Task = z.infer<typeof TaskSchema>;

export const FAILURE_ACTIONS = ["warn", "followup", "reopen", "reopen_followup"] as const;
export type FailureAction = (typeof FAILURE_ACTIONS)[number];
export const FOLLOWUP_OWNERS = ["member", "lead", "none"] as const;
export type FollowupOwner = (typeof FOLLOWUP_OWNERS)[number];

/**
 * `config.json`. Every field may be missing (the defaults of settings/options.ts apply: docs/cli.md,
 * "policy"), and the `hooks` values are checked one by one by settings/options.ts so that one bad
 * value costs a warning, not the whole file.
 */
export const TeamConfigSchema = z.looseObject({
  version: z.unknown().optional(),
  teamId: z.unknown().optional(),
  taskListId: z.unknown().optional(),
  leadName: z.unknown().optional(),
  style: z.unknown().optional(),
  hooks: z
    .looseObject({
      failureAction: z.unknown().optional(),
      maxReopensPerTask: z.unknown().optional(),
      followupOwner: z.unknown().optional(),
    })
    .optional(),
  createdAt: z.unknown().optional(),
  updatedAt: z.unknown().optional(),
  members: z.unknown().optional(),
});

/** Who the team is, as the hook sees it. */
export const TeamIdentitySchema = z.object({
  teamId: z.string(),
  teamDir: z.string(),
  taskListId: z.string(),
  leadName: z.string(),
  style: z.string(),
});
export type TeamIdentity = z.infer<typeof TeamIdentitySchema>;

/** One message in a mailbox file (a JSON array of these). Loose, for the same reason as tasks. */
export const MailboxMessageSchema = z.looseObject({
  from: z.string(),
  text: z.string(),
  timestamp: z.string(),
  read: z.boolean(),
  color: z.string().optional(),
  urgent: z.boolean().optional(),
});
export type MailboxMessage = z.infer<typeof MailboxMessageSchema>;
export const MailboxSchema = z.array(z.unknown());

/** The JSON inside an idle message's `text`. */
export const IdleNotificationSchema = z.looseObject({
  type: z.literal("idle_notification"),
  from: z.string(),
  timestamp: z.string(),
  completedTaskId: z.string().optional(),
  completedStatus: z.enum(["completed", "failed"]).optional(),
  failureReason: z.string().optional(),
});
export type IdleNotification = z.infer<typeof IdleNotificationSchema>;

/** The message a follow-up task's owner receives (task namespace). */
const TaskAssignmentSchema = z.object({
  type: z.literal("task_assignment"),
  taskId: z.string(),
  subject: z.string(),
  description: z.string(),
  assignedBy: z.string(),
  timestamp: z.string(),
});
export type TaskAssignment = z.infer<typeof TaskAssignmentSchema>;
