"""What a robot launch starts, as plain data (no `launch` import), so it can be
checked on machines without `launch` and turned into launch actions where it exists."""
import dataclasses
from typing import Dict, List, Tuple

from .paths import PACKAGE


@dataclasses.dataclass(frozen=True)
class ProcessSpec:
    package: str
    executable: str
    name: str
    # parameter files as (package, path inside its share directory)
    params_files: Tuple[Tuple[str, str], ...] = ()
    parameters: Dict[str, object] = dataclasses.field(default_factory=dict)
    arguments: Tuple[str, ...] = ()
    is_node: bool = True


def robot_processes(plugin, sim) -> List[ProcessSpec]:
    """The driver node (with its parameter file) and, with sim, its emulator."""
    processes = []
    if sim:
        processes.append(ProcessSpec(package=plugin.package, executable=plugin.emulator_executable,
                                     name=f'{plugin.name}_emulator',
                                     arguments=tuple(plugin.emulator_arguments), is_node=False))
    processes.append(ProcessSpec(
        package=plugin.package, executable=plugin.executable, name=plugin.node_name,
        params_files=((PACKAGE, f'config/{plugin.config_file}'),),
        parameters=dict(plugin.sim_parameters or {}) if sim else {}))
    return processes
