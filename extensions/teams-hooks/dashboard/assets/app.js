// The dashboard's only script (served by the dashboard itself; the pages work without it). It shows
// times in the viewer's time zone and keeps the page live: on the runs page each new run that the
// filters keep is added at the top; on the overview the figures are fetched again after new runs.
// A live run comes as data (what a hook and an agent wrote, file names included): its row is built
// with DOM calls, every value as text, and its link only when it is a run page of this server.
"use strict";
(() => {
  const status = document.getElementById("live-status");
  const say = (text) => {
    if (status) status.textContent = text;
  };
  const pad = (n) => String(n).padStart(2, "0");
  const zone = (() => {
    try {
      const part = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" })
        .formatToParts(new Date())
        .find((p) => p.type === "timeZoneName");
      return part ? part.value : "";
    } catch {
      return "";
    }
  })();
  const localise = (root) => {
    for (const el of root.querySelectorAll("time[datetime]")) {
      if (el.dataset.local) continue;
      const d = new Date(el.getAttribute("datetime"));
      if (Number.isNaN(d.getTime())) continue;
      el.title = el.getAttribute("datetime");
      el.textContent = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}${zone ? ` ${zone}` : ""}`;
      el.dataset.local = "1";
    }
  };
  localise(document);
  const foot = document.querySelector(".foot p");
  if (foot)
    foot.textContent = `Read-only view of the teams' hook logs. Times are in your time zone${zone ? ` (${zone})` : ""}.`;

  // A run's own page on this server, and nothing else, may be a row's link.
  const RUN_HREF = /^\/runs\/[^/\\?#]+\/[^/\\?#]+$/;
  const KINDS = new Set(["ok", "note", "bad"]);
  const text = (value) => (typeof value === "string" ? value : "");
  // The row the runs page prints for a run (dashboard/runs.ts runRowHtml), from its data; null when
  // the data is not a run's.
  const rowOf = (d) => {
    if (!d || typeof d !== "object" || typeof d.cursor !== "string" || !RUN_HREF.test(text(d.href))) return null;
    const tr = document.createElement("tr");
    tr.dataset.team = text(d.team);
    tr.dataset.name = text(d.name);
    tr.dataset.cursor = d.cursor;
    const cell = (value, className) => {
      const td = tr.insertCell();
      if (className) td.className = className;
      td.textContent = value;
      return td;
    };
    const link = document.createElement("a");
    link.setAttribute("href", d.href);
    link.setAttribute("aria-label", text(d.label));
    const time = document.createElement(typeof d.time === "string" ? "time" : "span");
    if (typeof d.time === "string") time.setAttribute("datetime", d.time);
    time.textContent = text(d.timeText);
    link.append(time);
    cell("").append(link);
    for (const field of ["team", "event"]) cell(text(d[field]));
    for (const field of ["task", "member", "hook"]) cell(text(d[field]), "cut").title = text(d[field]);
    const badge = document.createElement("span");
    badge.className = `badge badge-${KINDS.has(d.outcomeKind) ? d.outcomeKind : "bad"}`;
    badge.textContent = text(d.outcome);
    cell("").append(badge);
    cell(text(d.duration), "num");
    const actions = cell("", "cut");
    actions.title = text(d.actions);
    if (d.hand === true) {
      const hand = document.createElement("span");
      hand.className = "badge badge-note";
      hand.textContent = "by hand";
      actions.append(hand, " ");
    }
    actions.append(text(d.actions));
    cell(text(d.stderr), "stderr").title = text(d.stderr);
    return tr;
  };

  const main = document.getElementById("main");
  const kind = main?.dataset.live;
  if (!kind || typeof EventSource === "undefined") return;
  const query = main.dataset.liveQuery || "";
  // The runs page asks for what landed after its newest row, so that nothing between the page and the stream is lost.
  const newest = kind === "runs" && document.querySelector("#runs-body tr[data-cursor]");
  const after = newest ? `&after=${encodeURIComponent(newest.dataset.cursor)}` : "";
  const source = new EventSource(`/events?view=${encodeURIComponent(kind)}${query ? `&${query}` : ""}${after}`);
  let added = 0;
  source.addEventListener("open", () => say(added > 0 ? `Live: ${added} new run(s)` : "Live"));
  source.addEventListener("error", () => {
    // EventSource tries again by itself after a dropped connection, but not after a refusal (401, 503).
    say(
      source.readyState === EventSource.CLOSED
        ? "Live updates stopped: reload the page to try again"
        : "Live updates interrupted: reconnecting…",
    );
  });
  source.addEventListener("bye", (event) => {
    source.close();
    let why = "";
    try {
      why = JSON.parse(event.data).why;
    } catch {
      why = "";
    }
    say(
      why === "access"
        ? "Live updates stopped: your key no longer lets you see them (reload the page to log in again)"
        : "Live updates ended: the server stopped",
    );
  });

  if (kind === "runs") {
    const body = document.getElementById("runs-body");
    source.addEventListener("run", (event) => {
      let data = null;
      try {
        data = JSON.parse(event.data);
      } catch {
        return;
      }
      const row = rowOf(data);
      if (!body || !row || body.querySelector(`tr[data-cursor="${CSS.escape(row.dataset.cursor)}"]`)) return;
      row.classList.add("fresh");
      localise(row);
      body.prepend(row);
      while (body.rows.length > 200) body.deleteRow(-1);
      const empty = document.getElementById("runs-empty");
      if (empty) empty.remove();
      added += 1;
      say(`Live: ${added} new run(s)`);
    });
  } else {
    let timer = null;
    let last = 0;
    const refresh = async () => {
      timer = null;
      last = Date.now();
      try {
        const answer = await fetch(location.href, { headers: { Accept: "text/html" }, credentials: "same-origin" });
        if (!answer.ok) {
          say(`Live updates stopped: the overview answered ${answer.status}; reload the page`);
          return;
        }
        const fresh = new DOMParser().parseFromString(await answer.text(), "text/html").getElementById("main");
        if (!fresh) return;
        main.replaceChildren(...fresh.childNodes);
        localise(main);
        say(`Live: updated ${new Date().toLocaleTimeString()}`);
      } catch {
        say("Live updates interrupted: reconnecting…");
      }
    };
    source.addEventListener("run", () => {
      added += 1;
      if (timer === null) timer = setTimeout(refresh, Math.max(300, 2000 - (Date.now() - last)));
    });
  }
})();
