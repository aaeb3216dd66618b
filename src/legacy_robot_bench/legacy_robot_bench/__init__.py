"""Measurement of the legacy robot drivers: benchmarks, floors, the fault suite (soak), the
mixed soak and the recording fuzz. Not installed with the drivers; nothing at run time imports
it. It reaches each robot through the plugin table (`legacy_robots.robots`) and, by convention,
its modules `legacy_robot_bench.<robot package>.bench` and `.soak`."""
