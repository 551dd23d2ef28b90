// Outcome band id -> colour class (style.css: .band-*, .odds-*), for the viewer (app.js) and the GM
// page (gm.js) alike; every band of pi_table.rules.BANDS, and a roll's "reroll" and "invalid".
"use strict";
const BANDS = {
  critical: "critical", clean: "good", full: "good", complete: "good", exceptional: "critical", success: "good",
  mixed: "mixed", partial: "mixed", grim: "bad", bad: "bad", failure: "bad",
  disastrous: "worst", botch: "worst", reroll: "none", invalid: "none",
};
