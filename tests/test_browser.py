"""The pages in headless Chromium (Debian's chromium, driven by Playwright).

Skips with a reason where /usr/bin/chromium or playwright is missing; ``.ci/run`` installs both.
"""

from __future__ import annotations

import json
import shutil
import threading

import numpy as np
import pytest

from pi_table import rules
from pi_table.capture import Frame, SettledRoll
from pi_table.outputs.web import make_server
from pi_table.service import Service, Settings
from tests.conftest import REPO, FakeReader, d6_reading

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
SHOTS = REPO / "build" / "screenshots"


@pytest.fixture
def served(tmp_path, mock_pins):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt install chromium)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the test extra)")
    service = Service(Settings(state_dir=tmp_path, pin="8642"), reader=FakeReader(d6_reading(6, 6, 2), d6_reading(3)))
    server = make_server(service, "127.0.0.1", 0)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    yield service, f"http://127.0.0.1:{server.effective_port}"
    service.stop()
    server.close()
    service.close()


@pytest.fixture
def page(served):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=2)  # a small phone
        yield page
        browser.close()


def roll_now(service: Service) -> None:
    image = np.full((480, 640, 3), 128, np.uint8)
    service.handle(SettledRoll(Frame(image=image, t=0.0, index=0, name="tray.jpg", settled=True), 1.0, 0.1))


def gm_login(page, base: str) -> None:
    """Open /gm and sign in with the served table's PIN; returns once the controls show."""
    page.goto(base + "/gm")
    page.fill("#pin", "8642")
    page.click("#login button")
    page.wait_for_selector("#controls:not([hidden])", timeout=10_000)


def wait_msg(page, text: str) -> None:
    """Wait until the GM page's message line (#msg) holds ``text``. The message is set when the
    POST's answer comes back, which may be after the live state stream already changed the page."""
    page.wait_for_function(f"document.getElementById('msg').textContent.includes({json.dumps(text)})", timeout=10_000)


def test_viewer_shows_a_roll_live_without_reloading(served, page):
    service, base = served
    page.goto(base + "/")
    page.wait_for_selector(".live.on", timeout=10_000)
    assert "Waiting for the first roll" in page.inner_text("#outcome")
    page.evaluate("window.__marker = 'same page'")
    roll_now(service)
    page.wait_for_function("document.getElementById('outcome').textContent === 'critical'", timeout=10_000)
    assert page.evaluate("window.__marker") == "same page"  # no reload happened
    assert page.locator("#dice .die").count() == 3
    assert "momentum 3" in page.inner_text("#tokens")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "viewer.png"), full_page=True)
    assert (SHOTS / "viewer.png").stat().st_size > 10_000


def test_gm_control_changes_the_leds(served, page):
    service, base = served
    page.goto(base + "/gm")
    page.fill("#pin", "0000")
    page.click("#login button")
    page.wait_for_selector("#login-msg:has-text('wrong PIN')", timeout=10_000)
    page.fill("#pin", "8642")
    page.click("#login button")
    page.wait_for_selector("#controls:not([hidden])", timeout=10_000)
    assert service.panel.lit()["tension"] == 0
    page.click("#give")
    page.click("#give")
    page.wait_for_function("document.getElementById('tension').textContent === '2'", timeout=10_000)
    assert service.panel.lit()["tension"] == 2
    assert mock_pin_lit(service, 17) and mock_pin_lit(service, 27) and not mock_pin_lit(service, 22)
    page.click("#spend")
    page.wait_for_function("document.getElementById('tension').textContent === '1'", timeout=10_000)
    assert service.panel.lit()["tension"] == 1
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "gm.png"), full_page=True)


def test_gm_types_the_face_of_an_unreadable_die(served, page):
    """The last roll's unreadable die shows on /gm as an empty, marked field with a 'set' button;
    typing its face there re-resolves the roll (RULES.md: an unreadable die is never guessed)."""
    service, base = served
    service.reader = FakeReader(d6_reading(5, status="unreadable"))
    roll_now(service)
    page.goto(base + "/gm")
    page.fill("#pin", "8642")
    page.click("#login button")
    page.wait_for_selector("#last-dice form.fix.warn", timeout=10_000)
    field = page.locator("#last-dice form.fix input")
    assert field.input_value() == "" and field.get_attribute("placeholder") == "?"
    assert page.inner_text("#last-dice form.fix button") == "set d6 #1"
    field.fill("5")
    page.click("#last-dice form.fix button")
    page.wait_for_function("!document.querySelector('#last-dice form.fix.warn')", timeout=10_000)
    assert service.state().last_roll.reading.dice[0].face == "5"


def test_gm_removes_a_false_die_and_sets_a_die_kind(served, page):
    """Each die of the last roll on /gm has a "remove" button (a pip or a mark on the tray read as
    a die): it asks first (cancelled: nothing changes), then takes the die out and the roll is
    resolved again (6,6,2 critical, +3 momentum, becomes 6,2 full, +2); Undo brings it back. A
    system that reads more than one kind shows a kind menu per die (a d10 read as a d8 is set
    right); Charge, which reads d6 only, shows none. All on a small phone's width."""
    service, base = served
    roll_now(service)  # 6,6,2: critical
    roll_id = service.state().last_roll.id
    page.goto(base + "/gm")
    page.fill("#pin", "8642")
    page.click("#login button")
    page.wait_for_selector("#last-dice form.fix >> nth=2", timeout=10_000)
    assert page.locator("#last-dice select").count() == 0
    answers = iter([False, True])
    asked = []
    page.on("dialog", lambda d: (asked.append(d.message), d.accept() if next(answers) else d.dismiss()))
    page.click("[aria-label='remove die 2']")  # cancelled
    assert "die 2 (d6 6)" in asked[0] and len(service.table.roll(roll_id).reading.dice) == 3
    page.click("[aria-label='remove die 2']")
    page.wait_for_function("document.querySelectorAll('#last-dice form.fix').length === 2", timeout=10_000)
    fixed = service.table.roll(roll_id)
    assert [d.face for d in fixed.reading.dice] == ["6", "2"] and fixed.outcome == "full"
    assert service.table.tokens.momentum == 2 and "momentum 2" in page.inner_text("#tokens")
    wait_msg(page, "removed from roll")
    assert page.locator("#last-dice form.fix input").nth(1).input_value() == "2"
    box = page.locator("#last-dice").bounding_box()
    assert box["x"] + box["width"] <= 390  # no sideways scrolling on the phone
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "gm-remove-die.png"), full_page=True)
    page.click("#undo")
    page.wait_for_function("document.querySelectorAll('#last-dice form.fix').length === 3", timeout=10_000)
    assert service.table.roll(roll_id).outcome == "critical" and service.table.tokens.momentum == 3
    service.set_system("contingency-skill")
    service.reader = FakeReader(reading_of(("d6", 1), ("d8", 3), ("d8", 2)))  # the third die is a d10 showing 9
    roll_now(service)
    skill = service.state().last_roll.id
    page.wait_for_function(f"document.getElementById('last-dice').dataset.roll === '{skill}'", timeout=10_000)
    menu = page.locator("[aria-label='die 3 kind']")
    assert menu.input_value() == "d8" and "d10" in menu.inner_text()
    menu.select_option("d10")
    page.locator("#last-dice form.fix input").nth(2).fill("9")
    page.locator("#last-dice form.fix button.set").nth(2).click()
    page.wait_for_function("document.getElementById('msg').textContent === 'die corrected'", timeout=10_000)
    die = service.table.roll(skill).reading.dice[2]
    assert (die.kind, die.face) == ("d10", "9")
    page.wait_for_function("document.querySelector(\"[aria-label='die 3 kind']\").value === 'd10'", timeout=10_000)
    assert page.locator("#last-dice").bounding_box()["width"] <= 390
    page.locator("#last-dice").screenshot(path=str(SHOTS / "gm-die-kind.png"))


def mock_pin_lit(service: Service, pin: int) -> bool:
    return bool(service.panel.factory.pin(pin).state)


def test_viewer_draws_the_odds_chart_and_the_players(served, page):
    service, base = served
    ana = service.add_player("Ana", luck=1)
    service.set_roller(ana.id)
    page.goto(base + "/")
    page.wait_for_selector(".live.on", timeout=10_000)
    page.wait_for_selector("#players .player.roller", timeout=10_000)
    assert page.locator("#odds").is_hidden()  # no roll yet, no chart
    roll_now(service)  # 6,6,2: critical, +3 momentum to Ana
    page.wait_for_selector("#odds .odds-row.hit", timeout=10_000)
    rows = page.locator("#odds .odds-row")
    assert rows.count() == 4  # charge: bad, partial, full, critical
    assert page.locator("#odds .odds-row.hit").count() == 1
    assert "critical" in page.inner_text("#odds .odds-row.hit .ob").lower()
    hit_pct = page.inner_text("#odds .odds-row.hit .op")
    assert hit_pct == "7.4%"  # 2/27 for three d6 (rules.odds("charge", dice=3))
    widths = page.eval_on_selector_all("#odds .bar i", "els => els.map(e => e.getBoundingClientRect().width)")
    assert widths[1] > widths[3] > 0  # partial 49/108 is drawn longer than critical 2/27
    chart = page.locator("#odds").bounding_box()
    assert chart["width"] <= 390  # fits the small phone's width
    page.wait_for_function("document.querySelector('#players .roller .momentum').textContent === '5'", timeout=10_000)
    assert "Ana's roll" in page.inner_text("#by")
    assert "luck 1" in page.inner_text("#players")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "viewer-odds.png"), full_page=True)


def test_gm_adds_a_player_and_picks_the_roller(served, page):
    service, base = served
    gm_login(page, base)
    page.fill("#player-name", "Bo")
    page.click("#add-player button")
    page.wait_for_selector(".player-gm", timeout=10_000)
    assert [p.name for p in service.table.players()] == ["Bo"]
    page.check(".player-gm input[type=radio]")
    page.wait_for_function("document.getElementById('msg').textContent.includes('rolls next')", timeout=10_000)
    assert service.table.roller == service.table.players()[0].id
    page.click(".player-gm .stepper.luck .plus")
    page.wait_for_function("document.querySelector('.player-gm .stepper.luck .val').textContent === '1'", timeout=10_000)
    assert service.table.players()[0].luck == 1
    service.update_player(service.table.players()[0].id, momentum=5)
    page.wait_for_function("document.querySelector('.player-gm .stepper.momentum .val').textContent === '5'", timeout=10_000)
    page.on("dialog", lambda d: d.accept())  # "New session: every player's momentum back to 2?"
    page.click("#new-session")  # seed 004: you start every session with 2
    page.wait_for_function("document.querySelector('.player-gm .stepper.momentum .val').textContent === '2'", timeout=10_000)
    assert (service.table.players()[0].momentum, service.table.players()[0].luck) == (2, 1)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "gm-players.png"), full_page=True)


def test_each_dies_label_shows_under_its_face_on_a_small_phone(served, page):
    """A roll of eight d10 (The Contract), one unreadable, wraps onto a second row on a small phone:
    each die's kind or status label lies under its own face, inside the page, clear of every face
    (it once hung below the face, under the next row's dice, and inside the d10's clipped shape,
    where it was cut off)."""
    from pi_table.vision.dice import Die, Reading

    service, base = served
    dice = tuple(Die("d10", str(v), v, (10.0 + 50 * i, 10.0, 50.0 + 50 * i, 50.0), 0.99, "ok")
                 for i, v in enumerate((7, 3, 9, 0, 5, 2, 8)))
    dice += (Die("d10", "", 0, (400.0, 10.0, 440.0, 50.0), 0.4, "unreadable"),)
    service.reader = FakeReader(Reading(image="tray.jpg", width=640, height=640, ms=1.0, dice=dice))
    service.set_system("contract")
    page.goto(base + "/")
    page.wait_for_selector(".live.on", timeout=10_000)
    roll_now(service)
    page.wait_for_function("document.querySelectorAll('#dice .die').length === 8", timeout=10_000)
    boxes = page.eval_on_selector_all("#dice .die", """dies => dies.map(d => {
        const r = (e) => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
        const face = d.querySelector('.face'), kind = d.querySelector('.kind');
        return {face: r(face), kind: r(kind), text: kind.textContent,
                inFace: face.contains(kind), clip: getComputedStyle(face).clipPath};
    })""")
    assert len({round(b["face"][1]) for b in boxes}) >= 2  # the dice wrap onto a second row
    assert [b["text"] for b in boxes] == ["d10"] * 7 + ["d10 unreadable"]  # its kind stays beside its status
    for i, b in enumerate(boxes):
        assert not b["inFace"] and b["clip"].startswith("polygon")  # the shape is clipped, the label is not
        kl, kt, kr, kb = b["kind"]
        assert kt >= b["face"][3] - 0.5 and kb - kt > 5  # under its face, and drawn
        assert kl >= 0 and kr <= 390
        for j, other in enumerate(boxes):
            fl, ft, fr, fb = other["face"]
            assert j == i or not (kl < fr and kr > fl and kt < fb and kb > ft), (i, j)
    # the dice lie at the photo's top edge (boxes from y = 10 of 640): their labels hang under the boxes, in the photo
    photo = page.locator("#photo-img").bounding_box()
    tags = page.eval_on_selector_all("#boxes .box span", "ss => ss.map(s => s.getBoundingClientRect().top)")
    assert len(tags) == 8 and all(t >= photo["y"] for t in tags)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "viewer-d10.png"), full_page=True)


def test_gm_keeps_what_it_is_typing_across_live_updates(served, page):
    """A state event (a token change, a new roll) refreshes /gm, but leaves alone the fields the GM
    is editing: the system menu and parameters chosen but not yet used, a die's face typed but not
    yet set (it once put them all back to the server's values on every roll). A newer roll does not
    replace the die fields being edited: they still correct the roll they show, and so does "Apply to
    roll #N". After each submit
    the fields show the server's state again."""
    service, base = served
    service.set_system("contract")
    roll_now(service)  # 6,6,2 read for The Contract's table
    first = service.state().last_roll.id
    page.goto(base + "/gm")
    page.fill("#pin", "8642")
    page.click("#login button")
    page.wait_for_selector("#last-dice form.fix input", timeout=10_000)
    assert page.input_value("#system") == "contract"
    page.select_option("#system", "charge")
    page.fill("#params", '{"risk":"high"}')
    page.locator("#last-dice form.fix input").first.fill("4")  # typed, not set; the field keeps focus
    service.add_tension(1)  # a state event: the page's other live updates still come in
    page.wait_for_function("document.getElementById('tension').textContent === '1'", timeout=10_000)
    assert page.input_value("#system") == "charge"
    assert page.input_value("#params") == '{"risk":"high"}'
    assert page.locator("#last-dice form.fix input").first.input_value() == "4"
    roll_now(service)  # a newer roll (one die) comes in while the GM is typing
    second = service.state().last_roll.id
    page.wait_for_selector("#dice-note:not([hidden])", timeout=10_000)
    assert f"roll #{first}" in page.inner_text("#dice-note")
    assert page.locator("#last-dice form.fix input").count() == 3
    assert page.locator("#last-dice form.fix input").first.input_value() == "4"
    # "Apply to roll #N" acts on the roll the fields hold, not the newer one (it once named the newest)
    assert page.inner_text("#roll-params") == f"Apply to roll #{first}"
    assert f"Roll #{first} " in page.inner_text("#roll-params-note")
    assert page.input_value("#system") == "charge" and page.input_value("#params") == '{"risk":"high"}'
    page.click("#set-system")
    page.wait_for_function("document.getElementById('msg').textContent === 'system set'", timeout=10_000)
    assert service.state().system == "charge" and service.state().params["risk"] == "high"
    page.wait_for_function("document.getElementById('params').value !== '{\"risk\":\"high\"}'", timeout=10_000)
    assert '"risk":"high"' in page.input_value("#params")  # the server's parameters, defaults filled in
    page.locator("#last-dice form.fix button").first.click()  # sets the face typed: on the roll it showed
    page.wait_for_function(f"document.getElementById('last-dice').dataset.roll === '{second}'", timeout=10_000)
    assert service.table.roll(first).reading.dice[0].face == "4"
    assert page.locator("#last-dice form.fix input").count() == 1 and page.is_hidden("#dice-note")
    assert page.locator("#last-dice form.fix input").input_value() == "3"  # the newest roll, as read
    assert page.inner_text("#roll-params") == f"Apply to roll #{second}"


def test_gm_page_asks_for_the_pin_again_when_its_session_is_gone(served, page):
    """The GM session lives as long as the server's run: after a restart every change answers
    401. The open /gm page then shows its PIN form again, saying why (it once kept showing the
    controls, each answering "GM PIN required"); after the PIN the GM goes on without a reload,
    with what they had typed still there. (The browser's cookies are cleared here: to the server
    that is the same as a session from an earlier run.)"""
    service, base = served
    gm_login(page, base)
    page.click("#give")
    page.wait_for_function("document.getElementById('tension').textContent === '1'", timeout=10_000)
    page.evaluate("window.__marker = 'same page'")
    page.context.clear_cookies()  # the session is gone
    page.fill("#params", '{"risk":"high"}')
    page.click("#give")
    page.wait_for_selector("#login:not([hidden])", timeout=10_000)
    assert page.is_hidden("#controls")
    assert "signed out" in page.inner_text("#login-msg") and "PIN" in page.inner_text("#login-msg")
    assert service.state().tokens.tension == 1  # nothing changed
    page.fill("#pin", "8642")
    page.click("#login button")
    page.wait_for_selector("#controls:not([hidden])", timeout=10_000)
    assert page.inner_text("#login-msg") == "" and page.input_value("#params") == '{"risk":"high"}'
    page.click("#give")
    page.wait_for_function("document.getElementById('tension').textContent === '2'", timeout=10_000)
    assert service.state().tokens.tension == 2
    assert page.evaluate("window.__marker") == "same page"  # no reload happened


def test_pages_load_with_their_icon_and_a_clean_console(served, page):
    """Both pages link their icon (a die), which loads; /favicon.ico answers too. Loading a page
    logs no console error and gets no 4xx/5xx answer (a 404 for /favicon.ico once logged an error
    on every page load)."""
    _service, base = served
    favicon = page.request.get(base + "/favicon.ico")
    assert favicon.status == 200 and favicon.headers["content-type"].startswith("image/svg+xml")
    assert b"<svg" in favicon.body()
    errors, answers = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("response", lambda r: answers.append((r.status, r.url)))
    for path, ready in (("/", ".live.on"), ("/gm", "#login:not([hidden])")):
        answers.clear()
        page.goto(base + path)
        page.wait_for_selector(ready, timeout=10_000)
        assert page.evaluate("document.querySelector('link[rel=icon]')?.getAttribute('href')") == "/static/icon.svg", path
        for _ in range(100):  # the browser asks for the icon after the page loads
            if any(url == base + "/static/icon.svg" for _, url in answers):
                break
            page.wait_for_timeout(100)
        assert (200, base + "/static/icon.svg") in answers, path
        assert [a for a in answers if a[0] >= 400] == [], path
    assert errors == []


def cut_streams(service: Service, page) -> None:
    """The server out of the page's reach: its open stream ends and its retries fail (the rolls
    made meanwhile are never sent to it). ``page.unroute("**/api/events")`` lets it back."""
    from pi_table.outputs.events import EventHub

    page.route("**/api/events", lambda route: route.abort())
    old, service.hub = service.hub, EventHub(max_streams=service.hub.max_streams)
    old.close()


def test_viewer_catches_up_with_the_rolls_it_missed_while_cut_off(served, page):
    """While the phone's live stream is down the page says so in words ("reconnecting…", not
    the dot's colour alone) and marks the roll it shows as maybe not the latest; when the stream
    is back, the rolls made meanwhile are all in its History (the state event brings only the
    newest: the page fetches /api/rolls again; it once lost the others)."""
    service, base = served
    roll_now(service)
    page.goto(base + "/")
    page.wait_for_selector(".live.on", timeout=10_000)
    assert page.inner_text("#live").strip() == "● live"
    assert page.is_hidden("#stale")
    cut_streams(service, page)
    page.wait_for_selector(".live.off", timeout=10_000)
    assert "reconnecting" in page.inner_text("#live")
    assert page.is_visible("#stale") and "may not be the latest" in page.inner_text("#stale")
    assert page.text_content("#outcome") == "critical"  # the roll it had stays
    roll_now(service)
    missed = service.state().last_roll.id
    roll_now(service)
    newest = service.state().last_roll.id
    page.unroute("**/api/events")
    page.wait_for_selector(".live.on", timeout=15_000)
    assert page.is_hidden("#stale") and page.inner_text("#live").strip() == "● live"
    page.wait_for_function(f"history.length && history[0].id === {newest}", timeout=10_000)
    page.wait_for_function("document.querySelectorAll('#history li').length === 2", timeout=10_000)
    assert page.evaluate("history.map(r => r.id)") == [newest, missed, missed - 1]


def test_viewer_replaces_a_roll_it_has_when_the_server_sends_it_again(served, page):
    """A ``roll`` event for a roll the page already has (a GM correction, or the undo of one:
    the server sends the changed roll) replaces that roll's History row, or the card when it is
    the roll shown, whichever roll it is; nothing is added."""
    from pi_table.outputs.events import Event

    service, base = served
    ids = []
    for _ in range(3):  # 6,6,2 critical; then 3, 3: bad
        roll_now(service)
        ids.append(service.state().last_roll.id)
    older, _, newest = ids
    page.goto(base + "/")
    page.wait_for_selector(".live.on", timeout=10_000)
    row = "#history li:nth-child(2)"  # the oldest roll's row
    page.wait_for_selector(row, timeout=10_000)
    assert page.text_content(row + " .o") == "critical" and page.text_content(row + " .f") == "6 6 2"
    service.correct_die(older, 0, "1")  # 1,6,2: one six, full
    page.wait_for_function(f"document.querySelector('{row} .f').textContent === '1 6 2'", timeout=10_000)
    assert page.text_content(row + " .o") == "full"
    service.undo()
    service.hub.publish(Event("roll", service.table.roll(older).to_json()))  # as the server sends it
    page.wait_for_function(f"document.querySelector('{row} .f').textContent === '6 6 2'", timeout=10_000)
    assert page.text_content(row + " .o") == "critical"
    service.correct_die(newest, 0, "6")  # the card's roll: full
    page.wait_for_function("document.getElementById('outcome').textContent === 'full'", timeout=10_000)
    service.undo()
    service.hub.publish(Event("roll", service.table.roll(newest).to_json()))
    page.wait_for_function("document.getElementById('outcome').textContent === 'bad'", timeout=10_000)
    assert page.get_attribute("#dice .die", "title").startswith("d6: 3 ")
    assert page.evaluate("history.map(r => r.id)") == [newest, newest - 1, older]
    assert page.locator("#history li").count() == 2


def reading_of(*dice: tuple[str, int]):
    """A Reading of the given (kind, value) dice, boxes in a row."""
    from pi_table.vision.dice import Die, Reading

    return Reading(image="tray.jpg", width=640, height=640, ms=1.0, dice=tuple(
        Die(kind, str(v), v, (10.0 + 60 * i, 200.0, 50.0 + 60 * i, 240.0), 0.99, "ok") for i, (kind, v) in enumerate(dice)))


def test_viewer_card_names_its_system_and_what_matters_first(served, page):
    """The card names the system (and kind of roll) it was resolved under, so a card from before
    a system switch is not read under the new header; beside the band it says what matters
    first: a contingency pool's dice removed ("pool empty", "no die removed", "N removed"), a
    charge determination roll's effect, a critical's levels."""
    service, base = served
    page.goto(base + "/")
    page.wait_for_selector(".live.on", timeout=10_000)
    assert page.is_hidden("#sys") and page.is_hidden("#detail")
    roll_now(service)  # charge, 6,6,2: critical (no levels in charge)
    page.wait_for_function("document.getElementById('outcome').textContent === 'critical'", timeout=10_000)
    assert page.inner_text("#sys") == "Charge · action roll" and page.is_hidden("#detail")

    def roll(system, params, *dice):
        service.set_system(system, params)
        service.reader = FakeReader(reading_of(*dice))
        roll_now(service)
        rid = service.state().last_roll.id
        page.wait_for_function(f"history.length && history[0].id === {rid}", timeout=10_000)
        return page.text_content("#outcome"), page.inner_text("#detail") if page.is_visible("#detail") else ""

    d8 = lambda *vs: [("d8", v) for v in vs]  # noqa: E731
    assert roll("contingency-pool", {}, *d8(6, 2, 8, 1)) == ("grim", "2 removed, 2 left")
    assert page.inner_text("#sys") == "Contingency Pool · pool of 4"
    assert roll("contingency-pool", {}, *d8(1, 1)) == ("disastrous", "no die removed")
    assert roll("contingency-pool", {}, *d8(8, 8)) == ("critical", "pool empty · 1 level")
    assert roll("charge", {"roll": "determination"}, ("d6", 5), ("d6", 3)) == ("partial", "consequence reduced")
    assert page.inner_text("#sys") == "Charge · determination roll"
    assert roll("charge", {"roll": "determination"}, ("d6", 4), ("d6", 6)) == ("full", "consequence avoided")
    assert roll("contingency-action", {"stat": 3, "pressure": 1}, *d8(8, 8, 8), ("d6", 2)) == ("critical", "2 levels")
    assert page.inner_text("#sys") == "Contingency Action"
    assert roll("contract", {"difficulty": 6}, ("d10", 7), ("d10", 3)) == ("partial", "")
    assert page.inner_text("#sys") == "Contract · difficulty 6"
    service.set_system("charge")  # a switch after the roll: the card still names its own system
    page.wait_for_function("document.getElementById('system').textContent === 'charge'", timeout=10_000)
    assert page.inner_text("#sys") == "Contract · difficulty 6"


def test_viewer_speaks_to_screen_readers(served, page):
    """Each die is one image with a name, pips too ("d6 showing 6"); the live region is a small
    status line, spoken once per roll ("Roll 1: Critical"), not the whole card (which the state
    events redraw); the odds chart of a roll that has none is hidden (.odds{display:grid} once
    showed it, its old label still read out); the connection is said in words."""
    service, base = served
    page.goto(base + "/")
    page.wait_for_selector(".live.on", timeout=10_000)
    assert page.get_attribute("#roll", "aria-live") is None
    status = page.locator("[role=status]")
    assert status.count() == 1 and status.get_attribute("aria-atomic") == "true"
    assert page.get_by_role("status").inner_text() == "" and page.inner_text("#live").strip() == "● live"
    page.evaluate("""() => { window.__said = [];
        const s = document.querySelector('[role=status]');
        new MutationObserver(() => window.__said.push(s.textContent)).observe(s, {childList: true, characterData: true, subtree: true}); }""")
    roll_now(service)  # 6,6,2: critical; a roll event and a state event
    page.wait_for_selector("#odds .odds-row.hit", timeout=10_000)
    service.add_tension(1)  # another state event
    page.wait_for_function("document.querySelector('#tokens b').textContent === '1'", timeout=10_000)
    page.wait_for_timeout(300)
    assert page.evaluate("window.__said") == ["Roll 1: Critical"]
    assert page.get_by_role("img", name="d6 showing 6").count() == 2
    assert page.get_by_role("img", name="d6 showing 2").count() == 1
    service.reader = FakeReader(d6_reading(4, 5, status="unreadable"))
    roll_now(service)  # a reroll: no odds
    page.wait_for_function("document.getElementById('outcome').textContent === 'reroll'", timeout=10_000)
    odds = page.eval_on_selector("#odds", "e => [e.hidden, getComputedStyle(e).display, e.getAttribute('aria-label')]")
    assert odds == [True, "none", None]
    assert "chance of each outcome" not in page.locator("#roll").aria_snapshot()
    assert page.get_by_role("img", name="d6 unreadable").count() == 2
    assert page.evaluate("window.__said") == ["Roll 1: Critical", "Roll 2: Reroll"]


def contrast(fg: str, bg: str) -> float:
    """WCAG contrast ratio of two computed colours ("rgb(r, g, b)")."""
    def lum(css: str) -> float:
        r, g, b = (int(float(v)) / 255 for v in css[css.index("(") + 1:css.index(")")].split(",")[:3])
        r, g, b = ((c / 12.92) if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b
    hi, lo = sorted((lum(fg), lum(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


BAND_CLASSES = ("critical", "good", "mixed", "bad", "worst", "none")


def test_viewer_band_colours_are_readable(served, page):
    """Every band's colour, as the card's headline, reaches 4.5:1 on the card (the worst band's
    #c0263a was 2.45:1); so do an unreadable die's label and its photo tag."""
    service, base = served
    service.reader = FakeReader(d6_reading(4, status="unreadable"))
    roll_now(service)
    page.goto(base + "/")
    page.wait_for_selector(".live.on", timeout=10_000)
    page.wait_for_selector("#boxes .box.warn span", timeout=10_000)
    for band in BAND_CLASSES:
        fg, bg = page.evaluate(f"""() => {{ const card = document.getElementById('roll');
            card.className = 'roll band-{band}';
            return [getComputedStyle(document.getElementById('outcome')).color, getComputedStyle(card).backgroundColor]; }}""")
        assert contrast(fg, bg) >= 4.5, (band, fg, bg)
    card = page.evaluate("getComputedStyle(document.getElementById('roll')).backgroundColor")
    warn = page.evaluate("getComputedStyle(document.querySelector('#dice .die.warn .kind')).color")
    assert contrast(warn, card) >= 4.5
    tag = page.eval_on_selector("#boxes .box.warn span", "s => [getComputedStyle(s).color, getComputedStyle(s).backgroundColor]")
    assert contrast(*tag) >= 4.5


TAGS_CLEAR = """() => {
    const img = document.getElementById('photo-img');
    if (!img.complete || !img.naturalWidth) return false;
    const photo = img.getBoundingClientRect();
    const boxes = [...document.querySelectorAll('#boxes .box')], rects = boxes.map(b => b.getBoundingClientRect());
    return boxes.length > 0 && boxes.every((b, i) => {
        const t = b.querySelector('span').getBoundingClientRect();
        return t.top >= photo.top - 0.5 && t.bottom <= photo.bottom + 0.5 && rects.every((r, j) =>
            j === i || !(t.left < r.right && t.right > r.left && t.top < r.bottom && t.bottom > r.top));
    });
}"""


def test_viewer_photo_tags_cover_no_other_die(served, page):
    """A die's tag on the photo goes above its box, or below it where the space above is another
    die's box (it once covered the box above), or the photo's top edge; all stay in the photo."""
    from pi_table.vision.dice import Die, Reading

    service, base = served
    boxes = ((100.0, 100.0, 140.0, 140.0), (100.0, 150.0, 140.0, 190.0),  # one close above the other
             (300.0, 4.0, 340.0, 44.0), (500.0, 300.0, 540.0, 340.0))  # at the top edge; on its own
    service.reader = FakeReader(Reading(image="tray.jpg", width=640, height=480, ms=1.0, dice=tuple(
        Die("d6", str(v), v, box, 0.99, "ok") for v, box in zip((1, 2, 3, 4), boxes))))
    page.goto(base + "/")
    page.wait_for_selector(".live.on", timeout=10_000)
    roll_now(service)
    page.wait_for_function(TAGS_CLEAR, timeout=10_000)
    tops = page.eval_on_selector_all("#boxes .box", """bs => bs.map(b =>
        b.querySelector('span').getBoundingClientRect().bottom <= b.getBoundingClientRect().top + 0.5)""")
    assert tops == [True, False, False, True]  # above where there is room: below the die under another, and at the edge
    page.set_viewport_size({"width": 320, "height": 568})  # placed again at a new size
    page.wait_for_function(TAGS_CLEAR, timeout=10_000)


def test_viewer_history_rows_show_band_system_and_no_empty_bars(served, page):
    """History rows are in their band's colour (``.history li`` once outranked ``.band-*``),
    readable on the page, and name their system; a band that cannot come up (0%) draws no bar."""
    service, base = served
    roll_now(service)  # 6,6,2: critical
    roll_now(service)  # 3: bad
    service.set_system("charge", {"dots": 0})  # zero dice: two dice, the lower; no critical
    service.reader = FakeReader(d6_reading(5, 3))
    roll_now(service)
    page.goto(base + "/")
    page.wait_for_selector(".live.on", timeout=10_000)
    page.wait_for_selector("#odds .odds-row.hit", timeout=10_000)
    zero = page.locator("#odds .odds-row", has_text="critical")
    assert zero.locator(".op").inner_text() == "0%" and zero.locator(".bar").is_hidden()
    assert page.locator("#odds .odds-row", has_text="full").locator(".bar").is_visible()
    rows = page.locator("#history li")
    assert rows.count() == 2
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    colours = []
    for i, band in ((0, "bad"), (1, "critical")):
        row = rows.nth(i)
        assert row.locator(".o").inner_text().lower() == band
        assert row.locator(".s").inner_text() == "Charge · action roll"
        colour, edge = row.evaluate("li => [getComputedStyle(li.querySelector('.o')).color, getComputedStyle(li).borderLeftColor]")
        assert colour == edge and contrast(colour, bg) >= 4.5
        colours.append(colour)
    assert colours[0] != colours[1]
    card = page.evaluate("getComputedStyle(document.getElementById('outcome')).color")
    assert colours[0] == card  # the bad row in the colour of the bad card


def test_viewer_header_shows_the_counters_its_system_plays_with(served, page):
    """Charge: momentum; a Contingency action roll: tension tokens; the skill check: GM omens;
    The Contract: none (every system showed all three, and a 320-px header wrapped to five lines);
    a counter the GM set above 0 shows anyway."""
    service, base = served
    page.goto(base + "/")
    page.wait_for_selector(".live.on", timeout=10_000)

    def shown(system: str) -> str:
        service.set_system(system, {})
        page.wait_for_function(f"document.getElementById('system').textContent.toLowerCase().startsWith({system[:5]!r})",
                               timeout=10_000)
        page.wait_for_timeout(100)
        return page.inner_text("#tokens")

    assert shown("charge") == "momentum 0"
    assert shown("contingency-action") == "tension 0"
    assert shown("contingency-skill") == "GM omens 0"
    assert shown("contract") == ""
    service.add_tension(2)
    page.wait_for_function("document.getElementById('tokens').textContent.includes('tension 2')", timeout=10_000)
    assert page.inner_text("#tokens") == "tension 2"


def test_gm_sets_the_next_rolls_parameters_with_the_form(served, page):
    """The GM sets the next rolls' parameters with a form drawn from GET /api/systems "fields" (a menu
    for a choice, a box for a yes/no, a number for a count, empty for "as many as read"), not by
    typing JSON on a phone: the form writes the JSON field, "Use for next rolls" sends it, and the
    form shows what the table then has. Picking another system draws that system's form; typing in
    the JSON field moves the form too."""
    service, base = served
    gm_login(page, base)
    page.wait_for_selector("#param-form [data-param=risk]", timeout=10_000)
    assert page.locator("#param-form [data-param]").count() == len(rules.next_roll_params("charge"))
    page.select_option("#param-form [data-param=risk]", "high")
    page.check("#param-form [data-param=assist]")
    page.fill("#param-form [data-param=dots]", "3")
    assert json.loads(page.input_value("#params")) == {**rules.DEFAULT_PARAMS["charge"], "risk": "high",
                                                       "assist": True, "dots": 3}
    page.click("#set-system")
    page.wait_for_function("document.getElementById('msg').textContent === 'system set'", timeout=10_000)
    assert service.state().params == {**rules.DEFAULT_PARAMS["charge"], "risk": "high", "assist": True, "dots": 3}
    page.fill("#param-form [data-param=dots]", "")  # empty: as many dice as read
    assert page.get_attribute("#param-form [data-param=dots]", "placeholder") == "as many dice as read"
    page.click("#set-system")
    page.wait_for_function("document.getElementById('msg').textContent === 'system set'", timeout=10_000)
    page.wait_for_function("!document.getElementById('params').value.includes('\"dots\":3')", timeout=10_000)
    assert service.state().params["dots"] is None
    assert page.input_value("#param-form [data-param=risk]") == "high"  # the table's, drawn back
    assert page.is_checked("#param-form [data-param=assist]")
    page.select_option("#system", "contingency-skill")
    page.wait_for_selector("#param-form [data-param=target]", timeout=10_000)
    assert page.locator("#param-form [data-param=mark_condition]").count() == 0  # an offer: its own button
    page.fill("#params", page.input_value("#params").replace('"target":4', '"target":7'))
    assert page.input_value("#param-form [data-param=target]") == "7"
    page.fill("#param-form [data-param=modifiers]", '{"d6": 1}')
    page.click("#set-system")
    page.wait_for_function("document.getElementById('msg').textContent === 'system set'", timeout=10_000)
    assert service.state().system == "contingency-skill"
    assert (service.state().params["target"], service.state().params["modifiers"]) == (7, {"d6": 1})


def test_a_phone_joins_from_the_qr_code_another_phone_shows(served, page):
    """"Join from another phone" on the viewer and "Players join" on /gm show the players' page's address
    and its QR code (GET /api/join, /join.svg): the code, photographed off the screen, reads as that
    address (OpenCV's QR decoder), which ends in the server's port."""
    import cv2

    service, base = served
    port = base.rsplit(":", 1)[1]
    for path, login in (("/", False), ("/gm", True)):
        if login:
            gm_login(page, base)
        else:
            page.goto(base + path)
        page.click("#join summary")
        page.wait_for_function("document.getElementById('join-url').textContent.length > 0", timeout=10_000)
        page.wait_for_function("document.getElementById('join-qr').naturalWidth > 0", timeout=10_000)
        page.evaluate("document.getElementById('join-qr').decode()")  # painted, not only fetched
        url = page.inner_text("#join-url")
        assert url.startswith("http://") and url.endswith(f":{port}/"), url
        for _ in range(3):  # a slow machine's page may still move (the live state arriving) while shot
            png = page.locator("#join-qr").screenshot()
            text, _, _ = cv2.QRCodeDetector().detectAndDecode(cv2.imdecode(np.frombuffer(png, np.uint8),
                                                                           cv2.IMREAD_COLOR))
            if text == url:
                break
            page.wait_for_timeout(300)
        else:
            SHOTS.mkdir(parents=True, exist_ok=True)
            (SHOTS / f"join-qr{path.replace('/', '-')}.png").write_bytes(png)
        assert text == url, f"{path}: QR code read as {text!r} (shot in {SHOTS})"
        assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_gm_picking_another_system_shows_its_parameters(served, page):
    """Picking another system on /gm fills the parameters field with that system's own keys
    (its defaults), so "Use for next rolls" works at once: the field kept the old system's
    parameters, and a Contract table switched to Charge was refused ("unknown option 'difficulty'
    for charge"). Picking the table's own system again shows the table's parameters."""
    service, base = served
    service.set_system("contract", {"difficulty": 7})
    gm_login(page, base)
    page.wait_for_function("document.getElementById('params').value.includes('difficulty')", timeout=10_000)
    page.select_option("#system", "charge")
    assert json.loads(page.input_value("#params")) == rules.DEFAULT_PARAMS["charge"]
    page.select_option("#system", "contract")
    assert json.loads(page.input_value("#params")) == {"difficulty": 7, "dice": None}
    page.select_option("#system", "contingency-skill")
    page.click("#set-system")
    page.wait_for_function("document.getElementById('msg').textContent === 'system set'", timeout=10_000)
    assert service.state().system == "contingency-skill"
    assert service.state().params == rules.DEFAULT_PARAMS["contingency-skill"]


def test_gm_spends_and_gives_omens_and_records_a_choice_to_fail(served, page):
    """/gm shows the GM's omens with Spend/Give buttons (seed 001: his for the scene), and on a skill
    check table a "Player chooses to fail" button that gives the seed's 1/2/3 omens by the table's
    advantage (the page had no omen control at all)."""
    service, base = served
    service.set_system("contingency-skill", {"advantage": 1})
    gm_login(page, base)
    page.click("#choose-fail")
    page.wait_for_function("document.getElementById('omens').textContent === '3'", timeout=10_000)
    wait_msg(page, "GM gains 3 omens")
    assert service.state().tokens.gm_omens == 3
    page.click("#omen-spend")
    page.wait_for_function("document.getElementById('omens').textContent === '2'", timeout=10_000)
    page.click("#omen-give")
    page.wait_for_function("document.getElementById('omens').textContent === '3'", timeout=10_000)
    assert service.state().tokens.gm_omens == 3
    service.set_system("charge", {})  # no choosing to fail outside the skill check
    page.wait_for_selector("#fail-row", state="hidden", timeout=10_000)


def test_viewer_header_shows_no_momentum_off_a_charge_table(served, page):
    """A roller picked on a table of another system (every new player starts with 2 momentum,
    seed 004) put "momentum 2" in the header of The Contract, the skill check and the Contingency
    action roll, where no rule uses momentum (the header's momentum is the roller's). Momentum is
    Charge's; tension tokens and GM omens above 0 still show on every table."""
    service, base = served
    ana = service.add_player("Ana")
    service.set_roller(ana.id)
    page.goto(base + "/")
    page.wait_for_selector(".live.on", timeout=10_000)
    for system, header in (("contract", ""), ("contingency-skill", "GM omens 0"), ("contingency-action", "tension 0"),
                           ("charge", "momentum 2")):
        service.set_system(system, {})
        page.wait_for_function(f"document.getElementById('system').textContent.toLowerCase().startsWith({system[:5]!r})",
                               timeout=10_000)
        page.wait_for_timeout(100)
        assert page.inner_text("#tokens") == header, system
    service.add_tension(1)
    service.set_system("contract", {})
    page.wait_for_function("document.getElementById('system').textContent.toLowerCase() === 'contract'", timeout=10_000)
    page.wait_for_timeout(100)
    assert page.inner_text("#tokens") == "tension 1"


def test_gm_applies_the_parameters_to_the_last_roll_after_it(served, page):
    """The GM forgot to set The Contract's difficulty 8 before the roll: /gm shows what the last roll
    was resolved with; "Apply to roll #N" (enabled only while its system is picked) resolves it
    again under the parameters field (7, 6, 6, 10: 5 successes at 6, 2 at 8), the table's own
    parameters for the next rolls stay; Undo puts the old ones back. On a small phone's width."""
    service, base = served
    service.set_system("contract")
    service.reader = FakeReader(reading_of(("d10", 7), ("d10", 6), ("d10", 6), ("d10", 10)))
    roll_now(service)
    roll = service.state().last_roll
    assert (roll.outcome, roll.result["successes"]) == ("complete", 5)
    page.goto(base + "/gm")
    page.fill("#pin", "8642")
    page.click("#login button")
    page.wait_for_selector("#roll-params:not([disabled])", timeout=10_000)
    assert page.inner_text("#roll-params") == f"Apply to roll #{roll.id}"
    assert '"difficulty":6' in page.inner_text("#roll-params-note")
    page.select_option("#system", "charge")  # another system: the roll keeps its own
    assert page.locator("#roll-params").is_disabled() and "pick contract" in page.inner_text("#roll-params-note")
    page.select_option("#system", "contract")
    page.fill("#params", '{"difficulty": 8}')
    page.click("#roll-params")
    page.wait_for_function("document.getElementById('roll-params-note').textContent.includes('\"difficulty\":8')",
                           timeout=10_000)
    fixed = service.table.roll(roll.id)
    assert (fixed.outcome, fixed.result["successes"], fixed.params["difficulty"]) == ("partial", 2, 8)
    wait_msg(page, f"roll #{roll.id} resolved again")
    assert service.state().params["difficulty"] == 6
    box = page.locator("#roll-params").bounding_box()
    assert box["x"] + box["width"] <= 390  # no sideways scrolling on the phone
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "gm-roll-params.png"), full_page=True)
    page.click("#undo")
    page.wait_for_function("document.getElementById('roll-params-note').textContent.includes('\"difficulty\":6')",
                           timeout=10_000)
    assert service.table.roll(roll.id).outcome == "complete"


def test_gm_corrects_an_earlier_roll_picked_from_the_recent_rolls(served, page):
    """/gm lists the recent rolls (number, outcome band, dice); tapping one makes it the roll the
    correction controls act on ("correcting roll #N"), and a newer roll coming in does not take them
    away from it. A face set there changes that roll only (it once could correct the last roll
    only); "Back to the newest roll" returns to the newest. On a small phone's width."""
    service, base = served
    service.reader = FakeReader(d6_reading(6, 6, 2), d6_reading(3), d6_reading(5, 4), d6_reading(1),
                                d6_reading(2, 2))
    ids = []
    for _ in range(3):
        roll_now(service)
        ids.append(service.state().last_roll.id)
    first, second, third = ids
    before = {i: service.table.roll(i).to_json() for i in ids}
    gm_login(page, base)
    page.wait_for_selector(f"#recent button[data-roll='{first}']", timeout=10_000)
    assert page.locator("#recent button").count() == 3
    assert page.locator("#recent button").first.get_attribute("data-roll") == str(third)  # newest first
    row = page.inner_text(f"#recent button[data-roll='{first}']")
    assert f"#{first}" in row and "critical" in row.lower() and "6 6 2" in row
    assert f"roll #{third}" in page.inner_text("#correcting") and page.is_hidden("#to-newest")
    page.click(f"#recent button[data-roll='{first}']")
    page.wait_for_function(f"document.getElementById('last-dice').dataset.roll === '{first}'", timeout=10_000)
    assert f"Correcting roll #{first}" in page.inner_text("#correcting")
    assert page.get_attribute(f"#recent button[data-roll='{first}']", "aria-pressed") == "true"
    assert page.inner_text("#roll-params") == f"Apply to roll #{first}"
    roll_now(service)  # a newer roll comes in while the GM is on roll 1, before typing anything
    fourth = service.state().last_roll.id
    page.wait_for_selector(f"#recent button[data-roll='{fourth}']", timeout=10_000)
    assert page.get_attribute("#last-dice", "data-roll") == str(first)
    assert page.locator("#last-dice form.fix input").count() == 3
    page.locator("#last-dice form.fix input").first.fill("1")  # typed, not set yet
    roll_now(service)  # another roll comes in while the GM types
    fifth = service.state().last_roll.id
    page.wait_for_selector(f"#recent button[data-roll='{fifth}']", timeout=10_000)
    assert page.get_attribute("#last-dice", "data-roll") == str(first)
    assert page.locator("#last-dice form.fix input").first.input_value() == "1"
    page.locator("#last-dice form.fix button.set").first.click()
    page.wait_for_function("document.getElementById('msg').textContent === 'die corrected'", timeout=10_000)
    assert [d.face for d in service.table.roll(first).reading.dice] == ["1", "6", "2"]
    assert service.table.roll(first).outcome != "critical"
    for i in (second, third):
        assert service.table.roll(i).to_json() == before[i]
    page.wait_for_function(f"document.querySelector(\"#recent button[data-roll='{first}']\").textContent.includes('1 6 2')",
                           timeout=10_000)
    assert page.get_attribute("#last-dice", "data-roll") == str(first)  # still on roll 1 after the set
    box = page.locator("#recent").bounding_box()
    assert box["x"] + box["width"] <= 390  # no sideways scrolling on the phone
    assert page.locator("#to-newest").bounding_box()["x"] + page.locator("#to-newest").bounding_box()["width"] <= 390
    # the whole page too: Charge's parameters in the note under "Apply to roll #N" wrap
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "gm-recent-rolls.png"), full_page=True)
    page.click("#to-newest")
    page.wait_for_function(f"document.getElementById('last-dice').dataset.roll === '{fifth}'", timeout=10_000)
    assert page.is_hidden("#to-newest") and f"roll #{fifth}" in page.inner_text("#correcting")


def test_gm_picks_who_assists_a_charge_roll_and_the_viewer_names_them(served, page):
    """Seed 004 "Assist": on /gm a menu of the players but the roller picks the teammate who pays
    the assist's 1 momentum (shown only on a Charge table with players); the roll's card on the
    viewer names them beside the roller. On a small phone's width."""
    service, base = served
    service.set_system("charge", {"assist": True})
    gm_login(page, base)
    assert page.locator("#assister-row").is_hidden()  # no players yet
    ana, bo = service.add_player("Ana"), service.add_player("Bo")
    service.set_roller(ana.id)
    page.wait_for_selector("#assister-row:not([hidden])", timeout=10_000)
    page.wait_for_function("document.querySelectorAll('#assister option').length === 2", timeout=10_000)
    assert page.eval_on_selector_all("#assister option", "os => os.map(o => o.textContent)") == ["no one picked", "Bo"]
    page.select_option("#assister", str(bo.id))
    page.wait_for_function("document.getElementById('msg').textContent.includes('Bo assists')", timeout=10_000)
    assert service.table.assister == bo.id
    box = page.locator("#assister").bounding_box()
    assert box["x"] + box["width"] <= 390 and page.evaluate("document.documentElement.scrollWidth") <= 390
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "gm-assister.png"), full_page=True)
    roll_now(service)  # 6,6,2 with the assist: Bo pays 1
    assert service.table.player(bo.id).momentum == 1
    service.set_system("contract")
    page.wait_for_selector("#assister-row", state="hidden", timeout=10_000)

    page.goto(base + "/")
    page.wait_for_function("document.getElementById('by').textContent.includes('Bo assists')", timeout=10_000)
    assert page.inner_text("#by") == "Ana's roll · Bo assists"


def test_gm_applies_parameters_to_a_counted_pool_roll_and_keeps_its_pool(served, page):
    """After a counted pool's roll the table's parameters, which the field holds, are the next roll's:
    the dice it left, no die dropped. "Apply to roll #N" sent them: setting ``action`` on a roll of
    a pool of 4 that dropped one die (3 d8 read) made it a pool of 2 with no drop, "invalid" (and the
    table's pool went back to the roll's). The roll keeps its own pool and drop now, unless the GM
    types another pool or drop in the field (then both go as typed)."""
    service, base = served
    service.set_system("contingency-pool", {"pool": 4, "drop": "effect"})
    service.reader = FakeReader(reading_of(("d8", 6), ("d8", 2), ("d8", 1)))
    roll_now(service)
    roll = service.state().last_roll
    assert roll.outcome == "grim" and service.state().params["pool"] == 2 and service.state().params["drop"] == "none"
    gm_login(page, base)
    page.wait_for_selector("#roll-params:not([disabled])", timeout=10_000)
    assert json.loads(page.input_value("#params"))["pool"] == 2  # the next roll's
    page.fill("#params", page.input_value("#params").replace('"action":false', '"action":true'))
    page.click("#roll-params")
    page.wait_for_function("document.getElementById('roll-params-note').textContent.includes('\"action\":true')",
                           timeout=10_000)
    fixed = service.table.roll(roll.id)
    assert fixed.outcome != "invalid", fixed.why
    assert (fixed.params["pool"], fixed.params["drop"], fixed.params["action"]) == (4, "effect", True)
    assert service.state().params["pool"] == 2 and service.state().params["drop"] == "none"
    page.click("#undo")
    page.wait_for_function("document.getElementById('roll-params-note').textContent.includes('\"action\":false')",
                           timeout=10_000)
    page.fill("#params", '{"pool": 3, "drop": "none"}')  # typed: sent (3 d8 read, none dropped: the pool was 3)
    page.click("#roll-params")
    page.wait_for_function("document.getElementById('roll-params-note').textContent.includes('\"pool\":3')",
                           timeout=10_000)
    fixed = service.table.roll(roll.id)
    assert (fixed.params["pool"], fixed.params["drop"], fixed.outcome) == (3, "none", "grim")


def test_gm_menus_fit_a_small_phone_with_long_player_names(served, page):
    """The "Who assists" menu is as wide as its longest option: two players with names of 37 and 38
    characters (40 are allowed) made it 445 px wide, and the GM page scrolled sideways on a 390-px
    phone. The menus stay inside the page (the system menu too, on a 320-px phone)."""
    service, base = served
    service.set_system("charge", {"assist": True})
    service.add_player("Alexandra Konstantinopoulou-Vanderbilt")
    service.add_player("Maximiliane Wolkenstein-Oberndorferin")
    gm_login(page, base)
    page.wait_for_selector("#assister-row:not([hidden])", timeout=10_000)
    page.wait_for_function("document.querySelectorAll('#assister option').length === 3", timeout=10_000)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    box = page.locator("#assister").bounding_box()
    assert box["x"] + box["width"] <= 390
    page.set_viewport_size({"width": 320, "height": 568})
    page.wait_for_timeout(100)
    assert page.evaluate("document.documentElement.scrollWidth") <= 320


def test_history_says_who_rolled(served, page):
    """The viewer's history names each roll's roller beside its system ("Ana · Charge · action roll"),
    as the newest roll's card does: with several players at the table, the list alone said only what
    was rolled, not by whom."""
    service, base = served
    ana, ben = service.add_player("Ana"), service.add_player("Ben")
    service.set_roller(ana.id)
    roll_now(service)
    service.set_roller(ben.id)
    roll_now(service)
    page.goto(base + "/")
    page.wait_for_function("document.querySelectorAll('#history li').length === 1", timeout=10_000)
    assert page.inner_text("#history li .s") == "Ana · Charge · action roll"  # the older roll; Ben's is the card
    assert page.inner_text("#by") == "Ben's roll"


def test_a_long_name_without_spaces_fits_a_small_phone(served, page):
    """A player's name may be 40 characters with no space (a nickname, a handle): the viewer's players
    list, the roll card's "X's roll · Y assists" and the GM's players list wrap it inside a 390-px
    phone instead of making the page scroll sideways."""
    service, base = served
    service.set_system("charge", {"assist": True})
    long_a, long_b = "W" * 20 + "olfeschlegelsteinhau", "Q" * 40
    a, b = service.add_player(long_a), service.add_player(long_b)
    service.set_roller(a.id)
    service.set_assister(b.id)
    roll_now(service)
    page.goto(base + "/")
    page.wait_for_function(f"document.body.innerText.includes('{long_a}')", timeout=10_000)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    gm_login(page, base)
    page.wait_for_function(f"document.getElementById('players').innerText.includes('{long_b}')", timeout=10_000)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_gm_adds_a_skill_checks_luck_die_typed_or_read_from_the_tray(served, page):
    """Seed 001 "Luck Dice": after the result the player may roll one die of the result die's size.
    On /gm the skill check being corrected offers "Luck die (d8)": "read it from the tray" has the
    camera await it (shown, with a cancel), and the next tray's one new d8 is added to that roll (no
    new roll); or its face is typed and added. Undo takes it back. On a small phone's width."""
    service, base = served
    service.set_system("contingency-skill", {"target": 9})
    three = reading_of(("d6", 2), ("d8", 4), ("d10", 9))  # middle die d8 4
    with_luck = reading_of(("d6", 2), ("d8", 4), ("d10", 9), ("d8", 6))  # the three where they lay, a new d8
    service.reader = FakeReader(three, with_luck, three)
    roll_now(service)
    roll = service.state().last_roll
    gm_login(page, base)
    page.wait_for_selector("#luck:not([hidden])", timeout=10_000)
    assert page.inner_text("#luck-label") == "Luck die (d8)" and page.is_hidden("#luck-wait")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.click("#luck-read")
    page.wait_for_selector("#luck-wait:not([hidden])", timeout=10_000)
    assert f"luck die of roll #{roll.id}" in page.inner_text("#luck-wait-text") and page.is_hidden("#luck-read")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "gm-luck-die.png"), full_page=True)
    roll_now(service)  # the luck die rolled beside the three dice
    page.wait_for_selector("#luck-wait[hidden]", state="attached", timeout=10_000)
    page.wait_for_selector("#luck[hidden]", state="attached", timeout=10_000)  # one per check
    lucky = service.table.roll(roll.id)
    assert (lucky.result["result"], lucky.outcome) == (10, "success") and len(service.table.rolls(10)) == 1
    page.click("#undo")
    page.wait_for_selector("#luck:not([hidden])", timeout=10_000)
    page.fill("#luck-face", "3")
    page.click("#luck-add")
    page.wait_for_selector("#luck[hidden]", state="attached", timeout=10_000)
    wait_msg(page, "luck die 3 added")
    assert service.table.roll(roll.id).result["result"] == 7


def test_gm_luck_die_typed_for_a_roll_lands_on_it_when_a_newer_roll_comes_in(served, page):
    """The GM types a luck die's face for skill check #1 and another roll comes in before "add": the
    luck control, like the die fields, stays on roll #1 (it followed the newest roll, so the face
    went to roll #2) and "add" puts the die on roll #1."""
    service, first = luck_face_typed_on_a_check(served, page)  # typed, not added; the field keeps focus
    second = a_newer_roll_leaves_the_luck_face_on(service, page, first)
    add_the_luck_six(service, page, first, second)


def luck_face_typed_on_a_check(served, page) -> tuple:
    """A skill check (d8 4 in the middle, target 9) read and shown on /gm, a luck face "6" typed for
    it and not added; a one-check reading comes next. Returns ``(service, the check's id)``."""
    service, base = served
    service.set_system("contingency-skill", {"target": 9})
    service.reader = FakeReader(reading_of(("d6", 2), ("d8", 4), ("d10", 9)), reading_of(("d6", 5), ("d8", 1), ("d10", 3)))
    roll_now(service)
    first = service.state().last_roll.id
    gm_login(page, base)
    page.wait_for_selector("#luck:not([hidden])", timeout=10_000)
    page.fill("#luck-face", "6")
    return service, first


def a_newer_roll_leaves_the_luck_face_on(service, page, first: int) -> int:
    """A newer roll comes in: the luck control and its "6" stay on roll ``first``. Returns the newer roll's id."""
    roll_now(service)
    second = service.state().last_roll.id
    page.wait_for_selector(f"#recent button[data-roll='{second}']", timeout=10_000)
    assert page.get_attribute("#luck", "data-roll") == str(first) and page.input_value("#luck-face") == "6"
    return second


def add_the_luck_six(service, page, first: int, second: int) -> None:
    """"add": the luck die 6 goes on roll ``first`` (4 + 6 = 10), none on ``second``."""
    page.click("#luck-add")
    page.wait_for_function("document.getElementById('msg').textContent.includes('luck die 6 added')", timeout=10_000)
    assert service.table.roll(first).result["result"] == 10 and service.table.roll(second).params["luck"] is False


def test_gm_luck_die_typed_and_left_stays_on_its_roll(served, page):
    """A luck die's face typed for skill check #1 and left there (the GM tapped elsewhere before
    "add") holds the controls on roll #1, as a die's face typed and left does: the luck control went
    on to roll #2 when it came in, the "6" still in it, and "add" put the die on roll #2. Tapping
    another roll in the recent rolls moves the controls to it with the field empty."""
    service, first = luck_face_typed_on_a_check(served, page)
    page.evaluate("document.activeElement.blur()")  # typed, not added, and left
    second = a_newer_roll_leaves_the_luck_face_on(service, page, first)
    assert f"roll #{first}" in page.inner_text("#correcting")
    page.click(f"#recent button[data-roll='{second}']")  # the GM picks the newer roll: the face typed goes
    page.wait_for_function(f"document.getElementById('luck').dataset.roll === '{second}'", timeout=10_000)
    assert page.input_value("#luck-face") == "" and page.locator("#last-dice form.fix input").count() == 3
    page.click(f"#recent button[data-roll='{first}']")
    page.wait_for_function(f"document.getElementById('luck').dataset.roll === '{first}'", timeout=10_000)
    page.fill("#luck-face", "6")
    add_the_luck_six(service, page, first, second)


def test_gm_marks_a_condition_on_a_skill_check_failed_by_one(served, page):
    """Seed 001 "Failing By One": the kit offers it, never applies it silently. On /gm the skill check
    being corrected, failed by exactly one, shows "Player marks a condition: barely succeed"; it sets
    ``mark_condition`` on that roll (a success now) and hides; undo brings the failure and the button
    back. A roll not failed by one shows none; a picked older roll gets it, not the newest. On a small
    phone's width."""
    service, base = served
    service.set_system("contingency-skill", {"target": 6})
    service.reader = FakeReader(reading_of(("d6", 2), ("d8", 5), ("d10", 9)),  # middle d8 5 vs 6: failed by one
                                reading_of(("d6", 2), ("d8", 3), ("d10", 9)))  # 3 vs 6: failed by three
    roll_now(service)
    first = service.state().last_roll.id
    gm_login(page, base)
    page.wait_for_selector("#mark-row:not([hidden])", timeout=10_000)
    assert page.inner_text("#mark-condition") == "Player marks a condition: barely succeed"
    assert f"roll #{first}" in page.inner_text("#mark-hint")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "gm-mark-condition.png"), full_page=True)
    assert service.table.roll(first).outcome == "failure"  # offered only
    page.click("#mark-condition")
    page.wait_for_selector("#mark-row[hidden]", state="attached", timeout=10_000)
    marked = service.table.roll(first)
    assert (marked.outcome, marked.params["mark_condition"]) == ("success", True)
    wait_msg(page, "a condition marked")
    assert service.table.params["mark_condition"] is False
    page.click("#undo")
    page.wait_for_selector("#mark-row:not([hidden])", timeout=10_000)
    assert service.table.roll(first).outcome == "failure"
    roll_now(service)  # the newest roll, failed by three: no offer
    second = service.state().last_roll.id
    page.wait_for_function(f"document.getElementById('last-dice').dataset.roll === '{second}'", timeout=10_000)
    page.wait_for_selector("#mark-row[hidden]", state="attached", timeout=10_000)
    page.click(f"#recent button[data-roll='{first}']")  # the GM picks the older roll
    page.wait_for_selector("#mark-row:not([hidden])", timeout=10_000)
    page.click("#mark-condition")
    page.wait_for_selector("#mark-row[hidden]", state="attached", timeout=10_000)
    assert service.table.roll(first).outcome == "success" and service.table.roll(second).outcome == "failure"
    assert service.table.roll(second).params["mark_condition"] is False
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_gm_forces_a_pools_last_die_out_with_a_mark_or_a_tension_token(served, page):
    """Seed 000 "Diminishing Resource Pools" (RULES.md contingency-pool: "the kit offers both as
    actions"): on /gm a pool roll whose last die stayed shows "Player takes a mark" and "Spend a
    tension token" (the second disabled, with a hint, while the GM has no token); each resolves the
    roll being corrected again with that force: the die out, the pool empty, the token spent. Hidden
    for a roll with no such offer. On a small phone's width."""
    service, base = served
    service.set_system("contingency-pool", {"pool": 1})
    service.reader = FakeReader(reading_of(("d8", 3)))
    roll_now(service)
    roll = service.state().last_roll
    assert roll.result["offers"]
    gm_login(page, base)
    page.wait_for_selector("#force:not([hidden])", timeout=10_000)
    assert page.locator("#force-tension").is_disabled() and page.is_visible("#force-hint")  # no token yet
    assert f"Roll #{roll.id}" in page.inner_text("#force-label")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.click("#give")
    page.wait_for_selector("#force-tension:not([disabled])", timeout=10_000)
    assert page.is_hidden("#force-hint") and page.evaluate("document.documentElement.scrollWidth") <= 390
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "gm-pool-force.png"), full_page=True)
    page.click("#force-tension")
    page.wait_for_selector("#force[hidden]", state="attached", timeout=10_000)  # forced: no offer left
    forced = service.table.roll(roll.id)
    assert (forced.result["forced"], forced.result["depleted"]) == ("tension", True)
    assert service.state().tokens.tension == 0 and service.state().params["pool"] is None
    wait_msg(page, "last die forced out")
    page.click("#undo")
    page.wait_for_selector("#force:not([hidden])", timeout=10_000)
    assert service.state().tokens.tension == 1 and service.state().params["pool"] == 1
    page.click("#force-mark")
    page.wait_for_selector("#force[hidden]", state="attached", timeout=10_000)
    assert service.table.roll(roll.id).result["forced"] == "mark" and service.state().tokens.tension == 1


def test_gm_applies_parameters_to_a_roll_with_a_luck_die_and_keeps_it(served, page):
    """"Apply to roll #N" sends the parameters field, which holds the next rolls' values (``luck``
    false): on a skill check with a luck die added after the roll it made the 4-die check expect 3
    dice ("invalid"). The keys a roll's own after-the-roll controls set (GET /api/systems
    "after_roll") now stay as the roll has them: the target changes, the luck die stays."""
    service, base = served
    service.set_system("contingency-skill", {"target": 9})
    service.reader = FakeReader(reading_of(("d6", 2), ("d8", 4), ("d10", 9)))
    roll_now(service)
    roll = service.state().last_roll
    service.add_luck_die(roll.id, "5")  # 4 + 5 = 9: success at 9
    gm_login(page, base)
    page.wait_for_selector("#roll-params:not([disabled])", timeout=10_000)
    page.wait_for_function("document.getElementById('roll-params-note').textContent.includes('\"luck\":true')",
                           timeout=10_000)
    assert '"luck":false' in page.input_value("#params")  # the next rolls' parameters
    page.fill("#params", page.input_value("#params").replace('"target":9', '"target":10'))
    page.click("#roll-params")
    page.wait_for_function("document.getElementById('roll-params-note').textContent.includes('\"target\":10')",
                           timeout=10_000)
    fixed = service.table.roll(roll.id)
    assert (fixed.outcome, fixed.params["luck"], fixed.params["target"], fixed.result["result"]) == ("failure", True, 10, 9)
