"""A short run of ``pi-table loadtest``: the real server, live viewers, rolls, /api/state."""

from __future__ import annotations

import pytest

from pi_table.cli import main
from pi_table.outputs.loadtest import format_result, run_loadtest


def test_short_load_run_delivers_every_roll():
    result = run_loadtest(viewers=10, state_rps=10, roll_interval=0.5, duration=5, over=2)
    print(format_result(result))
    assert result["viewers"]["admitted"] == 10
    assert result["rolls"]["published"] >= 8 and result["rolls"]["server_errors"] == 0
    delivery = result["delivery"]
    assert delivery["missing"] == 0 and delivery["delivered"] == delivery["expected"] == 10 * result["rolls"]["published"]
    assert result["viewers"]["dropped_by_server"] == 0
    assert result["state"]["errors"] == 0 and result["state"]["requests"] >= 40
    # the cap: streams beyond it get 503 with Retry-After, the admitted ones keep streaming
    assert result["cap"]["statuses"] == {"503": 2} and result["cap"]["503_with_retry_after"] == 2
    assert result["bars"]["every_viewer_every_roll"] and result["bars"]["cap_503_retry_after"]


def test_viewers_beyond_the_cap_are_refused():
    result = run_loadtest(viewers=4, max_viewers=3, state_rps=0, roll_interval=0.5, duration=1.5, over=0)
    assert result["viewers"]["admitted"] == 3 and result["viewers"]["refused_503"] == 1
    assert result["cap"]["viewers_refused_with_retry_after"] == 1 and result["cap"]["ok"]
    assert result["delivery"]["missing"] == 0


@pytest.mark.parametrize("argv", [
    ["loadtest", "--viewers", "0"],
    ["loadtest", "--viewers", "x"],
    ["loadtest", "--duration", "-1"],
    ["loadtest", "--roll-interval", "nan"],
    ["loadtest", "--state-rps", "inf"],
])
def test_bad_options_exit_2(argv, capsys):
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
