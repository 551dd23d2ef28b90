// "Join from another phone" (viewer and /gm): the players' page's address and its QR code (GET /api/join,
// /join.svg), fetched when the GM or a player opens it.
"use strict";
document.getElementById("join").addEventListener("toggle", async (e) => {
  const box = e.target, img = document.getElementById("join-qr");
  if (!box.open || img.getAttribute("src")) return;
  img.src = "/join.svg";
  const r = await fetch("/api/join").then((res) => res.json()).catch(() => null);
  document.getElementById("join-url").textContent = r ? r.url : location.origin + "/";
});
