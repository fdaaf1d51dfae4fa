/**
 * A team's bindings as `config`, `GET …/gates` and `GET …/bindings` show them, beside the gate files:
 * each with the handler it names, its events and settings, its gate name (`http:<name>`), and its
 * trust as `pi-teams-hooks trust` compares it (a binding added over the API is `new` until the lead
 * approves it). Never writes.
 */
import { type Binding, readBindings, resolveBindings } from "../gates/bindings.js";
import { readGlobalHandlers } from "../gates/global-handlers.js";
import type { HandlerDef } from "../settings/handlers.js";
import { handlerFingerprint } from "../trust/trust.js";
import { readTrustInForce } from "../trust/trust-store.js";

export interface BindingView {
  name: string;
  /** The gate it runs as, in logs and the trust record. */
  gate: string;
  handler: string;
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

/** The bindings of the team in `teamDir`, resolved against its handlers and the global ones, with their trust. */
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
  const bindings = resolveBindings(read.bindings, declared).map((resolved): BindingView => {
    const { binding } = resolved;
    const gate = `http:${binding.name}`;
    const base = {
      name: binding.name,
      gate,
      handler: binding.handler,
      events: binding.events,
      settings: binding.settings ?? {},
      createdAt: binding.createdAt ?? null,
      createdBy: binding.createdBy ?? null,
    };
    if ("problem" in resolved) return { ...base, trust: "unusable", ready: false, problem: resolved.problem };
    const entry = record?.gates[gate];
    const state =
      trust.state === "none"
        ? "no_record"
        : !entry
          ? "new"
          : entry.sha256 === handlerFingerprint(resolved.handler).sha256
            ? "trusted"
            : "changed";
    return { ...base, trust: state, ready: state === "trusted" || state === "no_record", problem: null };
  });
  return { file: read.file, problem: read.problem, bindings };
}
