"""The descriptor's ``fleet`` section: the multi-machine chain (``train_linux_gpu_fleet_normal_infer_python_linux_gpu_cpu.txt``).

With the section, ``tipcgen init`` renders the model's fleet config: its basic config with ``gpu_list`` set to
``fleet.gpu_list``, one entry naming machines in upstream's ``ips;devices`` form (default
``127.0.0.2,127.0.0.3;-1,-1``: two machines on loopback addresses, two CPU processes each), and the train device
line set to its CPU value. A descriptor whose own ``gpu_list`` holds an entry naming machines by address
(``127.0.0.2,127.0.0.3;-1,-1``) renders the fleet chain from it, section or not. ``tolerance`` is how far rank 0's
parameters and the mean of the ranks' losses may be from a one-process run's (``check_fleet.py``'s ``--atol``/``--rtol``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tipcgen.core.errors import DescriptorError
from tipcgen.descriptor.fields import default
from tipcgen.descriptor.spec import Tolerance
from tipcgen.descriptor.validate_values import Checks
from tipcgen.format.chains import FLEET
from tipcgen.descriptor.yaml_lines import shown

DEFAULT_GPU_LIST = default("fleet.gpu_list")
DEFAULT_TOLERANCE = Tolerance(**default("fleet.tolerance"))
_IP = r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}"
ENTRY_RE = re.compile(rf"^{_IP}(,{_IP})*;(-1|\d+)(,(-1|\d+))*$")


@dataclass(frozen=True)
class FleetSpec:
    gpu_list: str = DEFAULT_GPU_LIST
    tolerance: Tolerance = DEFAULT_TOLERANCE


def machines_problem(entry: str) -> str | None:
    """Why the fleet chain cannot run ``entry`` (ips;devices), or None."""
    ips = entry.split(";")[0].split(",")
    if not ENTRY_RE.match(entry):
        return "the fleet chain needs IPv4 addresses, then -1 (a CPU process) or a device number per process"
    if len(set(ips)) != len(ips):
        return f"machine {next(ip for ip in ips if ips.count(ip) > 1)} is named twice"
    return None


def names_addresses(entry: str) -> bool:
    """Whether ``entry`` names machines by IPv4-shaped addresses (not upstream's placeholders, xx.xx.xx.xx)."""
    return ";" in entry and all(re.fullmatch(r"\d+\.\d+\.\d+\.\d+", ip) for ip in entry.split(";")[0].split(","))


def parse(value: Any, source: str, lines: dict[str, int], machines: str | None = None) -> FleetSpec | None:
    """The ``fleet`` section → a FleetSpec; errors name the field and its line. ``machines``, the descriptor's
    gpu_list entry naming machines (if any), renders the fleet chain without a section, and is the section's
    gpu_list when the section gives none."""
    if value is None:
        return FleetSpec(machines) if machines else None

    def fail(path: str, message: str, hint: str) -> DescriptorError:
        return DescriptorError(source, path, message, lines.get(path) or lines.get(FLEET), hint)

    entry = value.get("gpu_list", machines or DEFAULT_GPU_LIST)  # a mapping of known fields: the model's
    if machines_problem(entry):
        raise fail("fleet.gpu_list", f"expected machines and devices as ips;devices, found {shown(entry)}",
                   f"e.g. {DEFAULT_GPU_LIST}: distinct IPv4 addresses, then -1 (a CPU process) or a device number per process")
    tolerance = Checks(source, lines).tolerance(value.get("tolerance"), "fleet.tolerance", DEFAULT_TOLERANCE)
    return FleetSpec(entry, tolerance)
