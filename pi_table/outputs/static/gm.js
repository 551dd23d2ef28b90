// GM control page: PIN login (session cookie + CSRF token), tokens, scene, system, players (the
// roller, the teammate who assists, a new session), corrections (a die's face and kind, a false die
// removed, the parameters a roll is resolved under) and the offers taken up after a roll (a skill
// check's luck die, a condition marked on a check failed by one, a pool's last die forced out), on
// the newest roll or on one the GM picks from the recent rolls.
"use strict";
const $ = (id) => document.getElementById(id);
const RECENT = 10;  // rolls listed to pick from (GET /api/rolls?limit=RECENT)
// BANDS (band -> colour class, as on the viewer): bands.js
let csrf = null, source = null;
const SIGNED_OUT = "signed out (the server restarted?): enter the PIN to go on";

async function api(method, path, body) {
  const r = await fetch(path, { method, headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf || "" },
    body: body === undefined ? undefined : JSON.stringify(body), credentials: "same-origin" });
  const data = await r.json().catch(() => ({}));
  if (r.status === 401 && path.startsWith("/api/")) { signOut(SIGNED_OUT); throw new Error(SIGNED_OUT); }
  if (!r.ok) throw new Error(data.error || r.statusText);
  return data;
}

// The session lives as long as the server's run: after a restart every change answers 401.
// Show the PIN form again; what the GM typed stays in the hidden controls for after the login.
function signOut(message) {
  csrf = null;
  if (source) { source.close(); source = null; }
  $("controls").hidden = true; $("login").hidden = false;
  $("login-msg").textContent = message;
  $("pin").value = ""; $("pin").focus();
}
const say = (m) => { $("msg").textContent = m; };

// A field the GM is editing (focused, or changed since the page last filled it) keeps its value,
// caret and selection when a state event or a roll comes in; after a successful submit the
// action releases it and the next refresh shows the server's value again.
const filled = new WeakMap();   // field -> the value the page last put in it
const released = new WeakSet(); // fields just submitted: refill even if focused
const editing = (el) => !released.has(el) && (el === document.activeElement || (filled.has(el) && el.value !== filled.get(el)));
function fill(el, value) {
  if (editing(el)) return;
  released.delete(el);
  el.value = value; filled.set(el, el.value);
}
// The roll the correction controls act on: the newest (picked null), or the one the GM tapped in
// the recent rolls (picked: its id), which newer rolls do not take the controls away from.
// shownRoll: the roll the die fields show, which "Apply to roll #N" acts on too; it is lastRoll
// but while the GM types in the fields of an older roll (drawDice holds them there).
let lastRoll = null, shownRoll = null, newest = null, picked = null, recent = [], refreshes = 0;
let tension = 0;  // the GM's tension tokens, as the last state showed them (the force buttons)
// Picking a system fills the parameters field with that system's own keys: the table's
// parameters for the table's system, a new table's for another (GET /api/systems).
let table = { system: null, params: {} }, systems = {};
$("system").onchange = () => {
  const sys = $("system").value;
  const params = sys === table.system ? table.params : (systems[sys] || {}).params;
  if (params) $("params").value = JSON.stringify(params);
  drawForm();
  drawRollParams();
};

// The parameters form: one control per parameter the picked system takes for the next rolls (GET
// /api/systems "fields": a menu for a choice, a number for an int, a box for a yes/no, a JSON field for a
// list), drawn from the JSON field and writing into it, which "Use for next rolls" and "Apply to roll #N"
// send. An empty number is null where the field says what that means ("as many as read").
function paramValues() {
  try { const v = JSON.parse($("params").value || "{}"); return v && typeof v === "object" && !Array.isArray(v) ? v : null; }
  catch (e) { return null; }
}
function setParam(name, value) {
  const params = paramValues();
  if (!params) { say("the JSON field below is not valid JSON: fix it, or pick the system again"); return; }
  params[name] = value;
  $("params").value = JSON.stringify(params);
  drawRollParams();
}
function paramControl(f) {
  const mk = (tag) => document.createElement(tag);
  const label = mk("label"), text = mk("span"); text.textContent = f.label.charAt(0).toUpperCase() + f.label.slice(1);
  let c;
  if (f.type === "choice") {
    c = mk("select");
    for (const v of f.choices) { const o = mk("option"); o.value = o.textContent = v; c.appendChild(o); }
    c.onchange = () => setParam(f.name, c.value);
  } else if (f.type === "bool") {
    c = mk("input"); c.type = "checkbox"; label.className = "radio";
    c.onchange = () => setParam(f.name, c.checked);
  } else if (f.type === "int") {
    c = mk("input"); c.type = "number"; c.inputMode = "numeric"; c.step = 1;
    if (f.min !== undefined) c.min = f.min;
    if (f.max !== undefined) c.max = f.max;
    if (f.blank) c.placeholder = f.blank;
    c.oninput = () => {
      if (c.value === "" && f.blank && !c.validity.badInput) setParam(f.name, null);
      else if (c.value !== "" && Number.isInteger(Number(c.value))) setParam(f.name, Number(c.value));
    };
  } else {  // json: a list or a mapping, typed as JSON
    c = mk("input"); c.spellcheck = false; c.autocapitalize = "off";
    if (f.blank) c.placeholder = f.blank;
    c.oninput = () => {
      if (c.value.trim() === "" && f.blank) { c.classList.remove("bad"); setParam(f.name, null); return; }
      try { const v = JSON.parse(c.value); c.classList.remove("bad"); setParam(f.name, v); }
      catch (e) { c.classList.add("bad"); }
    };
  }
  c.dataset.param = f.name; c.setAttribute("aria-label", f.name);
  if (f.type === "bool") label.append(c, text); else label.append(text, c);
  return label;
}
function drawForm() {
  const box = $("param-form"), sys = $("system").value, fields = (systems[sys] || {}).fields || [];
  if (box.dataset.system !== sys) {
    box.replaceChildren(...fields.map(paramControl));
    box.dataset.system = sys;
  }
  const params = paramValues();
  if (!params) return;
  for (const c of box.querySelectorAll("[data-param]")) {
    if (c === document.activeElement) continue;  // the GM is typing in it
    const v = params[c.dataset.param];
    if (c.type === "checkbox") c.checked = v === true;
    else if (c.tagName === "SELECT") c.value = v;
    else if (c.type === "number") c.value = Number.isInteger(v) ? String(v) : "";
    else c.value = v === null || v === undefined ? "" : JSON.stringify(v);
    c.classList.remove("bad");
  }
}
$("params").addEventListener("input", drawForm);

// "Apply to roll #N": the parameters field set on the roll being corrected, after it (the GM forgot to set
// them first; PUT /api/rolls/<id>/params). Only for a roll of the system picked here (a roll
// keeps its own system); the note shows what the roll was resolved with.
function drawRollParams() {
  const roll = shownRoll, btn = $("roll-params"), note = $("roll-params-note");
  const saved = Boolean(roll) && roll.id !== null && roll.id !== undefined;
  btn.disabled = !saved || roll.system !== $("system").value;
  btn.textContent = saved ? `Apply to roll #${roll.id}` : "Apply to the last roll";
  note.hidden = !saved;
  if (saved) {
    note.textContent = `Roll #${roll.id} (${roll.system}) was resolved with ${JSON.stringify(roll.params)}`
      + (btn.disabled ? `: pick ${roll.system} above to change them.` : ".");
  }
}

async function refresh() {
  const mine = ++refreshes;
  const [s, rolls] = await Promise.all([fetch("/api/state").then((r) => r.json()),
    fetch(`/api/rolls?limit=${RECENT}`).then((r) => (r.ok ? r.json() : [])).catch(() => [])]);
  const t = s.tokens;
  $("tension").textContent = t.tension; tension = t.tension;
  $("omens").textContent = t.gm_omens;
  $("fail-row").hidden = s.system !== "contingency-skill";
  $("tokens").textContent = `tension ${t.tension} · GM omens ${t.gm_omens} · momentum ${t.momentum}`;
  table = { system: s.system, params: s.params };
  fill($("system"), s.system); fill($("params"), JSON.stringify(s.params));
  drawForm();
  drawPlayers(s.players || [], s.roller);
  drawAssister(s.players || [], s.roller, s.assister, s.system);
  const sess = await (await fetch("/gm/session")).json();
  $("leds").textContent = `tension bar ${sess.leds.tension} lit${sess.leds.tension_over ? " (more: last blinks)" : ""}, second bar ${sess.leds.omens} lit${sess.leds.omens_over ? " (more: last blinks)" : ""}, status ${sess.leds.status}` + (sess.mock_pins ? " (mock pins)" : "");
  let roll = s.last_roll;
  if (picked !== null && !(roll && roll.id === picked)) {
    roll = rolls.find((r) => r.id === picked)  // older than the rolls listed: asked for by its id
      || await fetch(`/api/rolls/${picked}`).then((r) => (r.ok ? r.json() : null)).catch(() => null);
    if (mine !== refreshes) return;
    if (!roll) {
      say(`roll #${picked} is no longer kept: correcting the newest roll`);
      picked = null; roll = s.last_roll;
    }
  }
  if (mine !== refreshes) return;  // a later refresh (a newer state) draws the rolls
  newest = s.last_roll; recent = rolls; lastRoll = roll;
  drawDice();
  drawLuck(s.luck_pending || null);
  drawMarkCondition();
  drawRollParams();
  drawForce();
}

// Recent rolls, newest first: number, outcome band and dice; tapping one makes it the roll the
// correction controls act on (the newest one: back to following the newest roll). The one whose
// dice the fields show is marked.
function drawRecent() {
  const mk = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
  const shown = $("last-dice").dataset.roll;
  $("recent").replaceChildren(...recent.map((r) => {
    const several = new Set(r.dice.map((d) => d.kind)).size > 1;
    const faces = r.dice.map((d) => (several ? `${d.kind} ` : "") + (d.status === "ok" ? d.face : "?")).join(several ? ", " : " ");
    const b = mk("button", "band-" + (BANDS[r.outcome] || "none")); b.type = "button"; b.dataset.roll = r.id;
    b.setAttribute("aria-pressed", String(String(r.id) === shown));
    b.append(mk("span", "n", `#${r.id}`), mk("span", "o", String(r.outcome).replace(/-/g, " ")), mk("span", "f", faces || "no dice"));
    b.onclick = () => pick(r.id);
    const li = mk("li"); li.appendChild(b);
    return li;
  }));
  const roll = lastRoll, label = $("correcting"), back = $("to-newest");
  const newestId = newest ? String(newest.id) : null;
  label.textContent = !roll ? "No roll yet."
    : roll.id === null ? "Correcting the newest roll (not saved yet)."
    : `Correcting roll #${shown}` + (shown === newestId ? " (the newest)." : ".");
  back.hidden = !roll || (picked === null && shown === newestId);
  back.textContent = newest && newest.id !== null ? `Back to the newest roll (#${newestId})` : "Back to the newest roll";
}

// The GM taps a roll (or "back to the newest"): the fields are drawn for it, whatever was typed
// in the ones shown before.
function pick(id) {
  picked = newest && id === newest.id ? null : id;
  $("last-dice").replaceChildren(); delete $("last-dice").dataset.roll;
  $("luck-face").value = "";  // a luck die's face typed for the roll shown before goes too
  refresh();
}
$("to-newest").onclick = () => pick(null);

// "Correct a die": one field per die of the roll being corrected (the newest, or the one picked), a kind menu where the roll's system reads
// more than one kind (a d10 read as a d8), and "remove" for a false die (a pip or a mark on the
// tray read as a die; asks first, and undo brings it back). While the GM edits a field, a newer
// roll does not replace the fields: they go on correcting the roll they show (any roll may be corrected).
function drawDice() {
  const box = $("last-dice"), roll = lastRoll, note = $("dice-note");
  const fields = [...box.querySelectorAll("input")];
  const shown = Number(box.dataset.roll);
  if (roll && roll.id === shown && fields.length === roll.dice.length) {
    shownRoll = roll;
    roll.dice.forEach((d, i) => markDie(fields[i], d, i));
  } else if ((!roll || roll.id !== shown) && [...fields, ...box.querySelectorAll("select"), $("luck-face")].some(editing)) {
    // (the shown roll with a die more or less, a die removed or put back, is drawn again: its
    // fields' places no longer name its dice)
    note.textContent = `A newer roll came in: these fields still correct roll #${shown}.`;
    note.hidden = false;
    drawRecent();
    return;
  } else {
    box.replaceChildren(); delete box.dataset.roll;
    shownRoll = roll;
    if (roll) {
      box.dataset.roll = roll.id;
      roll.dice.forEach((d, i) => box.appendChild(dieForm(roll, d, i)));
    }
  }
  note.hidden = !(roll && roll.id !== null && !roll.dice.length);
  if (!note.hidden) note.textContent = `Roll #${roll.id} has no die left (${roll.outcome}): Undo last change brings the last one back.`;
  drawForce();
  drawRecent();
}

// A resource pool's last die that stayed (seed 000 "Diminishing Resource Pools"; the result's
// offers): the player takes a mark, or the GM spends a tension token (disabled when he has none),
// to force it out: the roll being corrected resolved again with {"force": ...} (PUT
// /api/rolls/<id>/params); hidden for any other roll.
function drawForce() {
  const roll = savedRollOf("contingency-pool"), row = $("force");
  const offered = Boolean(roll) && Boolean(roll.result) && (roll.result.offers || []).length > 0;
  row.hidden = !offered;
  if (!offered) return;
  row.dataset.roll = roll.id;
  $("force-label").textContent = `Roll #${roll.id}: the last die stayed. Force it out:`;
  $("force-tension").disabled = tension <= 0;
  $("force-hint").hidden = tension > 0;
}
for (const [id, how, what] of [["force-mark", "mark", "the player takes a mark"], ["force-tension", "tension", "a tension token spent"]]) {
  $(id).onclick = () => takeOffer("force", { force: how }, (roll) => `roll #${roll}: last die forced out, ${what} (Undo last change takes it back)`);
}

// The roll the correction controls act on (shownRoll) if it is a saved roll of ``system``, else null.
function savedRollOf(system) {
  const roll = shownRoll;
  return roll && roll.id !== null && roll.id !== undefined && roll.system === system ? roll : null;
}

// An offer taken up on the roll its row was drawn for (the row's data-roll): that roll's params set
// (PUT /api/rolls/<id>/params); ``done(id)`` says what it did.
function takeOffer(rowId, params, done) {
  const id = Number($(rowId).dataset.roll);
  act(() => api("PUT", `/api/rolls/${id}/params`, { params }), done(id));
}

// The kinds a die of this roll may be set to, where its system reads more than one (GET /api/systems):
// those, and the die's own kind as read; none (no menu) where the system reads one kind.
function kindsFor(roll, d) {
  const read = (systems[roll.system] || {}).kinds || [];
  return read.length > 1 ? [...new Set([...read, d.kind])] : [];
}

function dieForm(roll, d, i) {
  // the roll's number of dice as shown goes with each change: the server refuses it (409) if another
  // device took a die out or put one back meanwhile, which moved the dice after it to other places
  const rollId = roll.id, shownDice = roll.dice.length;
  const f = document.createElement("form"); f.className = "fix";
  const inp = document.createElement("input"); inp.setAttribute("aria-label", `die ${i + 1} face`); inp.placeholder = "?";
  const b = document.createElement("button"); b.className = "set";
  f.append(inp);
  const kinds = kindsFor(roll, d);
  let sel = null;
  if (kinds.length) {
    sel = document.createElement("select"); sel.className = "kind"; sel.setAttribute("aria-label", `die ${i + 1} kind`);
    for (const k of kinds) { const o = document.createElement("option"); o.value = o.textContent = k; sel.appendChild(o); }
    sel.addEventListener("blur", () => setTimeout(drawDice));
    f.append(sel);
  }
  const rm = document.createElement("button"); rm.type = "button"; rm.className = "remove-die"; rm.textContent = "remove";
  rm.setAttribute("aria-label", `remove die ${i + 1}`);
  f.append(b, rm);
  markDie(inp, d, i);
  f.onsubmit = (e) => {
    e.preventDefault();
    // the kind is sent only when the GM changed it: {"face"} alone corrects a face as it always has
    const fix = sel && sel.value !== f.dataset.kind ? { face: inp.value, kind: sel.value, dice: shownDice }
      : { face: inp.value, dice: shownDice };
    act(async () => { await api("PUT", `/api/rolls/${rollId}/dice/${i}`, fix); released.add(inp); if (sel) released.add(sel); }, "die corrected");
  };
  rm.onclick = () => {
    const die = f.dataset.die;
    if (!confirm(`Remove ${die} from roll #${rollId}? Only for a die that is not there (a pip or a mark on the tray). Undo brings it back.`)) return;
    act(async () => {
      await api("DELETE", `/api/rolls/${rollId}/dice/${i}?dice=${shownDice}`);
      $("last-dice").replaceChildren();  // the dice after it moved up a place: draw the roll's fields anew
    },
      `${die} removed from roll #${rollId} ("Undo last change" brings it back)`);
  };
  inp.addEventListener("blur", () => setTimeout(drawDice));  // a field left unchanged lets the newest roll in
  return f;
}

function markDie(inp, d, i) {
  const f = inp.closest("form"), sel = f.querySelector("select.kind");
  fill(inp, d.face);
  if (sel) fill(sel, d.kind);
  f.querySelector("button.set").textContent = sel ? `set #${i + 1}` : `set ${d.kind} #${i + 1}`;
  f.dataset.die = `die ${i + 1} (${d.kind} ${d.face || "?"})`; f.dataset.kind = d.kind;
  const warn = d.status !== "ok";
  f.classList.toggle("warn", warn);
  if (warn) inp.title = `die ${i + 1} ${d.status}: type its face, or remove it if it is no die`; else inp.removeAttribute("title");
}

// A skill check's luck die, after the roll (seed 001 "Luck Dice": one die of the result die's size,
// one per check): its face typed and added, or "read it from the tray" (the camera's next reading is
// that roll's luck die, not a new roll: POST /api/rolls/<id>/luck {}), with the wait shown and a cancel.
let luckPending = null;
function drawLuck(pending) {
  luckPending = pending;
  const roll = savedRollOf("contingency-skill"), form = $("luck"), wait = $("luck-wait");
  const kind = roll && roll.result && roll.result.result_die;
  const takes = Boolean(kind) && !roll.params.luck && !["reroll", "invalid"].includes(roll.outcome);
  form.hidden = !takes;
  if (takes) {
    // drawn for another roll: the field starts empty (fill: a face typed in it and left holds the
    // controls on this roll, as a die's does, drawDice)
    if (form.dataset.roll !== String(roll.id)) fill($("luck-face"), "");
    form.dataset.roll = roll.id;
    $("luck-label").textContent = `Luck die (${kind})`;
    $("luck-face").setAttribute("aria-label", `roll #${roll.id}'s luck die (${kind}) face`);
    $("luck-read").hidden = Boolean(pending) && pending.roll === roll.id;
  }
  wait.hidden = !pending;
  if (pending) $("luck-wait-text").textContent = `Waiting for the luck die of roll #${pending.roll}: roll one ${pending.kind} into the tray.`;
}
$("luck").onsubmit = (e) => {
  e.preventDefault();
  const id = Number($("luck").dataset.roll), face = $("luck-face").value;
  act(async () => { await api("POST", `/api/rolls/${id}/luck`, { face }); $("luck-face").value = ""; },
    `luck die ${face} added to roll #${id} (Undo last change takes it back)`);
};
$("luck-read").onclick = () => {
  const id = Number($("luck").dataset.roll);
  act(() => api("POST", `/api/rolls/${id}/luck`, {}), `waiting for roll #${id}'s luck die: roll it into the tray`);
};
$("luck-cancel").onclick = () => {
  const id = luckPending && luckPending.roll;
  act(() => api("DELETE", `/api/rolls/${id}/luck`), `no longer waiting for roll #${id}'s luck die`);
};

// A skill check failed by exactly one (seed 001 "Failing By One"): the player may mark a condition to
// barely succeed, with a complication. The kit only offers it; this button takes the offer up on the roll
// the die fields show (PUT /api/rolls/<id>/params {"params": {"mark_condition": true}}); Undo takes it back.
function drawMarkCondition() {
  const roll = savedRollOf("contingency-skill"), row = $("mark-row");
  const offered = Boolean(roll && roll.result && roll.result.fail_by_one) && !roll.result.marked_condition;
  row.hidden = !offered;
  if (!offered) return;
  row.dataset.roll = roll.id;
  $("mark-hint").textContent = `roll #${roll.id} failed by one: it succeeds, with a complication`;
}
$("mark-condition").onclick = () => takeOffer("mark-row", { mark_condition: true },
  (id) => `roll #${id}: a condition marked, it barely succeeds with a complication (Undo last change takes it back)`);

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

// Who assists a Charge roll (seed 004 "Assist": the teammate pays 1 momentum for the parameters'
// "assist": true): a menu of the players but the roller, shown while the table plays Charge and has players.
function drawAssister(players, roller, assister, system) {
  const sel = $("assister"), opts = [["", "no one picked"], ...players.filter((p) => p.id !== roller).map((p) => [String(p.id), p.name])];
  $("assister-row").hidden = system !== "charge" || !players.length;
  sel.replaceChildren(...opts.map(([value, name]) => { const o = document.createElement("option"); o.value = value; o.textContent = name; return o; }));
  sel.value = assister === null || assister === undefined ? "" : String(assister);
}
$("assister").onchange = () => {
  const v = $("assister").value, name = $("assister").selectedOptions[0].textContent;
  act(() => api("PUT", "/api/assister", { player: v === "" ? null : Number(v) }), v === "" ? "no one picked to assist" : `${name} assists`);
};

// Run a GM change, say what it did (the line fn returns, else done), and show the table again.
async function act(fn, done) {
  say("…");  // working: the same answer twice in a row still shows it came again
  try { const said = await fn(); say(typeof said === "string" ? said : done); } catch (e) { say(e.message); }
  await refresh();
}

async function enter() {
  $("login").hidden = true; $("controls").hidden = false; $("login-msg").textContent = ""; say("");
  systems = await fetch("/api/systems").then((r) => r.json()).catch(() => ({}));  // before the dice: their kind menus
  await refresh();
  if (source) source.close();
  source = new EventSource("/api/events");
  source.addEventListener("state", refresh);
}

$("login").onsubmit = async (e) => {
  e.preventDefault();
  try { csrf = (await api("POST", "/gm/login", { pin: $("pin").value })).csrf; await enter(); }
  catch (err) { $("login-msg").textContent = err.message; }
};
for (const id of ["spend", "give"]) $(id).onclick = () => act(() => api("POST", "/api/tokens/tension", { delta: Number($(id).dataset.delta) }), "tokens changed");
for (const id of ["omen-spend", "omen-give"]) $(id).onclick = () => act(() => api("POST", "/api/tokens/omens", { delta: Number($(id).dataset.delta) }), "GM omens changed");
$("choose-fail").onclick = () => act(async () => (await api("POST", "/api/choose-fail")).why.join("; "), "GM omens gained");
$("scene").onclick = () => act(() => api("POST", "/api/scene"), "new scene: GM omens reset");
$("new-session").onclick = () => {
  if (confirm("New session: every player's momentum back to 2? (Undo last change takes it back.)"))
    act(() => api("POST", "/api/session"), "new session: every player's momentum is 2");
};
$("add-player").onsubmit = (e) => {
  e.preventDefault();
  const name = $("player-name").value;
  act(async () => { await api("POST", "/api/players", { name }); $("player-name").value = ""; }, `${name} added`);
};
$("undo").onclick = () => act(() => api("POST", "/api/undo"), "undone");
$("set-system").onclick = () => act(async () => {
  await api("PUT", "/api/system", { system: $("system").value, params: JSON.parse($("params").value || "{}") });
  released.add($("system")); released.add($("params"));
}, "system set");

$("roll-params").onclick = () => {
  const id = shownRoll && shownRoll.id;
  act(async () => {
    // the keys the roll's own after-the-roll controls set (its luck die, a condition marked, a pool's last die
    // forced out: GET /api/systems "after_roll") stay as the roll has them: the field holds the next rolls' values
    const params = JSON.parse($("params").value || "{}");
    for (const key of (systems[shownRoll.system] || {}).after_roll || []) delete params[key];
    // a pool roll's "pool" and "drop" there are the next roll's too (the dice a counted pool's roll left, no die
    // dropped): the roll keeps its own, unless the GM typed another pool or drop than the page put in the field
    // (then both go as the field has them)
    if (shownRoll.system === "contingency-pool") {
      const put = $("system").value === table.system && filled.has($("params"))
        ? JSON.parse(filled.get($("params"))) : (systems[shownRoll.system] || {}).params || {};
      if (params.pool === put.pool && params.drop === put.drop) { delete params.pool; delete params.drop; }
    }
    await api("PUT", `/api/rolls/${id}/params`, { params });
  }, `roll #${id} resolved again with these parameters (Undo last change takes it back; "Use for next rolls" sets them for the next rolls too)`);
};

(async () => { const s = await (await fetch("/gm/session")).json(); if (s.gm) { csrf = s.csrf; await enter(); } })();
