"""The descriptor's ``fleet`` section: the multi-machine chain (``train_linux_gpu_fleet_normal_infer_python_linux_gpu_cpu.txt``).

With the section, ``tipcgen init`` renders the model's fleet config: its basic config with ``gpu_list`` set to
``fleet.gpu_list``, one entry naming machines in upstream's ``ips;devices`` form (default
``127.0.0.2,127.0.0.3;-1,-1``: two machines on loopback addresses, two CPU processes each), and the train device
line set to its CPU value. ``tolerance`` is how far the mean of the ranks' losses may be from a one-process run's
(``check_fleet.py``'s ``--atol``/``--rtol``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tipcgen.core.errors import DescriptorError
from tipcgen.descriptor.schema import FLEET_FIELDS
from tipcgen.descriptor.spec import Tolerance
from tipcgen.descriptor.validate_values import Checks
from tipcgen.descriptor.yaml_lines import shown

DEFAULT_GPU_LIST = "127.0.0.2,127.0.0.3;-1,-1"
DEFAULT_TOLERANCE = Tolerance(atol=1.0e-5, rtol=1.0e-5)
_IP = r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}"
ENTRY_RE = re.compile(rf"^{_IP}(,{_IP})*;(-1|\d+)(,(-1|\d+))*$")


@dataclass(frozen=True)
class FleetSpec:
    gpu_list: str = DEFAULT_GPU_LIST
    tolerance: Tolerance = DEFAULT_TOLERANCE


def parse(value: Any, source: str, lines: dict[str, int]) -> FleetSpec | None:
    """The ``fleet`` section → a FleetSpec; errors name the field and its line."""
    if value is None:
        return None

    def fail(path: str, message: str, hint: str) -> DescriptorError:
        return DescriptorError(source, path, message, lines.get(path) or lines.get("fleet"), hint)

    if not isinstance(value, dict):
        raise fail("fleet", "expected a mapping", "fleet: {} (two loopback machines, two CPU processes each)")
    unknown = sorted(set(value) - FLEET_FIELDS)
    if unknown:
        raise fail(f"fleet.{unknown[0]}", "unknown field", "allowed: " + ", ".join(sorted(FLEET_FIELDS)))
    entry = value.get("gpu_list", DEFAULT_GPU_LIST)
    if not isinstance(entry, str) or not ENTRY_RE.match(entry) or len(set(entry.split(";")[0].split(","))) != len(entry.split(";")[0].split(",")):
        raise fail("fleet.gpu_list", f"expected machines and devices as ips;devices, found {shown(entry)}",
                   f"e.g. {DEFAULT_GPU_LIST}: distinct IPv4 addresses, then -1 (a CPU process) or a device number per process")
    tolerance = Checks(source, lines).tolerance(value.get("tolerance"), "fleet.tolerance", DEFAULT_TOLERANCE)
    return FleetSpec(entry, tolerance)
