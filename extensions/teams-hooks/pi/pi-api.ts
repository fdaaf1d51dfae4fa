/**
 * The part of pi's extension API this extension uses, typed here so that the package runs without pi
 * installed (pi loads it; nothing else does). test/types/pi-api.ts checks at build time that pi's own
 * types fit these: a pi release that changes one of them fails `npm run build`, not a user's session.
 */
import type { Static, TSchema } from "typebox";

export type NotifyLevel = "info" | "warning" | "error";

interface PiUi {
  notify(message: string, type?: NotifyLevel): void;
}

interface PiSessionManager {
  getSessionId(): string;
}

export interface PiContext {
  ui: PiUi;
  hasUI: boolean;
  cwd: string;
  sessionManager: PiSessionManager;
}

export interface PiSessionEvent {
  reason: string;
}

export interface PiToolResult {
  content: Array<{ type: "text"; text: string }>;
  details: unknown;
}

export interface PiTool<P extends TSchema> {
  name: string;
  label: string;
  description: string;
  promptSnippet?: string;
  promptGuidelines?: string[];
  parameters: P;
  execute(
    toolCallId: string,
    params: Static<P>,
    signal: AbortSignal | undefined,
    onUpdate: unknown,
    ctx: PiContext,
  ): Promise<PiToolResult>;
}

export interface PiCommand {
  description: string;
  getArgumentCompletions?: (prefix: string) => Array<{ value: string; label: string }> | null;
  handler: (args: string, ctx: PiContext) => Promise<void>;
}

export interface PiApi {
  on(event: "session_start", handler: (event: PiSessionEvent, ctx: PiContext) => Promise<void>): void;
  on(event: "session_shutdown", handler: (event: PiSessionEvent, ctx: PiContext) => Promise<void>): void;
  registerCommand(name: string, options: PiCommand): void;
  registerTool<P extends TSchema>(tool: PiTool<P>): void;
  registerFlag(name: string, options: { description?: string; type: "boolean"; default?: boolean }): void;
  getFlag(name: string): boolean | string | undefined;
}
