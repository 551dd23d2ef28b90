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
  const sess = await (await fetch("/gm/session")).json();
  $("leds").textContent = `tension bar ${sess.leds.tension} lit, second bar ${sess.leds.omens} lit, status ${sess.leds.status}` + (sess.mock_pins ? " (mock pins)" : "");
  const box = $("last-dice"); box.replaceChildren();
  if (s.last_roll) s.last_roll.dice.forEach((d, i) => {
    const f = document.createElement("form"); f.className = "fix";
    const inp = document.createElement("input"); inp.value = d.face; inp.setAttribute("aria-label", `die ${i + 1} face`);
    const b = document.createElement("button"); b.textContent = `${d.kind} #${i + 1}`;
    f.append(inp, b);
    f.onsubmit = (e) => { e.preventDefault(); act(() => api("PUT", `/api/rolls/${s.last_roll.id}/dice/${i}`, { face: inp.value }), "die corrected"); };
    box.appendChild(f);
  });
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
$("undo").onclick = () => act(() => api("POST", "/api/undo"), "undone");
$("set-system").onclick = () => act(() => api("PUT", "/api/system", { system: $("system").value, params: JSON.parse($("params").value || "{}") }), "system set");

(async () => { const s = await (await fetch("/gm/session")).json(); if (s.gm) { csrf = s.csrf; await enter(); } })();
