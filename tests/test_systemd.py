"""The boot unit (systemd/pi-table.service): what it runs and where it may write."""

from __future__ import annotations

import configparser

from tests.conftest import REPO


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # systemd keys are case-sensitive
    parser.read_string((REPO / "systemd" / "pi-table.service").read_text())
    return parser


def test_the_unit_runs_serve_from_a_folder_it_may_write():
    """lgpio (gpiozero's pin factory on a Pi 5) makes its pipes in the working directory: under
    ProtectSystem=strict only ReadWritePaths and the StateDirectory are writable."""
    service = unit()["Service"]
    assert service["ExecStart"].split()[1:3] == ["serve", "--state-dir"]
    state_dir = service["ExecStart"].split()[3]
    assert service["ProtectSystem"] == "strict"
    assert service["WorkingDirectory"] == state_dir == "/var/lib/" + service["StateDirectory"]
    assert state_dir in service["ReadWritePaths"].split()
