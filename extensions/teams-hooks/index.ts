/**
 * The pi extension: in a pi leader session, run the quality-gate leader for the session's team.
 * pi loads this file (and only this file) from `extensions/teams-hooks/`.
 *
 * Off unless `PI_TEAMS_GATES=1` or `pi --gates`; never in a worker (`PI_TEAMS_WORKER=1`); never beside
 * pi-agent-teams' own hook runner (`PI_TEAMS_HOOKS_ENABLED=1`). The team is the session's
 * (`<PI_TEAMS_ROOT_DIR or ~/.pi/agent/teams>/<session id>`, or the team the session attached to), or
 * `PI_TEAMS_HOOKS_TEAM_DIR` when set. Everything else (hooks dir, policy) comes from the environment
 * and config.json, exactly as for `pi-teams-hooks watch`. `/gates` and the `quality_gates` tool show
 * and tune it.
 */
import { gatesCommand } from "./pi/command.js";
import type { GateService } from "./pi/gates.js";
import { type GatesAccess, type GatesCode, loadGatesCode } from "./pi/load.js";
import type { NotifyLevel, PiApi, PiContext } from "./pi/pi-api.js";
import { gateSwitch } from "./pi/switch.js";
import { gatesTool } from "./pi/tool.js";

/** Notices said once per process, however often pi replaces the session (and loads this file again). */
const SAID: Set<string> = ((globalThis as Record<symbol, Set<string> | undefined>)[
  Symbol.for("pi-teams-hooks.said")
] ??= new Set());

export default function teamsHooksExtension(pi: PiApi): void {
  const env = process.env;
  const cwd = process.cwd();
  // The leader and everything it needs load only when used (pi/load.ts): with the gates off, a pi
  // session pays for this file, the switch and the tool's schema, nothing more.
  let code: Promise<GatesCode> | null = null;
  let service: Promise<GateService> | null = null;
  const loaded = (): Promise<GatesCode> => (code ??= loadGatesCode());
  const gates = (): Promise<GateService> =>
    (service ??= loaded().then((c) => new c.gates.GateService({ env, processCwd: cwd })));
  const access: GatesAccess = {
    service: async () => {
      const running = await gates();
      const decided = gateSwitch(env, pi.getFlag("gates"));
      if (!decided.on && running.status.phase === "off") running.off(decided.why);
      return running;
    },
    report: () => loaded().then((c) => c.report),
    origin: () => loaded().then((c) => c.from),
  };

  pi.registerFlag("gates", {
    description: "Run the team's quality gates in this leader session (pi-teams-hooks; same as PI_TEAMS_GATES=1)",
    type: "boolean",
    default: false,
  });

  pi.on("session_start", async (_event, ctx) => {
    const notify = (text: string, level: NotifyLevel): void => ctx.ui.notify(text, level);
    const decided = gateSwitch(env, pi.getFlag("gates"));
    if (!decided.on) {
      if (service) (await service).off(decided.why);
      if (decided.notice && !SAID.has(decided.notice.text)) {
        SAID.add(decided.notice.text);
        notify(decided.notice.text, decided.notice.level);
      }
      return;
    }
    await (await gates()).begin(sessionIdOf(ctx), notify);
  });

  pi.on("session_shutdown", async () => {
    if (service) await (await service).end();
  });

  pi.registerCommand("gates", gatesCommand(access, env, cwd));
  pi.registerTool(gatesTool(access, env, cwd));
}

function sessionIdOf(ctx: PiContext): string {
  return ctx.sessionManager.getSessionId();
}
