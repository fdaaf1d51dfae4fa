/**
 * Events held because their gate could not judge the work (policy/gate-life.ts): a gate untrusted,
 * missing, insecure or unable to start waits for the team lead (`approval`); a gate cut off by our own
 * part (an internal error, the machine out of processes or files) waits for a retry (`fault`). Neither
 * is the worker's failure: nothing is counted, reopened or made, and the task is not accepted.
 *
 *   held ──the lead approves (the trust record changes and the chain is trusted now)──▶ run again
 *     ├──a fault: tried again by itself after 2 s, 10 s, then every 60 s─────────────────▶ run again
 *     ├──a fault seen cleared at a reconcile scan (the leader's files, the machine's memory)─▶ run again
 *     ├──its gate put back as it was trusted (seen at the next reconcile scan)──────────▶ run again
 *     └──the leader starts again──────────────────────────────────────────────────────▶ run again
 *
 * Running again is the event's whole chain, once (the ledger's `begin` replaces the hold): at most once
 * per release, since a released key leaves this map before it is queued. The list is kept for people in
 * `hook-state/holds.json` (`/gates`, the dashboard's "Needs attention", `doctor`), rewritten whenever
 * it changes and at a reconcile scan that finds it not saying what the leader holds (a worker's edit);
 * the ledger is what the leader itself goes by.
 */
import { readFileSync, readdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describeError } from "../contract/errors.js";
import { TRUST_ERROR_KINDS } from "../contract/hook-run.js";
import type { HookEvent } from "../contract/events.js";
import { discoverChain } from "../gates/chain.js";
import { checkChainTrust } from "../trust/trust.js";
import { type HeldEvent, readHoldsFile, writeHolds } from "./holds-file.js";
import { holdsFile } from "../team/paths.js";
import { sentId } from "../team/sent-log.js";
import { heldLeadText } from "../text/messages.js";
import type { TeamSetup } from "../team/setup.js";
import type { TrustRecord } from "../trust/trust.js";
import { type GatePlace, GateTransitionError, type RerunCause, next } from "../policy/gate-life.js";

export type { HeldEvent };

/** Waits before a fault hold runs again by itself; past the last, it waits for the next start. */
const FAULT_RETRY_MS: readonly number[] = Object.freeze([2_000, 10_000, 60_000]);

/** What the held events use of the leader (its context, leader/context.ts, is one). */
interface HoldsLeader {
  /** The team and the settings in force (a config.json change puts new ones here). */
  readonly setup: TeamSetup;
  /** The leader's state: a held event runs again only while it is `watching`. */
  readonly state: "starting" | "watching" | "stopping" | "stopped";
  readonly trust: { readonly record: TrustRecord | null };
  warn(message: string): void;
  /** The time now, as an ISO string. */
  now(): string;
  /** Runs `step` for `event` after `delayMs`, through the queue in the event's order (not once stopping). */
  later(event: HookEvent, step: () => Promise<void>, delayMs: number): void;
  /** One note to the lead's inbox, once, after those under way (the leader's stop waits for it). */
  noteToLead(id: string, text: string, failure: string): void;
}

/** What the held events read and write of the leader's ledger (leader/ledger.ts is one). */
interface HoldsLedger {
  readonly file: string;
  /** Every key held, with its event's details when the ledger has them. */
  held(): Array<{ key: string; event?: Pick<HookEvent, "event" | "taskId" | "member" | "timestamp"> | null }>;
  /** Records `key` as done (flushed). */
  finish(key: string, at: string, info: { runId: null; outcome: "superseded"; log: null }): Promise<void>;
  /** Where the key's event is in its gate life; null when it has no place. */
  place(key: string): GatePlace | null;
}

export class Holds {
  readonly #leader: HoldsLeader;
  readonly #ledger: HoldsLedger;
  readonly #run: (event: HookEvent) => void;
  readonly #held = new Map<string, { info: HeldEvent; event: HookEvent; tries: number; code: string | null }>();
  /** Events judged whose policy is not written yet (listUnwritten). */
  readonly #unwritten = new Map<string, HeldEvent>();
  #writing: Promise<void> = Promise.resolve();
  /** The held events the list on disk was last found without (check), while it lasts: said once. */
  #unlisted: string | null = null;
  /** The last write of the list failed. */
  #saveFailed = false;

  /** `run`: queues an event again (as a retry). */
  constructor(leader: HoldsLeader, ledger: HoldsLedger, run: (event: HookEvent) => void) {
    this.#leader = leader;
    this.#ledger = ledger;
    this.#run = run;
  }

  get size(): number {
    return this.#held.size;
  }

  list(): HeldEvent[] {
    return [...[...this.#held.values()].map((h) => h.info), ...this.#unwritten.values()];
  }

  /**
   * At start: every key the ledger holds runs again now (the leader's restart is one of the ways a
   * hold ends), each once; the list on disk is written anew.
   */
  start(): void {
    const ledger = this.#ledger;
    for (const held of ledger.held()) {
      if (!held.event) {
        this.#leader.warn(`${ledger.file}: held ${held.key} has no event details; it is not run again`);
        continue;
      }
      this.#run({ key: held.key, ...held.event, source: "task" });
    }
    this.#save();
  }

  /**
   * The gate life's move of a held event a newer completion supersedes (policy/gate-life.ts `next`): from
   * where the ledger has it. A move `next` refuses (the ledger has it elsewhere) is a bug of ours: said, and
   * the event recorded superseded all the same (the newer completion holds the task).
   */
  #supersede(key: string, cause: RerunCause): void {
    try {
      next(this.#ledger.place(key) ?? { state: "held", cause }, { on: "supersede" });
    } catch (error) {
      if (!(error instanceof GateTransitionError)) throw error;
      this.#leader.warn(`${key}: ${error.message}`);
    }
  }

  /**
   * An event was just held (its ledger record is on disk): listed, the lead told, a fault retried. An
   * earlier held event of the same task and kind is superseded: the worker completed again while the
   * gate could not judge, and only the latest completion is judged when the hold ends (once, not once
   * per completion); the earlier one is done in the ledger, with no run.
   */
  held(event: HookEvent, info: HeldEvent, tries: number, code: string | null = null): void {
    if (event.taskId !== null) {
      for (const [key, other] of this.#held) {
        if (key === event.key || other.event.taskId !== event.taskId || other.event.event !== event.event) continue;
        this.#held.delete(key);
        this.#supersede(key, other.info.cause);
        this.#ledger
          .finish(key, this.#leader.now(), { runId: null, outcome: "superseded", log: null })
          .catch((error: unknown) => this.#leader.warn(`${key}: superseded, not recorded: ${describeError(error)}`));
      }
    }
    this.#held.set(event.key, { info, event, tries, code });
    this.#save();
    const { leadName } = this.#leader.setup.identity;
    // A gate changed, added or removed is told to the lead once as such (leader/gate-trust.ts), what to approve
    // included; other holds once per gate and reason (several tasks held by one gate are one thing to fix).
    if (!(TRUST_ERROR_KINDS as readonly (string | null)[]).includes(info.kind) || info.kind === "insecure_hook") {
      const id = sentId("held", `${info.cause}:${info.hook ?? ""}:${info.reason}`, leadName);
      this.#leader.noteToLead(
        id,
        heldLeadText(info, this.#leader.setup.identity.teamDir),
        `the lead was not told of the hold of ${event.key}`,
      );
    }
    if (info.cause === "fault") {
      // Tried again by itself, at the last wait from then on: a fault that cleared ends its hold, no restart needed.
      const delay = FAULT_RETRY_MS[Math.min(tries, FAULT_RETRY_MS.length) - 1] ?? 60_000;
      if (tries === FAULT_RETRY_MS.length + 1)
        this.#leader.warn(
          `${event.key}: held after ${tries} tries (${info.reason}); tried again every ${delay / 1000} s`,
        );
      this.#leader.later(event, async () => this.#release(event.key), delay);
    }
  }

  /**
   * The trust record changed: every event held for approval whose chain is trusted as it is now runs
   * again (a gate that cannot start has no trust problem: it is tried again too).
   */
  async reconsider(opts: { trustOnly?: boolean } = {}): Promise<void> {
    // `trustOnly` (the reconcile scan's look): only holds of a trust problem, released once their chain is trusted
    // (a gate put back as it was): a gate that cannot start would otherwise run again at every scan.
    const waiting = [...this.#held.values()].filter(
      (h) =>
        h.info.cause === "approval" &&
        (!opts.trustOnly || (TRUST_ERROR_KINDS as readonly (string | null)[]).includes(h.info.kind)),
    );
    if (waiting.length === 0) return;
    const { setup } = this.#leader;
    const layers = {
      global: path.resolve(setup.hooksDir),
      team: setup.teamHooksDir === null ? null : path.resolve(setup.teamHooksDir),
    };
    const chains = new Map<HookEvent["event"], Awaited<ReturnType<typeof discoverChain>>>();
    for (const { event } of waiting) {
      try {
        let chain = chains.get(event.event);
        if (!chain) {
          chain = await discoverChain({
            globalDir: setup.hooksDir,
            teamDir: setup.teamHooksDir,
            event: event.event,
            handlers: setup.settings.handlers,
          });
          chains.set(event.event, chain);
        }
        const check = checkChainTrust(chain, event.event, layers, {
          record: this.#leader.trust.record,
          allowInsecure: setup.settings.allowInsecureHooks.value,
          uid: process.getuid?.() ?? null,
          participation: setup.settings.events[event.event].participation.value,
        });
        const refused = check.problems.filter((p) => p.kind === "insecure_hook" || !setup.settings.trustChanges.value);
        if (refused.length === 0) this.#release(event.key);
      } catch (error) {
        this.#leader.warn(`${event.key}: held, not looked at again: ${describeError(error)}`);
      }
    }
  }

  /**
   * The reconcile scan's look at the fault holds: one whose fault is seen cleared runs again now, not at
   * its next try (the leader has files to spare again, the machine memory). A fault the leader cannot
   * look at (an internal error, a sandbox that failed to set up, a process limit) waits for its try.
   */
  releaseCleared(): void {
    for (const [key, held] of this.#held) {
      if (held.info.cause === "fault" && faultCleared(held.code)) this.#release(key);
    }
  }

  /**
   * Lists an event whose gate judged it but whose policy cannot be written yet (a lock held, a folder
   * made unwritable): held as a fault where the lead looks (`/gates`, the dashboard, pi), while the
   * leader keeps trying to write it (leader/handle.ts). `unlist` once it is written.
   */
  listUnwritten(info: HeldEvent): void {
    this.#unwritten.set(info.key, info);
    this.#save();
  }

  unlist(key: string): void {
    if (this.#unwritten.delete(key)) this.#save();
  }

  /** Runs a held event again: out of the list first, so that it is queued at most once. */
  #release(key: string): void {
    const held = this.#held.get(key);
    if (!held || this.#leader.state !== "watching") return;
    this.#held.delete(key);
    this.#save();
    this.#run(held.event);
  }

  /** Writes the list again (hook-state/ was deleted and is written anew from memory). */
  rewrite(): void {
    this.#save();
  }

  /**
   * The reconcile scan's look at the list on disk: one that does not say what this leader holds (a hold
   * taken out, the file emptied, removed or broken by a process of the team's user) hides a held event
   * from `/gates status`, the dashboard and `doctor`, so it is written again from memory, and said.
   */
  async check(): Promise<void> {
    if (this.#leader.state !== "watching") return;
    const writing = this.#writing;
    const want = this.list().map((h) => h.key);
    // Nothing held: nothing a changed list could hide (a hold a worker adds is only shown), and nothing read.
    if (want.length === 0) {
      this.#unlisted = null;
      return;
    }
    await writing;
    const file = holdsFile(this.#leader.setup.identity.teamDir);
    const onDisk = await readHoldsFile(this.#leader.setup.identity.teamDir);
    if (this.#writing !== writing) return; // the list changed meanwhile: the next scan looks again
    const have = new Set(onDisk.holds.map((h) => h.key));
    const missing = want.filter((key) => !have.has(key));
    if (missing.length === 0) {
      this.#unlisted = null;
      return;
    }
    const said = missing.join("\0");
    // Written again already and it failed (said by #save): not tried at every scan.
    if (this.#unlisted === said && this.#saveFailed) return;
    this.#unlisted = said;
    const shown = missing.slice(0, 5).join(", ") + (missing.length > 5 ? ", …" : "");
    this.#leader.warn(
      `${file} does not list ${missing.length} event(s) this leader holds (${shown}): changed, not by the leader; written again from its memory`,
    );
    this.#save();
    await this.#writing;
  }

  /** `hook-state/holds.json` anew (one write at a time, the last state wins). */
  #save(): void {
    const file = holdsFile(this.#leader.setup.identity.teamDir);
    const holds = this.list();
    this.#writing = this.#writing
      .then(async () => {
        const { teamDir, taskListId } = this.#leader.setup.identity;
        await writeHolds(teamDir, taskListId, holds, this.#leader.now());
        this.#saveFailed = false;
      })
      .catch((error: unknown) => {
        this.#saveFailed = true;
        this.#leader.warn(
          `${file}: not written (${describeError(error)}); /gates and the dashboard may not list held events`,
        );
      });
  }

  /** Waits for the last write of the list (stop). */
  async settled(): Promise<void> {
    await this.#writing;
  }
}

/** Room a gate's start needs: its pipes, its context and result files, the copy of the gate, with some to spare. */
const FILES_TO_SPARE = 32;
const MEMORY_TO_SPARE = 64 * 1024 * 1024;

/** Whether the fault `code` that held a gate is gone now, as far as the leader can see; false when it cannot tell. */
function faultCleared(code: string | null): boolean {
  try {
    switch (code) {
      case "EMFILE":
        return openFilesLimit() - readdirSync("/proc/self/fd").length >= FILES_TO_SPARE;
      case "ENFILE": {
        // allocated, free, max: the system's file table.
        const [allocated, , max] = readFileSync("/proc/sys/fs/file-nr", "utf8").trim().split(/\s+/).map(Number);
        return allocated !== undefined && max !== undefined && max - allocated >= FILES_TO_SPARE;
      }
      case "ENOMEM":
        return os.freemem() >= MEMORY_TO_SPARE;
      default:
        return false;
    }
  } catch {
    return false; // no /proc to look at: the fault's next try tells
  }
}

/** This process's soft limit of open files (`Max open files` in /proc/self/limits). */
function openFilesLimit(): number {
  const line = readFileSync("/proc/self/limits", "utf8")
    .split("\n")
    .find((l) => l.startsWith("Max open files"));
  const soft = line?.slice("Max open files".length).trim().split(/\s+/)[0];
  if (soft === "unlimited") return Number.POSITIVE_INFINITY;
  const n = Number(soft);
  if (!Number.isFinite(n)) throw new Error("no limit of open files");
  return n;
}
