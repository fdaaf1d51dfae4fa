/**
 * Whether this pi process runs the gates: decided from the environment and pi's `--gates` flag alone,
 * so that a pi session with the gates off loads nothing else of this package.
 */
import type { NotifyLevel } from "./pi-api.js";

type Env = Readonly<Record<string, string | undefined>>;

/** Whether this pi process gates, and what to say once when it does not. */
type GateSwitch = { on: true } | { on: false; why: string; notice: { level: NotifyLevel; text: string } | null };

/**
 * Off unless asked for (`PI_TEAMS_GATES=1` or `--gates`); never in a worker; never beside
 * pi-agent-teams' own hook runner (`PI_TEAMS_HOOKS_ENABLED=1`), which would run every gate a second time.
 */
export function gateSwitch(env: Env, flag: boolean | string | undefined): GateSwitch {
  if (env.PI_TEAMS_WORKER === "1")
    return { on: false, why: "a worker (PI_TEAMS_WORKER=1) never runs gates: its leader does", notice: null };
  const wanted = env.PI_TEAMS_GATES === "1" || flag === true;
  const theirs = env.PI_TEAMS_HOOKS_ENABLED === "1";
  if (wanted && theirs) {
    const why =
      "pi-agent-teams' own hook runner is on in this pi (PI_TEAMS_HOOKS_ENABLED=1), and both would run every gate";
    const text = `quality gates not started: ${why}. Choose one: unset PI_TEAMS_HOOKS_ENABLED to gate with pi-teams-hooks, or drop PI_TEAMS_GATES=1 (and --gates) to keep pi-agent-teams' runner.`;
    return { on: false, why, notice: { level: "warning", text } };
  }
  if (theirs) {
    const why = "PI_TEAMS_HOOKS_ENABLED=1 turns on pi-agent-teams' own hook runner, not this one";
    return {
      on: false,
      why,
      notice: {
        level: "info",
        text: `quality gates off: ${why}; pi-teams-hooks gates with PI_TEAMS_GATES=1 or --gates, without PI_TEAMS_HOOKS_ENABLED.`,
      },
    };
  }
  if (!wanted) return { on: false, why: "off unless PI_TEAMS_GATES=1 or pi --gates", notice: null };
  return { on: true };
}
