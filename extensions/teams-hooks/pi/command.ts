/**
 * `/gates` in a pi leader session: `status` (the default), `logs [filters]`, `doctor`, and
 * `policy get|set …`. The last three are the CLI's own commands run in-process against the team the
 * session follows, so their filters, validation and output are the CLI's; only what would block the
 * session (`logs --follow`) or name another team (`--team-dir`) is refused.
 */
import type { GatesAccess } from "./load.js";
import type { NotifyLevel, PiCommand } from "./pi-api.js";

type Env = Readonly<Record<string, string | undefined>>;

const GATES_USAGE = [
  "usage: /gates [status | logs [filters] | doctor | policy get | policy set FLAGS | help]",
  "  status               team dir, each event's gates and their trust, the policy and where each value came from, the last 5 outcomes",
  "  logs [filters]       the hook-logs table: --event, --task, --member, --outcome, --since, --trigger, --limit, or `logs show ID`, `logs stats`",
  "  doctor               what would stop a gate from running (nothing is run)",
  "  policy get           the effective policy",
  "  policy set FLAGS     --failure-action A, --max-reopens N, --followup-owner O, --reset (written to config.json)",
  "  trust [--all | PATH…] the gates changed since they were approved; with --all or paths, approves them (you, typed here: the model's tool cannot)",
].join("\n");

const SUBCOMMANDS = ["status", "logs", "doctor", "policy", "trust", "help"];

/** Splits a command line as a shell would for plain words and '…' / "…" quotes (no expansion). */
function splitArgs(line: string): string[] {
  const out: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  for (const m of line.matchAll(re)) out.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : (m[2] ?? m[3] ?? ""));
  return out;
}

/** The gates' code loads on first use (the command's first run, when the gates are off). */
export function gatesCommand(gates: GatesAccess, env: Env, cwd: string): PiCommand {
  return {
    description: "Quality gates: status, logs, doctor, policy get|set, trust",
    getArgumentCompletions: (prefix) => {
      const items = SUBCOMMANDS.filter((s) => s.startsWith(prefix.trim())).map((s) => ({ value: s, label: s }));
      return items.length ? items : null;
    },
    handler: async (args, ctx) => {
      const say = (text: string, level: NotifyLevel): void => ctx.ui.notify(text.trimEnd(), level);
      const [sub = "status", ...rest] = splitArgs(args);
      if (sub === "help" || sub === "--help" || sub === "-h") return say(GATES_USAGE, "info");
      if (!SUBCOMMANDS.includes(sub)) return say(`/gates: unknown subcommand "${sub}"\n${GATES_USAGE}`, "warning");
      const service = await gates.service();
      const { runCli, statusText } = await gates.report();
      const teamDir = await service.teamDir();
      if (sub === "status") {
        const origin =
          (await gates.origin()) === "build"
            ? "the compiled build (dist/)"
            : "the TypeScript sources, through pi's loader (dist/ missing or older than a source)";
        return say(`${await statusText(service.status, teamDir, env, cwd)}code: ${origin}\n`, "info");
      }
      if (!teamDir) return say(`/gates ${sub}: no team yet (${service.status.detail})`, "warning");
      const refused = rest.find(
        (a) => a === "--team-dir" || a.startsWith("--team-dir=") || a === "--team" || a.startsWith("--team="),
      );
      if (refused)
        return say(
          `/gates ${sub}: ${refused.split("=")[0]} is not taken here: /gates works on the session's team (${teamDir})`,
          "warning",
        );
      if (sub === "logs" && rest.some((a) => a === "--follow" || a === "-f" || /^-[a-zA-Z]*f/.test(a))) {
        return say(
          "/gates logs: --follow would hold the session; run `pi-teams-hooks logs --follow` in a terminal instead",
          "warning",
        );
      }
      // Positionals first (`logs show ID`, `policy set`), then the team as a flag. A slash command is
      // typed by the person in the session (never by the model, whose tool has no approval): `trust`
      // records what it shows, and says it was approved here.
      const approval = sub === "trust" ? { approval: "in pi (/gates trust, typed in the session)" } : {};
      const out = await runCli([sub, ...rest, "--team-dir", teamDir], env, cwd, approval);
      const text = `${out.stdout}${out.stderr}`;
      say(
        text || "(nothing to show)",
        out.code === 0 ? "info" : out.code === 1 && sub === "doctor" ? "warning" : "error",
      );
    },
  };
}
