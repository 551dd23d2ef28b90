// Live viewer: draws the newest roll and the history; updates by server-sent events.
"use strict";
// BANDS (band -> colour class): bands.js
const PIPS = {1: [4], 2: [0, 8], 3: [0, 4, 8], 4: [0, 2, 6, 8], 5: [0, 2, 4, 6, 8], 6: [0, 2, 3, 5, 6, 8]};
const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
const words = (s) => String(s || "").replace(/-/g, " ");
let history = [];
let pending = null;  // rolls the stream brought while /api/rolls was being fetched (newer than that answer)
let loads = 0;       // the latest history fetch; an older one's answer is dropped
let loaded = false;  // the page has drawn what it found on opening: newer rolls are announced
let live = false;    // the stream is open
let broken = false;  // it failed since the page loaded: the page may have missed rolls

function drawDie(d) {
  const ok = d.status === "ok";
  // the face's shape is clipped for d8/d10, so the kind label is its sibling, not its child
  const die = el("div", "die " + d.kind + (ok ? "" : " warn"));
  die.title = `${d.kind}: ${ok ? d.face : d.status} (confidence ${Math.round(d.confidence * 100)}%)`;
  // one image to a screen reader, pips or not: "d6 showing 4", "d10 unreadable"
  die.setAttribute("role", "img");
  die.setAttribute("aria-label", ok ? `${d.kind} showing ${d.face}` : `${d.kind} ${d.status}`);
  const face = die.appendChild(el("div", "face"));
  if (ok && d.kind === "d6" && PIPS[d.value]) {
    die.classList.add("pips");
    for (let i = 0; i < 9; i++) face.appendChild(el("span", PIPS[d.value].includes(i) ? "pip" : ""));
  } else {
    face.textContent = ok ? d.face : "?";
  }
  die.appendChild(el("span", "kind", ok ? d.kind : `${d.kind} ${d.status}`));  // "d10 unreadable": which die to look at
  return die;
}

function pct(p) {
  if (p > 0 && p < 0.001) return "<0.1%";
  if (p < 1 && p > 0.999) return ">99.9%";
  return (100 * p).toFixed(1).replace(/\.0$/, "") + "%";
}

// Exact odds of each band for this roll (roll.odds, worst band first): one bar per band,
// the band that came up highlighted. Plain DOM + CSS widths, no library.
function drawOdds(roll) {
  const box = $("odds");
  const odds = roll.odds;
  if (!odds || !Object.keys(odds).length) { box.hidden = true; box.replaceChildren(); box.removeAttribute("aria-label"); return; }
  const rows = Object.entries(odds).map(([band, o]) => {
    const hit = band === roll.outcome;
    const row = el("div", "odds-row odds-" + (BANDS[band] || "none") + (hit ? " hit" : ""));
    row.title = `${words(band)}: ${o.exact} (${pct(o.p)})`;
    row.appendChild(el("span", "ob", words(band)));
    const bar = el("span", "bar" + (o.p > 0 ? "" : " zero")); const fill = el("i");  // a band that cannot come up has no bar
    fill.style.width = (o.p > 0 ? Math.max(0.8, Math.min(100, 100 * o.p)) : 0).toFixed(2) + "%";
    bar.appendChild(fill); row.appendChild(bar);
    row.appendChild(el("span", "op", pct(o.p)));
    return row;
  });
  box.replaceChildren(el("div", "odds-title", "chance of each outcome"), ...rows);
  box.setAttribute("aria-label", "chance of each outcome: " +
    Object.entries(odds).map(([b, o]) => `${words(b)} ${pct(o.p)}`).join(", "));
  box.hidden = false;
}

const title = (s) => words(s).replace(/\b\w/g, (c) => c.toUpperCase());

// The system a roll was resolved under, and which kind of roll: "Charge · action roll".
function systemLine(roll) {
  const r = roll.result || {}, p = roll.params || {};
  const parts = [title(roll.system)];
  if (roll.system === "charge" && (r.roll || p.roll)) parts.push((r.roll || p.roll) + " roll");
  else if (roll.system === "contract" && (r.difficulty || p.difficulty)) parts.push("difficulty " + (r.difficulty || p.difficulty));
  else if (roll.system === "contingency-skill" && r.target != null) parts.push(`target ${r.target}` + (r.difficulty ? ` (${r.difficulty})` : ""));
  else if (roll.system === "contingency-pool" && r.pool_before != null) parts.push(`pool of ${r.pool_before}` + (r.action ? ", as an action" : ""));
  return parts.join(" · ");
}

// What matters first, beside the band: a pool's dice removed ("pool empty", "no die removed",
// "2 removed, 2 left"), a determination roll's effect on the consequence, a critical's levels.
function detail(roll) {
  const r = roll.result || {};
  const parts = [];
  if (roll.system === "contingency-pool" && r.removed != null) {
    parts.push(r.depleted ? "pool empty" : r.no_removal ? "no die removed" : `${r.removed} removed, ${r.remaining} left`);
  }
  if (roll.system === "charge" && r.roll === "determination" && r.determination) {
    parts.push(r.determination.replace(/^the consequence (is )?/, "consequence "));
  }
  if (roll.outcome === "critical" && r.critical_levels > 0) parts.push(`${r.critical_levels} level${r.critical_levels > 1 ? "s" : ""}`);
  return parts.join(" · ");
}

let shown = null;  // what the card last showed of a roll: the status line speaks, and the card flashes, only when it changes

function drawRoll(roll) {
  const card = $("roll");
  const was = card.classList.contains("flash") ? " flash" : "";
  card.className = "roll band-" + (BANDS[roll.outcome] || "none") + was;
  $("sys").textContent = systemLine(roll);
  $("sys").hidden = false;
  $("outcome").textContent = words(roll.outcome);
  const more = detail(roll);
  $("detail").textContent = more;
  $("detail").hidden = !more;
  const by = $("by");
  by.hidden = !roll.player && !roll.assist_by;
  by.textContent = [roll.player && `${roll.player.name}'s roll`, roll.assist_by && `${roll.assist_by.name} assists`].filter(Boolean).join(" · ");
  drawOdds(roll);
  const dice = $("dice"); dice.replaceChildren(...roll.dice.map(drawDie));
  if (!roll.dice.length) dice.appendChild(el("span", "", "no dice found in the tray"));
  $("why").replaceChildren(...(roll.why || []).map((w) => el("li", "", w)));
  const fig = $("photo");
  if (roll.image_url) {
    fig.hidden = false;
    const img = $("photo-img");
    img.src = roll.image_url;
    const boxes = $("boxes"); boxes.replaceChildren();
    roll.dice.forEach((d) => {
      const [x0, y0, x1, y1] = d.box;
      if (x1 <= x0 || y1 <= y0) return;  // a die not in the photo (a luck die rolled after it): no box to draw
      const b = el("div", "box" + (d.status === "ok" ? "" : " warn"));
      b.dataset.tag = y0 < 0.06 * roll.height ? "below" : "above";  // until placeTags measures: the photo's top edge
      Object.assign(b.style, { left: (100 * x0 / roll.width) + "%", top: (100 * y0 / roll.height) + "%",
        width: (100 * (x1 - x0) / roll.width) + "%", height: (100 * (y1 - y0) / roll.height) + "%" });
      b.appendChild(el("span", "", d.status === "ok" ? d.face : "?"));
      boxes.appendChild(b);
    });
    placeTags();
  } else fig.hidden = true;
  const key = `${roll.id} ${roll.outcome} ${more}`;
  if (key === shown) return;
  // the screen reader's one line per roll (the card itself is no live region: it is redrawn often)
  if (shown !== null || loaded) $("announce").textContent = `Roll ${roll.id}: ${title(roll.outcome)}${more ? ", " + more : ""}`;
  shown = key;
  card.classList.remove("flash"); void card.offsetWidth; card.classList.add("flash");
}

// Each photo tag goes above its box, else below it, else inside its top edge: the first place
// that covers no other die's box and stays inside the photo (measured as drawn).
function placeTags() {
  const photo = $("photo-img").getBoundingClientRect();
  if (!photo.width || !$("photo-img").complete) return;  // again on its load
  const boxes = [...$("boxes").children];
  const rects = boxes.map((b) => b.getBoundingClientRect());
  boxes.forEach((b, i) => {
    for (const spot of ["above", "below", "inside"]) {
      b.dataset.tag = spot;
      const t = b.firstChild.getBoundingClientRect();
      const inPhoto = t.top >= photo.top - 0.5 && t.bottom <= photo.bottom + 0.5;
      const clear = rects.every((r, j) => j === i || !(t.left < r.right && t.right > r.left && t.top < r.bottom && t.bottom > r.top));
      if (inPhoto && clear) break;
    }
  });
}

// Which table counters each system plays with: tension tokens from cuts (seed 000; the GM spends
// one to force a pool die out), GM omens (seed 001), momentum (seed 004); The Contract has none.
const SYSTEM_TOKENS = {
  "contingency-action": ["tension"], "contingency-pool": ["tension"], "contingency-skill": ["gm_omens"],
  "charge": ["momentum"], "contract": [],
};

function drawState(s) {
  $("system").textContent = words(s.system);
  const t = s.tokens || {};
  // the counters the system plays with (RULES.md), and a tension token or GM omen the GM has above 0;
  // momentum only where it is played: it is the roller's, and every player starts with 2 (seed 004)
  const uses = SYSTEM_TOKENS[s.system] || ["tension", "gm_omens", "momentum"];
  const parts = [["tension", "tension"], ["GM omens", "gm_omens"], ["momentum", "momentum"]]
    .filter(([, key]) => uses.includes(key) || (key !== "momentum" && (t[key] ?? 0) > 0)).map(([k, key]) => [k, t[key]]);
  // one group a token, kept on one line: a narrow header breaks between them
  $("tokens").replaceChildren(...parts.flatMap(([k, v], i) => {
    const group = el("span", "", k + " "); group.appendChild(el("b", "", String(v ?? 0)));
    return i ? [document.createTextNode(" · "), group] : [group];
  }));
  $("notices").replaceChildren(...(s.notices || []).map((n) => el("div", "", n)));
  drawPlayers(s.players || [], s.roller);
  if (s.last_roll) addRoll(s.last_roll);  // as a roll event: also laid over a history fetch under way
}

// Each player's momentum (seed 004) and luck points (seed 001); the roller is marked.
function drawPlayers(players, roller) {
  $("players-box").hidden = !players.length;
  $("players").replaceChildren(...players.map((p) => {
    const li = el("li", "player" + (p.id === roller ? " roller" : ""));
    li.dataset.id = p.id;
    li.appendChild(el("span", "pn", p.name));
    if (p.id === roller) li.appendChild(el("span", "tag", "rolls next"));
    const stats = el("span", "ps");
    stats.append("momentum ", el("b", "momentum", String(p.momentum)), " · luck ", el("b", "luck", String(p.luck)));
    li.appendChild(stats);
    return li;
  }));
}

function drawHistory() {
  $("history").replaceChildren(...history.slice(1, 30).map((r) => {
    const li = el("li", "band-" + (BANDS[r.outcome] || "none"));
    li.dataset.id = r.id;
    li.appendChild(el("span", "o", words(r.outcome)));
    li.appendChild(el("span", "s", [r.player && r.player.name, systemLine(r)].filter(Boolean).join(" · ")));  // who rolled, what
    if (r.odds && r.odds[r.outcome]) li.appendChild(el("span", "c", pct(r.odds[r.outcome].p)));
    li.appendChild(el("span", "f", r.dice.map((d) => d.status === "ok" ? d.face : "?").join(" ")));
    li.appendChild(el("span", "t", new Date(r.time * 1000).toLocaleTimeString()));
    return li;
  }));
}

function addRoll(roll) {
  if (pending) pending.set(roll.id, roll);
  // a roll already here (corrected, or a correction undone) replaces its entry, and the card if it is the one shown
  const i = history.findIndex((r) => r.id === roll.id);
  if (i >= 0) history[i] = roll;
  else if (history.length >= 30 && roll.id < history[history.length - 1].id) return;  // older than any kept: not shown
  else history.unshift(roll);
  history.sort((a, b) => b.id - a.id);
  if (history[0].id === roll.id) drawRoll(roll);
  drawHistory();
}

// The history as the server has it (rolls made while this phone was cut off included), with the
// rolls the stream brought meanwhile laid over it. True when it came.
async function loadHistory() {
  const mine = ++loads;
  const during = pending = new Map();
  try {
    const resp = await fetch("/api/rolls?limit=30", { cache: "no-store" });
    if (!resp.ok) throw new Error("status " + resp.status);
    const rolls = await resp.json();
    if (mine !== loads) return false;
    for (const r of during.values()) {
      const i = rolls.findIndex((x) => x.id === r.id);
      if (i >= 0) rolls[i] = r; else rolls.push(r);
    }
    rolls.sort((a, b) => b.id - a.id);
    history = rolls;
    if (history.length) drawRoll(history[0]);
    loaded = true;
    drawHistory();
    showLive();
    return true;
  } catch (e) {
    return false;
  } finally {
    if (mine === loads) pending = null;
  }
}

// The dot, and in words: "live", or while the server is out of reach "reconnecting…", with the
// card marked as possibly not the latest roll.
function showLive() {
  $("live").className = "live " + (live ? "on" : "off");
  $("live-text").textContent = live ? "live" : broken ? "reconnecting…" : "connecting…";
  $("stale").hidden = live || !broken || !history.length;
}

let missed = false;  // rolls may have been made that this page has not seen
function connect() {
  const source = new EventSource("/api/events");
  source.onopen = () => {
    live = true; showLive();
    if (missed) catchUp();
  };
  source.onerror = () => {
    live = false; broken = missed = true; showLive();
    // a refusal (e.g. 503: too many viewers) closes the stream for good: this page tries again
    if (source.readyState === EventSource.CLOSED) { source.close(); setTimeout(connect, 5000); }
  };
  source.addEventListener("state", (e) => drawState(JSON.parse(e.data)));
  source.addEventListener("roll", (e) => addRoll(JSON.parse(e.data)));
}

async function catchUp() {
  missed = false;
  if (!(await loadHistory()) && live) { missed = true; setTimeout(() => { if (missed && live) catchUp(); }, 3000); }
}

async function start() {
  $("photo-img").addEventListener("load", placeTags);
  let resized = 0;
  addEventListener("resize", () => { cancelAnimationFrame(resized); resized = requestAnimationFrame(placeTags); });
  if (!(await loadHistory())) missed = true;  // the stream's open fetches it again
  connect();
}
start();
