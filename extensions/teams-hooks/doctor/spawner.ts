/**
 * Which way a leader with this environment starts its hooks: through the spawn helper (Python 3.8 or
 * later, posix_spawn) or by forking itself. A fact for the person, never a warning: both ways run
 * every gate; forking costs the leader more CPU per event (docs/architecture.md, "The spawn helper").
 */
import { execFile } from "node:child_process";
import { describeError } from "../contract/errors.js";
import { PYTHON_ENV, PYTHON_MIN, SPAWNER_ENV, helperPython } from "../spawn/helper.js";
import type { Check } from "./gate-checks.js";

type Env = Readonly<Record<string, string | undefined>>;

const FORKS = "the leader forks each hook itself (every gate runs; it costs the leader more CPU per event)";
const ASK = "import sys; print(sys.version_info[0], sys.version_info[1], sys.executable)";

export async function diagnoseSpawner(env: Env): Promise<Check[]> {
  if (env[SPAWNER_ENV] === "node") return [{ level: "info", message: `${SPAWNER_ENV}=node: ${FORKS}` }];
  const python = helperPython(env);
  const [minMajor, minMinor] = PYTHON_MIN;
  const named = env[PYTHON_ENV] ? `${python} (${PYTHON_ENV})` : "python3";
  const answer = await new Promise<{ error: { code?: string | number | null; message: string } | null; stdout: string }>((resolve) => {
    execFile(python, ["-I", "-S", "-c", ASK], { env: { ...env }, timeout: 10_000 }, (error, stdout) => resolve({ error, stdout: String(stdout) }));
  });
  if (answer.error) {
    const why = answer.error.code === "ENOENT" ? "is not on PATH" : `did not run (${describeError(answer.error).split("\n")[0]})`;
    return [{ level: "info", message: `${named} ${why}: ${FORKS}; with Python ${minMajor}.${minMinor} or later it starts them through its spawn helper` }];
  }
  const [major, minor, ...where] = answer.stdout.trim().split(" ");
  const version = `${major}.${minor}`;
  const executable = where.join(" ");
  if (Number(major) < minMajor || (Number(major) === minMajor && Number(minor) < minMinor)) {
    return [{ level: "info", message: `${named} is Python ${version} (${executable}), older than ${minMajor}.${minMinor}: ${FORKS}` }];
  }
  return [{ level: "ok", message: `the leader starts hooks through its spawn helper: Python ${version} (${executable}), posix_spawn` }];
}
