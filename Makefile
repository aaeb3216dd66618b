# The two commands of the README. Each one bootstraps whatever is missing first
# (virtual environment with the ROS 2 wheels, colcon build); see tools/bootstrap.sh.
SHELL := /bin/bash
DEMO_SECONDS ?= 20
PYTEST_ARGS ?=

.PHONY: demo test bench soak bootstrap clean

demo: bootstrap
	. tools/env.sh && python -m legacy_robot_bringup.demo --duration $(DEMO_SECONDS) --output demo-output $(DEMO_ARGS)

test: bootstrap
	. tools/env.sh && python -m pytest -rs $(PYTEST_ARGS)

# Speed and CPU numbers (not part of the tests): every robot's benchmark, then one table;
# JSON and a PNG chart in bench-output/. BENCH_ARGS=--quick for a short smoke run.
BENCH_ARGS ?=
bench: bootstrap
	bash tools/bench_tools.sh
	. tools/env.sh && python -m legacy_robot_bringup.bench --output bench-output $(BENCH_ARGS)

# The fault suite (not part of CI; about 45 minutes): fuzzing, emulator kill/restart, link
# noise, AIBO audio, P2OS safety, malformed Nabaztag requests; one table, soak-output/.
# SOAK_ARGS='--parts fuzz --cases 10000' for a part or a shorter run.
SOAK_ARGS ?=
soak: bootstrap
	. tools/env.sh && python -m legacy_robot_bringup.soak --output soak-output $(SOAK_ARGS)

bootstrap:
	bash tools/bootstrap.sh

clean:
	rm -rf build install log demo-output bench-output soak-output
