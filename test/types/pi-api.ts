/**
 * Build-time check that pi's own extension types fit the subset extensions/teams-hooks/pi/pi-api.ts
 * declares (the extension does not import pi at run time). Compiled by `npm run build` and
 * `npm run typecheck`; nothing here runs.
 */
import type {
  ExtensionAPI,
  ExtensionCommandContext,
  ExtensionContext,
  RegisteredCommand,
  SessionShutdownEvent,
  SessionStartEvent,
  ToolDefinition,
} from "@mariozechner/pi-coding-agent";
import type { TSchema } from "typebox";
import type { PiApi, PiCommand, PiContext, PiSessionEvent, PiTool } from "../../extensions/teams-hooks/pi/pi-api.js";

type Assert<T extends true> = T;
type Fits<A, B> = [A] extends [B] ? true : false;

// What pi hands to the extension must be what the extension expects…
export type ApiFits = Assert<Fits<ExtensionAPI, PiApi>>;
export type ContextFits = Assert<Fits<ExtensionContext, PiContext>>;
export type CommandContextFits = Assert<Fits<ExtensionCommandContext, PiContext>>;
export type StartEventFits = Assert<Fits<SessionStartEvent, PiSessionEvent>>;
export type ShutdownEventFits = Assert<Fits<SessionShutdownEvent, PiSessionEvent>>;
// …and what the extension hands to pi must be what pi takes (checked one way each: no method bivariance).
export const tool = (t: PiTool<TSchema>): ToolDefinition => t;
export const command = (c: PiCommand): Omit<RegisteredCommand, "name" | "sourceInfo"> => c;
export const startHandler = (h: (event: PiSessionEvent, ctx: PiContext) => Promise<void>): Parameters<typeof on>[1] =>
  h;
declare const on: (
  event: "session_start",
  handler: (event: SessionStartEvent, ctx: ExtensionContext) => Promise<void> | void,
) => void;
