/**
 * Who, besides the leader's user, could change the team's gates or the leader's state: doctor runs
 * as the would-be leader, and says for each hooks dir and gate file, `hook-state/` and its files,
 * `hook-logs/`, and the folder of the approved trust record (outside the team dir) which other users
 * could write it, or replace it through a folder above it. Stat calls only, plus `/etc/group` and
 * `/etc/passwd` for a group's members and the users' names.
 *
 * A path is writable by another user when that user owns it (root aside: root can do anything), when
 * it is group-writable and its group has a member other than the leader's user, or when it is
 * world-writable (a sticky folder included: others still add files to it). It can be replaced when a
 * folder above it is writable by another user, unless that folder is sticky (`chmod +t`): then only
 * the entry's owner and the folder's rename or remove it.
 *
 * Under one user for the leader and the agents, nobody else can write these, and nothing on disk
 * keeps the agents from them: trust makes a change visible (docs/security.md). Doctor says so, and
 * which deployment prevents it. It also names the other users that own the team's files (the agents'
 * user, when it is another), and the team folders the leader could not rewrite.
 */
import {
  type Stats,
  accessSync,
  constants as fsConstants,
  lstatSync,
  readFileSync,
  readdirSync,
  realpathSync,
  statSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { approvedFile } from "../trust/trust-store.js";
import { hookLogsDir, leaderStateDir, tasksDir, existsNoFollow } from "../team/paths.js";
import type { Check } from "./gate-checks.js";

/** What a checked path is to the team. */
export type AccessRole =
  | "hooks dir"
  | "gate"
  | "team hooks layer"
  | "leader state"
  | "hook logs"
  | "approved trust record";

/**
 * One other user, group or everyone who can change a path: `who` is `user bob (owner)`, `group
 * pi-team (bob)` or `every user`; `through` is null when they can write the path itself (or create
 * it, when it does not exist), else the folder above it that they can write, and so replace it.
 */
export interface AccessOther {
  who: string;
  through: string | null;
}

export interface AccessEntry {
  path: string;
  role: AccessRole;
  exists: boolean;
  /** Who else could change it. Empty: the leader's user (and root) alone. */
  others: AccessOther[];
}

export interface AccessReport {
  /** The user doctor runs as: the leader's, when doctor is run as the docs say. */
  leader: { uid: number; user: string };
  /** Users other than the leader's (and root) that own the team's files: config.json, tasks, inboxes. */
  teamWriters: string[];
  entries: AccessEntry[];
  checks: Check[];
}

interface AccessInput {
  teamDir: string;
  /** The global hooks dir in force, absolute. */
  hooksDir: string;
  /** The team layer, `<teamDir>/hooks`. */
  teamLayer: string;
  taskListId: string;
  env: Readonly<Record<string, string | undefined>>;
}

const RECIPE = `docs/security.md, "A leader under its own user"`;

/** Runs the checks. Never throws for anything found on disk. */
export function diagnoseAccess(input: AccessInput): AccessReport {
  const db = new UserDb();
  const uid = process.getuid?.() ?? -1;
  const leader = { uid, user: db.userName(uid) };
  const look = new Looker(db, uid);
  const entries: AccessEntry[] = [];
  const globalSame = path.resolve(input.hooksDir) === path.resolve(input.teamLayer);
  entries.push(...look.tree(input.hooksDir, "hooks dir", 2));
  if (!globalSame) entries.push(...look.tree(input.teamLayer, "team hooks layer", 2));
  entries.push(...look.tree(leaderStateDir(input.teamDir), "leader state", 2));
  entries.push(...look.tree(hookLogsDir(input.teamDir), "hook logs", 0));
  const approved = approvedFile(input.teamDir, input.env);
  entries.push(...look.tree(path.dirname(approved), "approved trust record", 0));
  if (existsNoFollow(approved)) entries.push(look.entry(approved, "approved trust record"));

  const teamWriters = otherOwners(input.teamDir, input.taskListId, uid, db);
  const checks: Check[] = worthSaying(entries).map(([entry, others]) => warning(entry, others));
  if (checks.length === 0) checks.push(allClear(leader.user, teamWriters));
  checks.push(...unwritableTeamFolders(input.teamDir, input.taskListId, db));
  return { leader, teamWriters, entries, checks };
}

/**
 * The entries to warn about, each with what is new in it: a file that others can replace only
 * through a folder already warned about (every file of a `hook-state/` handed to the team's group)
 * is said once, with its folder.
 */
function worthSaying(entries: readonly AccessEntry[]): Array<[AccessEntry, AccessOther[]]> {
  const said: Array<{ path: string; others: readonly AccessOther[] }> = [];
  const out: Array<[AccessEntry, AccessOther[]]> = [];
  const within = (file: string, dir: string): boolean => file === dir || file.startsWith(`${dir}${path.sep}`);
  for (const entry of entries) {
    const fresh = entry.others.filter((other) => {
      const above = said.filter((s) => within(entry.path, s.path));
      const sameRoute = above.some((s) => s.others.some((o) => o.who === other.who && o.through === other.through));
      return !sameRoute && !(other.through !== null && above.some((s) => within(other.through ?? "", s.path)));
    });
    if (fresh.length === 0) continue;
    said.push({ path: entry.path, others: entry.others });
    out.push([entry, fresh]);
  }
  return out;
}

/** `group pi-team (bob)`, `every user through /srv/pi-teams/alpha`. */
function describeOthers(others: readonly AccessOther[]): string {
  return others.map((o) => (o.through === null ? o.who : `${o.who} through ${o.through}`)).join(", ");
}

function warning(e: AccessEntry, others: readonly AccessOther[]): Check {
  const verb = e.exists ? "can be written or replaced by" : "does not exist, and can be created by";
  const means: Record<AccessRole, string> = {
    "hooks dir":
      "another user can change a gate: the leader holds its events until trust approves the change, but cannot prevent it",
    gate: "another user can change this gate: the leader holds its events until trust approves the change, but cannot prevent it",
    "team hooks layer":
      "another user can add or change a gate of the team layer: the leader holds its events until trust approves the change, but cannot prevent it",
    "leader state":
      "another user can change the leader's state (trust.json, the ledger, decisions of held gates): visible where the leader checks it, not prevented",
    "hook logs": "another user can change or remove what the hook logs say",
    "approved trust record":
      "another user can change the approved trust record that trust.json is held to, and have a gate of theirs run as trusted",
  };
  return {
    level: "warn",
    message: `${e.path} (${e.role}) ${verb} ${describeOthers(others)}: ${means[e.role]} (${RECIPE})`,
    file: e.path,
  };
}

function allClear(user: string, teamWriters: readonly string[]): Check {
  const scope = "the gates, hook-state/, hook-logs/ and the approved trust record";
  if (teamWriters.length > 0) {
    return {
      level: "ok",
      message: `${scope} can be changed by ${user} (the leader's user) alone; the team's files are written by ${teamWriters.join(", ")}, who cannot change them`,
    };
  }
  return {
    level: "info",
    message: `${scope} can be changed by ${user} alone, and the team's files are written by ${user} too: agents that run as ${user} can still change them; trust makes each change visible, it cannot prevent it; to prevent it, run the leader under its own user (${RECIPE})`,
  };
}

// ---------------------------------------------------------------------------------------------
// Who can write what

class Looker {
  readonly #db: UserDb;
  readonly #uid: number;
  readonly #replacers = new Map<string, AccessOther[]>();

  constructor(db: UserDb, uid: number) {
    this.#db = db;
    this.#uid = uid;
  }

  /** `root` and, for a folder, its entries `depth` levels down (gates in `on_<event>.d/`, `hook-state/deferrals/`). */
  tree(root: string, role: AccessRole, depth: number): AccessEntry[] {
    const out = [this.entry(root, role)];
    const walk = (dir: string, left: number): void => {
      if (left === 0) return;
      let names: string[];
      try {
        names = readdirSync(dir).sort();
      } catch {
        return; // missing or unreadable: the entry for the folder says what matters
      }
      for (const name of names) {
        if (name === "node_modules") continue; // a .ts gate's tsx: packages, not gates
        const full = path.join(dir, name);
        const info = lstatOrNull(full);
        if (!info) continue;
        const isDir = info.isDirectory();
        const inHooksDir = role === "hooks dir" || role === "team hooks layer";
        out.push(this.entry(full, inHooksDir && !isDir ? "gate" : role));
        if (isDir) walk(full, left - 1);
      }
    };
    walk(root, depth);
    return out;
  }

  entry(file: string, role: AccessRole): AccessEntry {
    const info = lstatOrNull(file);
    if (!info) {
      // Not there: whoever can write the nearest folder above it can create it (a sticky bit does not stop that).
      const { dir, stat } = nearestExisting(path.dirname(file));
      const others = stat ? [...this.writers(stat, dir), ...this.replacers(dir)] : [];
      return { path: file, role, exists: false, others: unique(others) };
    }
    const others = [...this.writers(info, null), ...this.replacers(file)];
    if (info.isSymbolicLink()) {
      // What runs is the target: whoever can write it, or a folder above it, can change the gate.
      try {
        const real = realpathSync(file);
        const target = statSync(real);
        others.push(...this.writers(target, real), ...this.replacers(real));
      } catch {
        /* a dangling link: the gate checks say it does not run */
      }
    }
    return { path: file, role, exists: true, others: unique(others) };
  }

  /** Other users who can write `info` itself; `through` names it when it is not the entry being described. */
  writers(info: Stats, through: string | null): AccessOther[] {
    const out: AccessOther[] = [];
    const db = this.#db;
    if (info.uid !== this.#uid && info.uid !== 0) out.push({ who: `user ${db.userName(info.uid)} (owner)`, through });
    if ((info.mode & 0o020) !== 0) {
      const leader = db.userName(this.#uid);
      const members = db.groupMembers(info.gid).filter((m) => m !== leader && m !== "root");
      if (members.length > 0) out.push({ who: `group ${db.groupName(info.gid)} (${members.join(", ")})`, through });
    }
    if ((info.mode & 0o002) !== 0) out.push({ who: "every user", through });
    return out;
  }

  /** Other users who can rename or remove `file` (or a folder above it) through a folder they can write. */
  replacers(file: string): AccessOther[] {
    const resolved = path.resolve(file);
    const known = this.#replacers.get(resolved);
    if (known) return known;
    const parent = path.dirname(resolved);
    let out: AccessOther[] = [];
    if (parent !== resolved) {
      const dir = statOrNull(parent);
      const self = lstatOrNull(resolved);
      if (dir && self) {
        // In a sticky folder only the entry's owner (said where the entry is: as a writer of the entry
        // itself, or of the folder below this one) and the folder's owner rename or remove it.
        const sticky = (dir.mode & 0o1000) !== 0;
        const writers = this.writers(dir, parent);
        out = [...(sticky ? writers.filter((w) => w.who.startsWith("user ")) : writers), ...this.replacers(parent)];
      }
    }
    out = unique(out);
    this.#replacers.set(resolved, out);
    return out;
  }
}

/** The owners, other than the leader's user and root, of config.json, the task files and the inboxes. */
function otherOwners(teamDir: string, taskListId: string, uid: number, db: UserDb): string[] {
  const files = [path.join(teamDir, "config.json")];
  const list = tasksDir(teamDir, taskListId);
  for (const name of readdirOrEmpty(list)) {
    if (name.endsWith(".json") && !name.includes(".tmp.")) files.push(path.join(list, name));
  }
  const mailboxes = path.join(teamDir, "mailboxes");
  for (const namespace of readdirOrEmpty(mailboxes)) {
    const inboxes = path.join(mailboxes, namespace, "inboxes");
    for (const name of readdirOrEmpty(inboxes)) if (name.endsWith(".json")) files.push(path.join(inboxes, name));
  }
  const owners = new Set<string>();
  for (const file of files) {
    const info = lstatOrNull(file);
    if (info && info.uid !== uid && info.uid !== 0) owners.add(db.userName(info.uid));
  }
  return [...owners].sort();
}

/** The team's folders that the leader rewrites files in, where it cannot (the agents' umask, a folder made 0755). */
function unwritableTeamFolders(teamDir: string, taskListId: string, db: UserDb): Check[] {
  const folders = [tasksDir(teamDir, taskListId)];
  const mailboxes = path.join(teamDir, "mailboxes");
  for (const namespace of readdirOrEmpty(mailboxes)) folders.push(path.join(mailboxes, namespace, "inboxes"));
  const checks: Check[] = [];
  for (const folder of folders) {
    const info = statOrNull(folder);
    if (!info?.isDirectory()) continue;
    try {
      accessSync(folder, fsConstants.W_OK | fsConstants.X_OK);
    } catch {
      const mode = (info.mode & 0o7777).toString(8).padStart(4, "0");
      const owner = `${db.userName(info.uid)}:${db.groupName(info.gid)}`;
      checks.push({
        level: "warn",
        message: `${folder} (${owner}, mode ${mode}) cannot be written by the leader's user, which rewrites the tasks and messages in it (a reopen, a follow-up, a nudge): make it group-writable for a group the leader's user is in (chmod g+ws), and let the agents run with umask 0002 (${RECIPE})`,
        file: folder,
      });
    }
  }
  return checks;
}

// ---------------------------------------------------------------------------------------------
// Users and groups, as /etc/passwd and /etc/group name them

class UserDb {
  readonly #users = new Map<number, { name: string; gid: number }>();
  readonly #groups = new Map<number, { name: string; members: string[] }>();

  constructor() {
    for (const line of readLines("/etc/passwd")) {
      const [name, , uid, gid] = line.split(":");
      if (name && uid && gid && !this.#users.has(Number(uid))) this.#users.set(Number(uid), { name, gid: Number(gid) });
    }
    for (const line of readLines("/etc/group")) {
      const [name, , gid, members] = line.split(":");
      if (name && gid && !this.#groups.has(Number(gid))) {
        this.#groups.set(Number(gid), { name, members: (members ?? "").split(",").filter((m) => m !== "") });
      }
    }
  }

  userName(uid: number): string {
    const known = this.#users.get(uid)?.name;
    if (known) return known;
    if (uid === process.getuid?.()) {
      try {
        return os.userInfo().username;
      } catch {
        /* no name for this uid anywhere (a container's arbitrary uid) */
      }
    }
    return `uid ${uid}`;
  }

  groupName(gid: number): string {
    return this.#groups.get(gid)?.name ?? `gid ${gid}`;
  }

  /** The group's listed members and the users whose primary group it is. */
  groupMembers(gid: number): string[] {
    const members = new Set(this.#groups.get(gid)?.members ?? []);
    for (const { name, gid: primary } of this.#users.values()) if (primary === gid) members.add(name);
    return [...members].sort();
  }
}

function readLines(file: string): string[] {
  try {
    return readFileSync(file, "utf8")
      .split("\n")
      .filter((l) => l !== "" && !l.startsWith("#"));
  } catch {
    return []; // no such database here: users and groups are then named by number
  }
}

// ---------------------------------------------------------------------------------------------
// Small file helpers

function statOrNull(file: string): Stats | null {
  try {
    return statSync(file);
  } catch {
    return null;
  }
}

function lstatOrNull(file: string): Stats | null {
  try {
    return lstatSync(file);
  } catch {
    return null;
  }
}

function nearestExisting(dir: string): { dir: string; stat: Stats | null } {
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    const info = statOrNull(at);
    if (info || path.dirname(at) === at) return { dir: at, stat: info };
  }
}

function readdirOrEmpty(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function unique(items: readonly AccessOther[]): AccessOther[] {
  const seen = new Set<string>();
  return items.filter((item) => {
    const key = `${item.who}\0${item.through ?? ""}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
