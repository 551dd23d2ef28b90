// GM control page: PIN login (session cookie + CSRF token), tokens, scene, system, corrections.
"use strict";
const $ = (id) => document.getElementById(id);
let csrf = null;

async function api(method, path, body) {
  const r = await fetch(path, { method, headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf || "" },
    body: body === undefined ? undefined : JSON.stringify(body), credentials: "same-origin" });
  const data = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(data.error || r.statusText);
  return data;
}
const say = (m) => { $("msg").textContent = m; };

async function refresh() {
  const s = await (await fetch("/api/state")).json();
  const t = s.tokens;
  $("tension").textContent = t.tension;
  $("tokens").textContent = `tension ${t.tension} · GM omens ${t.gm_omens} · momentum ${t.momentum}`;
  $("system").value = s.system; $("params").value = JSON.stringify(s.params);
  drawPlayers(s.players || [], s.roller);
  const sess = await (await fetch("/gm/session")).json();
  $("leds").textContent = `tension bar ${sess.leds.tension} lit, second bar ${sess.leds.omens} lit, status ${sess.leds.status}` + (sess.mock_pins ? " (mock pins)" : "");
  const box = $("last-dice"); box.replaceChildren();
  if (s.last_roll) s.last_roll.dice.forEach((d, i) => {
    const f = document.createElement("form"); f.className = "fix";
    const inp = document.createElement("input"); inp.value = d.face; inp.setAttribute("aria-label", `die ${i + 1} face`);
    inp.placeholder = "?"; if (d.status !== "ok") { inp.title = `die ${i + 1} ${d.status}: type its face`; f.classList.add("warn"); }
    const b = document.createElement("button"); b.textContent = `set ${d.kind} #${i + 1}`;
    f.append(inp, b);
    f.onsubmit = (e) => { e.preventDefault(); act(() => api("PUT", `/api/rolls/${s.last_roll.id}/dice/${i}`, { face: inp.value }), "die corrected"); };
    box.appendChild(f);
  });
}

// Players: pick the roller, adjust momentum (seed 004) and luck points (seed 001), remove.
function drawPlayers(players, roller) {
  const mk = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
  $("roller-none").checked = roller === null || roller === undefined;
  $("roller-none").onchange = () => act(() => api("PUT", "/api/roller", { player: null }), "no roller picked");
  $("players").replaceChildren(...players.map((p) => {
    const row = mk("div", "player-gm" + (p.id === roller ? " roller" : "")); row.dataset.id = p.id;
    const pick = mk("label", "radio");
    const radio = mk("input"); radio.type = "radio"; radio.name = "roller"; radio.value = p.id; radio.checked = p.id === roller;
    radio.onchange = () => act(() => api("PUT", "/api/roller", { player: p.id }), `${p.name} rolls next`);
    pick.append(radio, " ", mk("b", "", p.name));
    row.appendChild(pick);
    for (const key of ["momentum", "luck"]) {
      const box = mk("span", "stepper " + key);
      const minus = mk("button", "minus", "−"); minus.type = "button"; minus.disabled = p[key] <= 0;
      minus.setAttribute("aria-label", `${p.name} ${key} minus 1`);
      const plus = mk("button", "plus", "+"); plus.type = "button";
      plus.setAttribute("aria-label", `${p.name} ${key} plus 1`);
      minus.onclick = () => act(() => api("PUT", `/api/players/${p.id}`, { [key]: p[key] - 1 }), `${p.name}: ${key} ${p[key] - 1}`);
      plus.onclick = () => act(() => api("PUT", `/api/players/${p.id}`, { [key]: p[key] + 1 }), `${p.name}: ${key} ${p[key] + 1}`);
      box.append(mk("span", "lbl", key), minus, mk("b", "val", String(p[key])), plus);
      row.appendChild(box);
    }
    const rm = mk("button", "remove", "Remove"); rm.type = "button";
    rm.onclick = () => { if (confirm(`Remove ${p.name}?`)) act(() => api("DELETE", `/api/players/${p.id}`), `${p.name} removed (undo brings them back)`); };
    row.appendChild(rm);
    return row;
  }));
}

async function act(fn, done) {
  try { await fn(); say(done); } catch (e) { say(e.message); }
  await refresh();
}

async function enter() {
  $("login").hidden = true; $("controls").hidden = false;
  await refresh();
  const source = new EventSource("/api/events");
  source.addEventListener("state", refresh);
}

$("login").onsubmit = async (e) => {
  e.preventDefault();
  try { csrf = (await api("POST", "/gm/login", { pin: $("pin").value })).csrf; await enter(); }
  catch (err) { $("login-msg").textContent = err.message; }
};
for (const id of ["spend", "give"]) $(id).onclick = () => act(() => api("POST", "/api/tokens/tension", { delta: Number($(id).dataset.delta) }), "tokens changed");
$("scene").onclick = () => act(() => api("POST", "/api/scene"), "new scene: GM omens reset");
$("add-player").onsubmit = (e) => {
  e.preventDefault();
  const name = $("player-name").value;
  act(async () => { await api("POST", "/api/players", { name }); $("player-name").value = ""; }, `${name} added`);
};
$("undo").onclick = () => act(() => api("POST", "/api/undo"), "undone");
$("set-system").onclick = () => act(() => api("PUT", "/api/system", { system: $("system").value, params: JSON.parse($("params").value || "{}") }), "system set");

(async () => { const s = await (await fetch("/gm/session")).json(); if (s.gm) { csrf = s.csrf; await enter(); } })();
