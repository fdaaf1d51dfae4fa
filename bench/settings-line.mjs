#!/usr/bin/env node
// What reading a gate's settings line costs, per gate and event (the leader reads it before every
// run of a file gate): a gate file with a settings line, and one without, against a baseline measured
// in the same run: one `statSync` of the same file, the least that looking at a gate costs (discovery
// does several). Build first: `npm run build && node bench/settings-line.mjs [rounds]`.
import "./lib/help.mjs";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { readHookSettings } from "../dist/teams-hooks/gates/discover.js";
import { ms, ratio, table, timeCalls } from "./lib/stats.mjs";

const rounds = Number(process.argv[2] ?? 20_000);
const dir = mkdtempSync(path.join(os.tmpdir(), "bench-settings-"));
const withLine = path.join(dir, "on_task_completed.sh");
const without = path.join(dir, "on_idle.sh");
const body = 'echo "checking task #$PI_TEAMS_TASK_ID"\nnpm test --silent || exit 1\n'.repeat(40);
writeFileSync(
  withLine,
  `#!/usr/bin/env bash\n# pi-teams-hooks: timeout=300s members=impl-*,qa labels=backend paths=src/** mode=shadow\n${body}`,
  { mode: 0o755 },
);
writeFileSync(without, `#!/usr/bin/env bash\n${body}`, { mode: 0o755 });

const time = (fn) => timeCalls(fn, rounds, 500);

try {
  const read = readHookSettings(withLine, "task_completed");
  if (!read.ok || read.settings?.mode !== "shadow")
    throw new Error(`the settings line was not read: ${JSON.stringify(read)}`);
  const stat = time(() => statSync(withLine));
  const lined = time(() => readHookSettings(withLine, "task_completed"));
  const plain = time(() => readHookSettings(without, "task_completed"));
  const row = (name, s) => [name, ms(s.median, 4), ms(s.p99, 4), ratio(s.median, stat.median)];
  console.log(`${rounds} rounds, gate files of ${statSync(withLine).size} bytes`);
  console.log(
    table([
      ["", "median", "p99", "vs statSync"],
      row("statSync (baseline)", stat),
      row("settings line, 6 keys", lined),
      row("no settings line", plain),
    ]),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
