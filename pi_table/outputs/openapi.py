"""OpenAPI 3 description of the kit's HTTP API (INTERFACES.md "HTTP"), served at
``GET /api/openapi.json``.

:data:`SPEC` is a plain JSON-able dict. tests/test_fuzz.py checks that every ``/api``
route of the Flask app is described here, and fuzzes each one with the fields named here.
"""

from __future__ import annotations

from pi_table.rules._common import PARAM_TYPES
from pi_table.rules.api import DEFAULT_PARAMS, KINDS_BY_SYSTEM, SYSTEMS

_ERROR = {"description": "bad input: one line naming the bad value; nothing changed",
          "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_UNAUTHORIZED = {"description": "no or wrong GM PIN; nothing changed",
                 "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_LOCKED = {"description": "5 different wrong PINs from this client within 60 s: wait a minute",
           "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_UNAVAILABLE = {"description": "the table's database is locked by another program, full or unreadable: one line "
                                "naming SQLite's reason; Retry-After says when to try again",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_NOT_FOUND = {"description": "no such roll, die or player",
              "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def _json(ref: str, description: str = "ok") -> dict:
    return {"description": description, "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}}


def _gm(summary: str, ok: dict, body: dict | None = None, params: list | None = None, not_found: bool = False) -> dict:
    """A GM change: needs the PIN (bearer) or the /gm session cookie plus X-CSRF-Token."""
    op: dict = {"summary": summary, "security": [{"pin": []}, {"session": [], "csrf": []}],
                "responses": {"200": ok, "400": _ERROR, "401": _UNAUTHORIZED, "403": _ERROR, "429": _LOCKED, "503": _UNAVAILABLE}}
    if body is not None:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    if params:
        op["parameters"] = params
    if not_found:
        op["responses"]["404"] = _NOT_FOUND
    return op


def _path_id(name: str, description: str) -> dict:
    return {"name": name, "in": "path", "required": True, "description": description,
            "schema": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}}


_POINTS = {"type": "integer", "minimum": 0, "maximum": 99}
_DIE_PATH = [_path_id("roll_id", "the roll's id"), _path_id("index", "the die's index in the roll, from 0")]
_KINDS = [k for kinds in KINDS_BY_SYSTEM.values() for k in kinds]
_DICE_SEEN = ("the number of dice the roll had as the GM saw it (optional): a roll that has another number now "
              "(a die removed or put back meanwhile, on another device) is left as it is: 409")


def _roll_changed(op: dict) -> dict:
    """``op`` with its 409: the roll changed since the GM saw it (``dice``)."""
    op["responses"]["409"] = {"description": "the roll has another number of dice than `dice`; nothing changed",
                              "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    return op


def _choose_fail() -> dict:
    op = _gm("contingency-skill: a player chooses to fail (no roll): the GM gains 1 omen with disadvantage, 2 "
             "with neither, 3 with advantage, by the table's advantage and disadvantage (seed 001)",
             {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {
                 "gm_omens": {"type": "integer"}, "why": {"type": "array", "items": {"type": "string"}},
                 "state": {"$ref": "#/components/schemas/State"}}}}}})
    op["responses"]["409"] = {"description": "the table plays another system; nothing changed",
                              "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    return op


def _luck() -> dict:
    """POST and DELETE /api/rolls/{roll_id}/luck: a skill check's luck die after the roll (seed 001)."""
    conflict = {"description": "the roll takes no luck die (not a contingency-skill check, a percentile roll, not "
                               "resolved, or it has one already; DELETE: another roll's luck die is awaited); "
                               "nothing changed",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    post = _gm(
        "a contingency-skill check's luck die, rolled after the roll (seed 001 \"Luck Dice\": one luck point, one "
        "die of the result die's size, its face added to the result, counted for omens; one per check). With "
        "`face`: added now (the roll's params get luck: true, it is resolved again, the roller pays the luck point, "
        "GM omens move by the difference, the pages get the roll again; undoable) and the roll is answered. "
        "Without: the camera takes it from its next reading (the one new die of that kind in the tray) instead of "
        "recording a new roll, and the state is answered (`luck_pending`)",
        {"description": "the roll (with `face`), or the state (without)", "content": {"application/json": {
            "schema": {"oneOf": [{"$ref": "#/components/schemas/Roll"}, {"$ref": "#/components/schemas/State"}]}}}},
        {"type": "object", "additionalProperties": False, "properties": {
            "face": {"oneOf": [{"type": "string"}, {"type": "integer"}], "nullable": True,
                     "description": "the luck die's printed face, e.g. \"5\" (a d10's \"0\" is 10); absent or "
                                    "null: read it from the tray"},
            "kind": {"type": "string", "nullable": True, "enum": [*sorted(set(KINDS_BY_SYSTEM["contingency-skill"])), None],
                     "description": "the result die's kind (anything else is 400); absent or null: that kind"}}},
        [_path_id("roll_id", "the roll's id")], not_found=True)
    post["responses"]["409"] = conflict
    delete = _gm("the camera no longer awaits this roll's luck die (none awaited: nothing to do); answers the state",
                 _json("State"), params=[_path_id("roll_id", "the roll's id")])
    delete["responses"]["409"] = conflict
    return {"post": post, "delete": delete}


SPEC: dict = {
    "openapi": "3.0.3",
    "info": {
        "title": "pi-table",
        "version": "1",
        "description": "Live dice rolls and table state of one pi-table kit, on the LAN. Reads are open to "
                       "anyone; changes need the GM PIN (Authorization: Bearer PIN) or the /gm session "
                       "cookie with its X-CSRF-Token. Every 4xx carries {\"error\": one line naming the bad value}.",
    },
    "paths": {
        "/api/state": {"get": {"summary": "the table now", "responses": {"200": _json("State")}}},
        "/api/join": {"get": {
            "summary": "where the other phones at the table open the viewer: the address this request came to, or for "
                       "a request to the machine itself (localhost) the same port at its address on its network; "
                       "/join.svg is the same address as a QR code (SVG), which the pages show",
            "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {
                "type": "object", "required": ["url"], "properties": {"url": {"type": "string",
                                                                            "example": "http://192.168.1.23:8080/"}}}}}}}}},
        "/api/events": {"get": {
            "summary": "live events (text/event-stream): event `state` (first, then on every change) carries "
                       "/api/state; event `roll` carries a Roll",
            "responses": {
                "200": {"description": "an event stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                "503": {"description": "too many live viewers; Retry-After says when to try again",
                        "headers": {"Retry-After": {"schema": {"type": "integer"}}},
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
            }}},
        "/api/systems": {"get": {
            "summary": "every system, in RULES.md's order: {id: {\"bands\": worst first, \"params\": the "
                       "parameters a table of it starts with (the keys PUT /api/system takes), \"kinds\": the "
                       "die kinds it reads, \"after_roll\": the parameters a recorded roll's own after-the-roll "
                       "actions set (a luck die, a condition marked, a pool's last die forced out), \"fields\": "
                       "the parameters a GM sets for the next rolls, each with its type, words and range (the /gm "
                       "page's form)}}",
            "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {
                "type": "object", "additionalProperties": {"type": "object", "properties": {
                    "bands": {"type": "array", "items": {"type": "string"}}, "params": {"type": "object"},
                    "kinds": {"type": "array", "items": {"type": "string"}},
                    "after_roll": {"type": "array", "items": {"type": "string"}},
                    "fields": {"type": "array", "items": {"type": "object", "required": ["name", "type", "label", "default"],
                               "properties": {
                        "name": {"type": "string", "description": "the key PUT /api/system takes"},
                        "type": {"type": "string", "enum": list(PARAM_TYPES),
                                 "description": "choice: one of choices; int: min..max; bool; json: a list or mapping"},
                        "label": {"type": "string", "description": "a few words for the GM, in the seed's terms"},
                        "default": {"description": "what a new table of the system starts with"},
                        "choices": {"type": "array", "items": {"type": "string"}},
                        "min": {"type": "integer"}, "max": {"type": "integer"},
                        "blank": {"type": "string", "description": "present where the value may be null: what "
                                  "null means (\"as many as read\")"}}}}}}}}}}}}},
        "/api/rolls": {"get": {
            "summary": "rolls, newest first",
            "parameters": [{"name": "limit", "in": "query", "required": False,
                            "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 20}}],
            "responses": {"200": {"description": "ok", "content": {"application/json": {
                "schema": {"type": "array", "items": {"$ref": "#/components/schemas/Roll"}}}}},
                "400": _ERROR}}},
        "/api/rolls/{roll_id}": {"get": {
            "summary": "one roll", "parameters": [_path_id("roll_id", "the roll's id")],
            "responses": {"200": _json("Roll"), "404": _NOT_FOUND}}},
        "/api/rolls/{roll_id}/image": {"get": {
            "summary": "the photo the roll was read from",
            "parameters": [_path_id("roll_id", "the roll's id")],
            "responses": {"200": {"description": "JPEG", "content": {"image/jpeg": {"schema": {"type": "string", "format": "binary"}}}},
                          "404": _NOT_FOUND}}},
        "/api/rolls/{roll_id}/dice/{index}": {
            "put": _roll_changed(_gm(
                "correct a misread die: its face, and its kind where the reader took it for another (a d10 read "
                "as a d8); the roll is resolved again under its own system and params, tokens and the roller's "
                "points move by the difference, and the pages get the roll again (event `roll`, same id); "
                "undoable", _json("Roll"),
                {"type": "object", "required": ["face"], "additionalProperties": False, "properties": {
                    "face": {"oneOf": [{"type": "string"}, {"type": "integer"}],
                             "description": "the printed face, e.g. \"5\", \"0\", \"70\" (on the die's kind)"},
                    "kind": {"type": "string", "nullable": True, "enum": [*sorted(set(_KINDS)), None],
                             "description": "the die's kind; one the roll's system reads (GET /api/systems "
                                            "`kinds`), else 400; absent or null: as read"},
                    "dice": {"type": "integer", "minimum": 0, "description": _DICE_SEEN}}},
                _DIE_PATH, not_found=True)),
            "delete": _roll_changed(_gm(
                "take a false die (a pip or a mark on the tray read as a die) out of the roll; the roll is "
                "resolved again as a corrected one is (a roll left with no die is invalid) and sent to the "
                "pages again; undoable (the die comes back)", _json("Roll"),
                params=[*_DIE_PATH, {"name": "dice", "in": "query", "required": False, "description": _DICE_SEEN,
                                     "schema": {"type": "integer", "minimum": 0}}], not_found=True))},
        "/api/rolls/{roll_id}/params": {"put": _gm(
            "set the parameters a recorded roll is resolved under, after the roll (the GM forgot to set "
            "The Contract's difficulty, a skill check's target, Charge's push first): the keys given replace "
            "the roll's own, the others stay; checked for the roll's own system (400 naming a bad one); the "
            "roll is resolved again, tokens and the roller's points move by the difference, the pages get the "
            "roll again (event `roll`, same id); the table's params for the next rolls stay, but the newest "
            "roll of a counted pool leaves the pool at the dice left; undoable (the old params come back)",
            _json("Roll"),
            {"type": "object", "required": ["params"], "additionalProperties": False, "properties": {
                "params": {"type": "object", "description": "the roll's system's parameters (as PUT /api/system "
                           "takes them); keys per system: "
                           + "; ".join(f"{s}: {', '.join(sorted(p)) or '(none)'}" for s, p in DEFAULT_PARAMS.items())}}},
            [_path_id("roll_id", "the roll's id")], not_found=True)},
        "/api/rolls/{roll_id}/luck": _luck(),
        "/api/system": {"put": _gm(
            "the system and parameters for the next rolls", _json("State"),
            {"type": "object", "required": ["system"], "additionalProperties": False, "properties": {
                "system": {"type": "string", "enum": list(SYSTEMS)},
                "params": {"type": "object", "description": "the system's parameters; keys per system: "
                           + "; ".join(f"{s}: {', '.join(sorted(p)) or '(none)'}" for s, p in DEFAULT_PARAMS.items())}}})},
        "/api/tokens/tension": {"post": _gm(
            "spend (negative) or give (positive) tension tokens; never below 0", _json("State"),
            {"type": "object", "required": ["delta"], "additionalProperties": False, "properties": {
                "delta": {"type": "integer", "minimum": -100, "maximum": 100}}})},
        "/api/tokens/omens": {"post": _gm(
            "the GM spends (negative) or gives himself (positive) GM omens for the scene (seed 001); never "
            "below 0", _json("State"),
            {"type": "object", "required": ["delta"], "additionalProperties": False, "properties": {
                "delta": {"type": "integer", "minimum": -100, "maximum": 100}}})},
        "/api/choose-fail": {"post": _choose_fail()},
        "/api/scene": {"post": _gm("new scene: GM omens reset to 0", _json("State"))},
        "/api/session": {"post": _gm(
            "new session of play: every player's momentum back to 2 (seed 004 \"Momentum\": you start every "
            "session with 2); luck points, tokens and the history stay; undoable", _json("State"))},
        "/api/undo": {"post": _gm("undo the last GM change", {"description": "ok", "content": {"application/json": {
            "schema": {"type": "object", "properties": {"undone": {"type": "boolean"},
                                                         "state": {"$ref": "#/components/schemas/State"}}}}}})},
        "/api/players": {
            "get": {"summary": "the players, in the order added", "responses": {"200": {
                "description": "ok", "content": {"application/json": {
                    "schema": {"type": "array", "items": {"$ref": "#/components/schemas/Player"}}}}}}},
            "post": _gm("add a player (momentum defaults to 2, luck to 0)", _json("Player", "created"),
                        {"type": "object", "required": ["name"], "additionalProperties": False, "properties": {
                            "name": {"type": "string", "minLength": 1, "maxLength": 40},
                            "momentum": _POINTS, "luck": _POINTS}}),
        },
        "/api/players/{player_id}": {
            "put": _gm("change a player's name, momentum or luck", _json("Player"),
                       {"type": "object", "minProperties": 1, "additionalProperties": False, "properties": {
                           "name": {"type": "string", "minLength": 1, "maxLength": 40},
                           "momentum": _POINTS, "luck": _POINTS}},
                       [_path_id("player_id", "the player's id")], not_found=True),
            "delete": _gm("remove a player", {"description": "ok", "content": {"application/json": {"schema": {
                "type": "object", "properties": {"deleted": {"$ref": "#/components/schemas/Player"},
                                                 "state": {"$ref": "#/components/schemas/State"}}}}}},
                          params=[_path_id("player_id", "the player's id")], not_found=True),
        },
        "/api/roller": {"put": _gm(
            "whose roll the next one is (null: no one)", _json("State"),
            {"type": "object", "required": ["player"], "additionalProperties": False, "properties": {
                "player": {"type": "integer", "nullable": True}}})},
        "/api/assister": {"put": _gm(
            "the teammate who pays a Charge assist's 1 momentum (null: no one; not the roller)", _json("State"),
            {"type": "object", "required": ["player"], "additionalProperties": False, "properties": {
                "player": {"type": "integer", "nullable": True}}})},
        "/api/openapi.json": {"get": {"summary": "this description", "responses": {"200": {"description": "OpenAPI 3"}}}},
    },
    "components": {
        "securitySchemes": {
            "pin": {"type": "http", "scheme": "bearer", "description": "the GM PIN"},
            "session": {"type": "apiKey", "in": "cookie", "name": "session", "description": "after POST /gm/login"},
            "csrf": {"type": "apiKey", "in": "header", "name": "X-CSRF-Token", "description": "from POST /gm/login"},
        },
        "schemas": {
            "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}},
            "Die": {"type": "object", "properties": {
                "kind": {"type": "string", "enum": ["d4", "d6", "d8", "d10", "d10-tens", "d12", "d20"]},
                "face": {"type": "string"}, "value": {"type": "integer"},
                "box": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                "status": {"type": "string", "enum": ["ok", "cocked", "unreadable"]}}},
            "Roll": {"type": "object", "properties": {
                "id": {"type": "integer", "nullable": True}, "time": {"type": "number", "description": "unix time, s"},
                "system": {"type": "string"}, "params": {"type": "object"}, "source": {"type": "string", "description": "the photo's or frame's name, without folders"},
                "width": {"type": "integer"}, "height": {"type": "integer"}, "ms": {"type": "number"},
                "dice": {"type": "array", "items": {"$ref": "#/components/schemas/Die"}},
                "outcome": {"type": "string"}, "result": {"type": "object"},
                "why": {"type": "array", "items": {"type": "string"}},
                "image_url": {"type": "string", "nullable": True}, "saved": {"type": "boolean"},
                "odds": {"type": "object", "nullable": True,
                         "description": "the exact chance of each outcome band for this roll, worst band first: "
                                        "{band: {\"p\": float, \"exact\": \"n/d\"}}; null where there is none "
                                        "(a re-roll, an invalid roll) or while slow odds are still being computed",
                         "additionalProperties": {"type": "object", "properties": {
                             "p": {"type": "number"}, "exact": {"type": "string"}}}},
                "player": {"type": "object", "nullable": True, "description": "{id, name} of the roller"},
                "assist_by": {"type": "object", "nullable": True,
                              "description": "{id, name} of the teammate who assisted (Charge) and paid 1 momentum"}}},
            "Player": {"type": "object", "properties": {
                "id": {"type": "integer"}, "name": {"type": "string"}, "momentum": _POINTS, "luck": _POINTS}},
            "State": {"type": "object", "required": ["system", "params", "tokens", "last_roll"], "properties": {
                "system": {"type": "string"}, "params": {"type": "object"},
                "tokens": {"type": "object", "properties": {"tension": {"type": "integer"}, "gm_omens": {"type": "integer"},
                                                            "momentum": {"type": "integer"}}},
                "last_roll": {"allOf": [{"$ref": "#/components/schemas/Roll"}], "nullable": True},
                "notices": {"type": "array", "items": {"type": "string"}},
                "players": {"type": "array", "items": {"$ref": "#/components/schemas/Player"}},
                "roller": {"type": "integer", "nullable": True},
                "assister": {"type": "integer", "nullable": True},
                "luck_pending": {"type": "object", "nullable": True, "description": "the roll whose luck die the "
                                 "camera's next reading is taken for, and its kind; null when none is awaited",
                                 "properties": {"roll": {"type": "integer"}, "kind": {"type": "string"}}}}},
        },
    },
}

# POST /api/players answers 201 Created, not 200
SPEC["paths"]["/api/players"]["post"]["responses"]["201"] = SPEC["paths"]["/api/players"]["post"]["responses"].pop("200")
