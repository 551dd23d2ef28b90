"""The boot unit (systemd/pi-table.service): what it runs and where it may write."""

from __future__ import annotations

import configparser
import re
import tempfile
import tomllib

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


def readme_install_steps() -> str:
    text = (REPO / "README.md").read_text()
    start = text.index("## Run it on boot")
    return text[start:text.index("\n## ", start + 1)]


def test_the_unit_reads_the_config_file_the_install_steps_put_in_place():
    """The boot unit passed no --config, so the [pins] table hardware.md sends a GM to (and every
    other key) was never read on boot; now it reads /etc/pi-table.toml, which the README's install
    steps copy from systemd/pi-table.toml, and the other paths and names agree as well."""
    service = unit()["Service"]
    words = service["ExecStart"].split()
    assert words[0] == "/opt/pi-table/.venv/bin/pi-table" and "--config" in words
    config = words[words.index("--config") + 1]
    steps = readme_install_steps()
    assert f"sudo install -m 644 systemd/pi-table.toml {config}" in steps
    assert "sudo git clone <this repository> /opt/pi-table" in steps and "cd /opt/pi-table" in steps
    assert "sudo cp systemd/pi-table.service /etc/systemd/system/" in steps
    assert service["EnvironmentFile"].lstrip("-") in steps  # where the PIN goes
    assert f"--home {service['WorkingDirectory']} {service['User']}" in steps
    for group in service["SupplementaryGroups"].split():
        assert group in steps.split("--groups ")[1].split()[0].split(",")


def test_the_example_config_names_every_key_with_its_default():
    """systemd/pi-table.toml, every line taken out of its comment, is a config serve accepts and
    holds the defaults: each key documented there works."""
    from pi_table.outputs.gpio import PinConfig
    from pi_table.service import Settings

    text = (REPO / "systemd" / "pi-table.toml").read_text()
    lines = [m.group(1) for m in re.finditer(r"^# (\[\w+\].*|\w+ = .*)$", text, re.M)]
    data = tomllib.loads("\n".join(lines))
    documented = set(data) | {f"pins.{k}" for k in data["pins"]}
    wanted = set(Settings.__dataclass_fields__) - {"state_dir", "pin"}  # the unit sets them: --state-dir, the env file
    assert documented >= wanted | {f"pins.{k}" for k in PinConfig.__dataclass_fields__}
    with tempfile.NamedTemporaryFile("w", suffix=".toml") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        settings = Settings.from_file(f.name)
    assert settings.pins == PinConfig()
    defaults = Settings()
    for key in wanted - {"source", "params", "pins"}:
        assert getattr(settings, key) == getattr(defaults, key), key


def test_bad_input_is_not_restarted_for_ever():
    """Exit status 2 (a mistake in the config file) restarted every RestartSec for ever: 3 s apart,
    five starts never fall within the default 10 s start limit."""
    service = unit()["Service"]
    assert service["Restart"] == "on-failure"
    assert "2" in service["RestartPreventExitStatus"].split()
