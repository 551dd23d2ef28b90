// Live viewer: draws the newest roll and the history; updates by server-sent events.
"use strict";
const BANDS = {
  critical: "critical", clean: "good", full: "good", complete: "good", exceptional: "critical", success: "good",
  mixed: "mixed", partial: "mixed", grim: "bad", bad: "bad", failure: "bad",
  disastrous: "worst", botch: "worst", reroll: "none", invalid: "none",
};
const PIPS = {1: [4], 2: [0, 8], 3: [0, 4, 8], 4: [0, 2, 6, 8], 5: [0, 2, 4, 6, 8], 6: [0, 2, 3, 5, 6, 8]};
const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
const words = (s) => String(s || "").replace(/-/g, " ");
let history = [];

function drawDie(d) {
  const ok = d.status === "ok";
  const die = el("div", "die " + d.kind + (ok ? "" : " warn"));
  die.title = `${d.kind}: ${ok ? d.face : d.status} (confidence ${Math.round(d.confidence * 100)}%)`;
  if (ok && d.kind === "d6" && PIPS[d.value]) {
    die.classList.add("pips");
    for (let i = 0; i < 9; i++) die.appendChild(el("span", PIPS[d.value].includes(i) ? "pip" : ""));
  } else {
    die.appendChild(document.createTextNode(ok ? d.face : "?"));
  }
  die.appendChild(el("span", "kind", ok ? d.kind : d.status));
  return die;
}

function drawRoll(roll) {
  const card = $("roll");
  card.className = "roll band-" + (BANDS[roll.outcome] || "none");
  $("outcome").textContent = words(roll.outcome);
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
      const b = el("div", "box" + (d.status === "ok" ? "" : " warn"));
      Object.assign(b.style, { left: (100 * x0 / roll.width) + "%", top: (100 * y0 / roll.height) + "%",
        width: (100 * (x1 - x0) / roll.width) + "%", height: (100 * (y1 - y0) / roll.height) + "%" });
      b.appendChild(el("span", "", d.status === "ok" ? d.face : "?"));
      boxes.appendChild(b);
    });
  } else fig.hidden = true;
  void card.offsetWidth; card.classList.add("flash");
}

function drawState(s) {
  $("system").textContent = words(s.system);
  const t = s.tokens || {};
  const parts = [["tension", t.tension], ["GM omens", t.gm_omens], ["momentum", t.momentum]];
  $("tokens").replaceChildren(...parts.flatMap(([k, v], i) => [document.createTextNode((i ? " · " : "") + k + " "), el("b", "", String(v ?? 0))]));
  $("notices").replaceChildren(...(s.notices || []).map((n) => el("div", "", n)));
  if (s.last_roll && (!history.length || history[0].id !== s.last_roll.id)) addRoll(s.last_roll);
  else if (s.last_roll) { history[0] = s.last_roll; drawRoll(s.last_roll); }
}

function drawHistory() {
  $("history").replaceChildren(...history.slice(1, 30).map((r) => {
    const li = el("li", "band-" + (BANDS[r.outcome] || "none"));
    li.appendChild(el("span", "o", words(r.outcome)));
    li.appendChild(el("span", "f", r.dice.map((d) => d.status === "ok" ? d.face : "?").join(" ")));
    li.appendChild(el("span", "t", new Date(r.time * 1000).toLocaleTimeString()));
    return li;
  }));
}

function addRoll(roll) {
  const i = history.findIndex((r) => r.id === roll.id);
  if (i >= 0) history[i] = roll; else history.unshift(roll);
  history.sort((a, b) => b.id - a.id);
  if (history[0].id === roll.id) drawRoll(roll);
  drawHistory();
}

async function start() {
  try {
    const rolls = await (await fetch("/api/rolls?limit=30")).json();
    history = rolls;
    if (rolls.length) drawRoll(rolls[0]);
    drawHistory();
  } catch (e) { /* the stream will bring the state */ }
  const source = new EventSource("/api/events");
  source.onopen = () => { $("live").className = "live on"; };
  source.onerror = () => { $("live").className = "live off"; };
  source.addEventListener("state", (e) => drawState(JSON.parse(e.data)));
  source.addEventListener("roll", (e) => addRoll(JSON.parse(e.data)));
}
start();
