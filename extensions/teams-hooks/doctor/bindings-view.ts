/**
 * A team's bindings as `config`, `GET …/gates` and `GET …/bindings` show them, beside the gate files:
 * each with the handler or gate file it names, its events and settings, its gate name (`http:<name>`
 * for a handler, `binding:<name>` for a file), and its trust as `pi-teams-hooks trust` compares it (a
 * binding added over the API is `new` until the lead approves it). Never writes.
 */
import { type Binding, bindingGateName, readBindings, resolveBindings } from "../gates/bindings.js";
import { teamHooksDir } from "../gates/chain.js";
import { readGlobalHandlers } from "../gates/global-handlers.js";
import { handlerGateName, type HandlerDef } from "../settings/handlers.js";
import { type Fingerprint, gateFingerprint, handlerFingerprint } from "../trust/trust.js";
import { readTrustInForce } from "../trust/trust-store.js";

interface BindingView {
  name: string;
  /** The gate it runs as, in logs and the trust record: `http:<name>` or `binding:<name>`. */
  gate: string;
  /** The handler it names; null for a file binding. */
  handler: string | null;
  /** The gate file it names, as the binding says it (relative to a hooks dir); null for a handler binding. */
  file: string | null;
  /** Where that file was found (the team's hooks dir first, then the global one); null when nowhere, or a handler. */
  path: string | null;
  events: Binding["events"];
  settings: NonNullable<Binding["settings"]>;
  createdAt: string | null;
  createdBy: string | null;
  /** As `trust` compares it; `unusable` when it cannot run (`problem` says why). */
  trust: "trusted" | "changed" | "new" | "no_record" | "unusable";
  /** It runs: usable, and trusted (or no record yet: the leader's first start trusts it). */
  ready: boolean;
  problem: string | null;
}

export interface BindingsView {
  file: string;
  /** Why the file was refused whole, or null. */
  problem: string | null;
  bindings: BindingView[];
}

/** The bindings of the team in `teamDir`, resolved against its handlers, the global ones and the hooks dirs. */
export function bindingsView(
  teamDir: string,
  hooksDir: string,
  teamHandlers: readonly HandlerDef[],
  env: Readonly<Record<string, string | undefined>>,
): BindingsView {
  const read = readBindings(teamDir);
  const trust = readTrustInForce(teamDir, env);
  const record = trust.state === "ok" ? trust.record : null;
  const declared = [...teamHandlers, ...readGlobalHandlers(hooksDir).handlers];
  const dirs = { team: teamHooksDir(teamDir), global: hooksDir };
  const bindings = resolveBindings(read.bindings, declared, dirs).map((resolved): BindingView => {
    const { binding } = resolved;
    const gate = binding.file === undefined ? handlerGateName(binding.name) : bindingGateName(binding.name);
    const base = {
      name: binding.name,
      gate,
      handler: binding.handler ?? null,
      file: binding.file ?? null,
      path: "file" in resolved ? resolved.file.path : null,
      events: binding.events,
      settings: binding.settings ?? {},
      createdAt: binding.createdAt ?? null,
      createdBy: binding.createdBy ?? null,
    };
    const unusable = (problem: string): BindingView => ({ ...base, trust: "unusable", ready: false, problem });
    if ("problem" in resolved) return unusable(resolved.problem);
    let fp: Fingerprint | { problem: string };
    if ("handler" in resolved) fp = handlerFingerprint(resolved.handler);
    else {
      const hook = { name: gate, layer: resolved.file.layer, kind: "binding" as const, bound: binding };
      fp = gateFingerprint({ ...hook, hook: { hookPath: resolved.file.path, command: resolved.file.path, args: [] } });
      if ("problem" in fp) return unusable(`${resolved.file.path}: ${fp.problem}`);
    }
    const entry = record?.gates[gate];
    const state =
      trust.state === "none"
        ? "no_record"
        : !entry
          ? "new"
          : entry.sha256 === fp.sha256 && ("handler" in resolved || entry.mode === fp.mode)
            ? "trusted"
            : "changed";
    return { ...base, trust: state, ready: state === "trusted" || state === "no_record", problem: null };
  });
  return { file: read.file, problem: read.problem, bindings };
}
