/**
 * `pi-teams-hooks serve`: the task API for a teams root (server/), and `serve keys
 * create|list|revoke|disable|enable|login`, its keys. `serve` prints `listening on http://HOST:PORT` once connections
 * are accepted and runs until SIGINT/SIGTERM; `keys create` prints the key alone on its last line, the
 * only time it is shown; `keys login` prints a one-time dashboard login URL alone on its last line.
 */
import path from "node:path";
import { HooksError } from "../contract/errors.js";
import { piTeamsRoot } from "../team/attach-claim.js";
import { requireDirectory } from "../team/paths.js";
import { DEFAULT_LISTEN, isLoopback, parseListen, urlOf } from "../server/address.js";
import { type KeyInfo, createKey, describeRate, describeTemplates, keySpec, keysFile } from "../server/keys.js";
import { listKeys, revokeKey, setKeyEnabled } from "../server/keys.js";
import { tellLeadsOfAllTemplates } from "../server/key-notice.js";
import { DEFAULT_RATE_LIMIT, formatRateLimit, parseRateLimit } from "../server/rate-limit.js";
import { startTaskServer } from "../server/server.js";
import { createLoginToken } from "../server/web-auth.js";
import { type CliIo, type ParsedArgs, str } from "./io.js";
import { formFlags } from "./commands.js";
import { type ColumnSpec, formatTable } from "../text/table.js";
import { terminalWidth } from "../text/terminal.js";

const KEY_FORMS = ["create", "list", "revoke", "disable", "enable", "login"] as const;

/** The flags each form takes (besides --help), as the command table has them; any other is a usage error. */
const FLAGS: Readonly<Record<string, readonly string[]>> = {
  serve: formFlags("serve", ""),
  create: formFlags("serve", "keys create"),
  list: formFlags("serve", "keys list"),
  revoke: formFlags("serve", "keys revoke"),
  disable: formFlags("serve", "keys disable"),
  enable: formFlags("serve", "keys enable"),
  login: formFlags("serve", "keys login"),
};

export async function serveCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const [first, sub, ...rest] = args.positionals;
  if (first === undefined) {
    checkFlags(args, "serve", "serve");
    return serve(args, io);
  }
  if (first !== "keys")
    throw new HooksError(
      "E_USAGE",
      `unexpected argument "${first}" (serve takes no argument, or: keys ${KEY_FORMS.join("|")})`,
    );
  if (sub !== undefined && (KEY_FORMS as readonly string[]).includes(sub)) checkFlags(args, sub, `serve keys ${sub}`);
  const teamsRoot = await resolveTeamsRoot(args, io);
  switch (sub) {
    case "create":
      if (rest.length > 0)
        throw new HooksError("E_USAGE", `unexpected argument "${rest[0]}" (the name goes in --name)`);
      return createCommand(args, io, teamsRoot);
    case "list":
      if (rest.length > 0) throw new HooksError("E_USAGE", `unexpected argument "${rest[0]}"`);
      return listCommand(args, io, teamsRoot);
    case "revoke":
      return revokeCommand(rest, io, teamsRoot);
    case "disable":
    case "enable":
      return switchCommand(rest, io, teamsRoot, sub === "enable");
    case "login":
      return loginCommand(rest, args, io, teamsRoot);
    default:
      throw new HooksError(
        "E_USAGE",
        sub === undefined
          ? `serve keys: missing ${KEY_FORMS.join(", ")}`
          : `serve keys: unknown "${sub}" (${KEY_FORMS.join(", ")})`,
      );
  }
}

async function serve(args: ParsedArgs, io: CliIo): Promise<number> {
  const teamsRoot = await resolveTeamsRoot(args, io);
  const listenText = str(args.values.listen) ?? DEFAULT_LISTEN;
  const address = parseListen(listenText);
  const remote = !isLoopback(address.host);
  if (remote && args.values["allow-remote"] !== true) {
    throw new HooksError(
      "E_USAGE",
      `--listen ${listenText} is not a loopback address: keys travel in plain HTTP, so pass --allow-remote only with TLS in front (docs/security.md)`,
    );
  }
  const rateText = str(args.values["rate-limit"]);
  const rateLimit = rateText === undefined ? DEFAULT_RATE_LIMIT : parseRateLimit(rateText, "--rate-limit");
  // With --allow-remote the dashboard needs keys whatever the address: a TLS proxy on this machine forwards from
  // loopback.
  const allowRemote = args.values["allow-remote"] === true;
  const server = await startTaskServer({
    teamsRoot,
    host: address.host,
    port: address.port,
    rateLimit,
    remote: allowRemote,
    env: io.env,
    log: (level, message) =>
      level === "info"
        ? io.stdout(`${message}\n`)
        : io.stderr(`${level === "warn" ? "warning" : "error"}: ${message}\n`),
  });
  io.stdout(`listening on ${server.url}\n`);
  io.stdout(
    allowRemote
      ? `dashboard at ${server.url}/ for keys with logs:read (a login link: pi-teams-hooks serve keys login NAME --url BASE)\n`
      : `dashboard at ${server.url}/ (this machine only: no key needed)\n`,
  );
  io.stdout(
    `teams root ${teamsRoot}, ${server.keyCount} key(s), ${formatRateLimit(rateLimit)} per key unless it has its own rate\n`,
  );
  if (server.keyCount === 0) {
    const what = `every API request${allowRemote ? " and every dashboard request" : ""}`;
    const fix =
      "pi-teams-hooks serve keys create --name NAME --scopes tasks:create,tasks:read --teams TEAM --templates SLUG";
    io.stderr(`warning: no API key yet, so ${what} is refused: ${fix}\n`);
  }
  await warnLegacyKeys(teamsRoot, io);
  if (remote)
    io.stderr(
      `warning: listening on ${server.url}, beyond this machine, in plain HTTP: put a TLS proxy in front (docs/security.md)\n`,
    );
  await io.stopSignal;
  await server.close();
  return 0;
}

/** Keys made before an allowlist was required allow every template: said at start, as `keys list` marks them. */
async function warnLegacyKeys(teamsRoot: string, io: CliIo): Promise<void> {
  let keys: KeyInfo[];
  try {
    keys = await listKeys(teamsRoot);
  } catch {
    return; // an unreadable keys file: the server has said so already, and refuses every request
  }
  for (const key of keys.filter((k) => k.allTemplates === "legacy")) {
    const fix = `pi-teams-hooks serve keys revoke ${key.name}, then create it with --templates SLUG,…`;
    io.stderr(
      `warning: key "${key.name}" (${key.prefix}) may use every template of its teams: it was made before --templates was required (to limit it: ${fix})\n`,
    );
  }
}

async function createCommand(args: ParsedArgs, io: CliIo, teamsRoot: string): Promise<number> {
  const v = args.values;
  const rateText = str(v["rate-limit"]);
  const spec = keySpec({
    name: str(v.name),
    scopes: str(v.scopes),
    teams: str(v.teams),
    templates: str(v.templates),
    allTemplates: v["all-templates"] === true,
    rateLimit: rateText === undefined ? null : parseRateLimit(rateText, "--rate-limit"),
  });
  const dashboard = spec.scopes.includes("logs:read");
  if (!dashboard && str(v.url) !== undefined)
    throw new HooksError("E_USAGE", "--url: only a key with the scope logs:read gets a dashboard login URL");
  const base = dashboardBase(str(v.url));
  const { key, info } = await createKey(teamsRoot, spec);
  io.stdout(`created key "${info.name}" (${info.prefix}) in ${keysFile(teamsRoot)}\n`);
  io.stdout(`${describeKey(info)}\n`);
  if (info.templates === null) {
    for (const notice of await tellLeadsOfAllTemplates(teamsRoot, info)) {
      const team = `every template of team ${notice.team}`;
      if ("inbox" in notice) io.stdout(`${team}: its lead ${notice.lead} was told in ${notice.inbox}\n`);
      else io.stderr(`warning: ${team}: its lead was not told (${notice.notSent})\n`);
    }
  }
  if (dashboard) printLogin(io, info.name, base, await createLoginToken(teamsRoot, info.name));
  io.stdout("Store it now: it is shown only this once (only a salted hash is kept).\n");
  io.stdout(`${key}\n`);
  return 0;
}

/**
 * A narrow terminal cuts the lists (scopes, teams, templates) and the rate, then leaves out CREATED; never a name or a
 * prefix.
 */
const KEY_COLUMNS: readonly ColumnSpec[] = [{}, {}, { min: 10 }, { min: 8 }, { min: 9 }, { min: 8 }, {}, { drop: 1 }];

async function listCommand(args: ParsedArgs, io: CliIo, teamsRoot: string): Promise<number> {
  const keys = await listKeys(teamsRoot);
  if (args.values.json === true) {
    io.stdout(`${JSON.stringify(keys, null, 2)}\n`);
    return 0;
  }
  if (keys.length === 0) {
    io.stdout(`no API keys in ${keysFile(teamsRoot)}\n`);
    return 0;
  }
  const rows = [
    ["NAME", "PREFIX", "SCOPES", "TEAMS", "TEMPLATES", "RATE", "STATE", "CREATED"],
    ...keys.map((k) => [
      k.name,
      k.prefix,
      k.scopes.join(","),
      k.teams.join(","),
      describeTemplates(k).replaceAll(", ", ","),
      describeRate(k.rateLimit),
      k.disabledAt === null ? "enabled" : "disabled",
      k.createdAt,
    ]),
  ];
  const table = formatTable(rows, KEY_COLUMNS, { width: terminalWidth(io) });
  io.stdout(table.text);
  if (table.note) io.stderr(`${table.note}\n`);
  return 0;
}

async function revokeCommand(rest: string[], io: CliIo, teamsRoot: string): Promise<number> {
  const [name, ...extra] = rest;
  if (name === undefined)
    throw new HooksError("E_USAGE", "serve keys revoke: missing the key's NAME (see: pi-teams-hooks serve keys list)");
  if (extra.length > 0) throw new HooksError("E_USAGE", `unexpected argument "${extra[0]}" (one NAME at a time)`);
  if (!(await revokeKey(teamsRoot, name))) {
    io.stderr(`pi-teams-hooks serve keys revoke: no key named "${name}" in ${keysFile(teamsRoot)}\n`);
    return 1;
  }
  io.stdout(`revoked key "${name}": a running server refuses it from its next request\n`);
  return 0;
}

/** `keys disable NAME` / `keys enable NAME`: 1 when there is no such key; the same state twice is said, and 0. */
async function switchCommand(rest: string[], io: CliIo, teamsRoot: string, enable: boolean): Promise<number> {
  const form = enable ? "enable" : "disable";
  const [name, ...extra] = rest;
  if (name === undefined)
    throw new HooksError("E_USAGE", `serve keys ${form}: missing the key's NAME (see: pi-teams-hooks serve keys list)`);
  if (extra.length > 0) throw new HooksError("E_USAGE", `unexpected argument "${extra[0]}" (one NAME at a time)`);
  const result = await setKeyEnabled(teamsRoot, name, enable);
  if (result === "unknown") {
    io.stderr(`pi-teams-hooks serve keys ${form}: no key named "${name}" in ${keysFile(teamsRoot)}\n`);
    return 1;
  }
  if (result === "unchanged") io.stdout(`key "${name}" is ${form}d already\n`);
  else if (enable)
    io.stdout(
      `enabled key "${name}": a running server accepts it again from its next request, with the same secret (its dashboard sessions stay ended: pi-teams-hooks serve keys login ${name})\n`,
    );
  else
    io.stdout(
      `disabled key "${name}": a running server refuses it from its next request and ends its open live streams within a second; pi-teams-hooks serve keys enable ${name} brings it back\n`,
    );
  return 0;
}

async function loginCommand(rest: string[], args: ParsedArgs, io: CliIo, teamsRoot: string): Promise<number> {
  const [name, ...extra] = rest;
  if (name === undefined)
    throw new HooksError("E_USAGE", "serve keys login: missing the key's NAME (see: pi-teams-hooks serve keys list)");
  if (extra.length > 0) throw new HooksError("E_USAGE", `unexpected argument "${extra[0]}" (one NAME at a time)`);
  const base = dashboardBase(str(args.values.url));
  printLogin(io, name, base, await createLoginToken(teamsRoot, name));
  return 0;
}

/** The login URL on a line of its own, after when it stops working (the last line, for `keys login`). */
function printLogin(io: CliIo, name: string, base: URL, login: { token: string; expiresAt: string }): void {
  const url = new URL("/login", base);
  url.searchParams.set("token", login.token);
  io.stdout(
    `dashboard login URL for "${name}": it works once, until ${login.expiresAt} (a new one: pi-teams-hooks serve keys login ${name})\n`,
  );
  io.stdout(`${url.href}\n`);
}

/** Where the dashboard is opened, from `--url` (default: serve's default address); only a scheme, host and port. */
function dashboardBase(text: string | undefined): URL {
  if (text === undefined) {
    const { host, port } = parseListen(DEFAULT_LISTEN);
    return new URL(urlOf(host, port));
  }
  let url: URL | null = null;
  try {
    url = new URL(text);
  } catch {
    /* said below, with what is expected */
  }
  if (
    url === null ||
    (url.protocol !== "http:" && url.protocol !== "https:") ||
    url.username !== "" ||
    url.password !== "" ||
    url.pathname !== "/" ||
    url.search !== "" ||
    url.hash !== ""
  ) {
    throw new HooksError(
      "E_USAGE",
      `--url "${text}" must be http://HOST[:PORT] or https://HOST[:PORT], the address the dashboard is opened at (its root: no path)`,
    );
  }
  return url;
}

/** `scopes tasks:create, tasks:read; teams alpha, beta; templates deploy; rate server default` */
function describeKey(info: KeyInfo): string {
  const [scopes, teams] = [info.scopes.join(", "), info.teams.join(", ")];
  return `scopes ${scopes}; teams ${teams}; templates ${describeTemplates(info)}; rate ${describeRate(info.rateLimit)}`;
}

/** `--teams-root`, else `PI_TEAMS_ROOT_DIR`, else pi's `~/.pi/agent/teams`; it must be a directory. */
async function resolveTeamsRoot(args: ParsedArgs, io: CliIo): Promise<string> {
  const flag = str(args.values["teams-root"]);
  const root = flag !== undefined ? path.resolve(io.cwd, flag) : piTeamsRoot(io.env);
  const from =
    flag !== undefined
      ? "--teams-root"
      : io.env.PI_TEAMS_ROOT_DIR?.trim()
        ? "PI_TEAMS_ROOT_DIR"
        : "the teams root (pi's default; set --teams-root or PI_TEAMS_ROOT_DIR)";
  await requireDirectory(root, `${from} ${root}`, "E_PATH");
  return root;
}

function checkFlags(args: ParsedArgs, form: string, label: string): void {
  const allowed = new Set(["teams-root", "help", ...(FLAGS[form] ?? [])]);
  for (const [flag, value] of Object.entries(args.values)) {
    if (value !== undefined && !allowed.has(flag))
      throw new HooksError("E_USAGE", `--${flag} does not apply to ${label}`);
  }
}
