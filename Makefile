# The two commands of the README. Each one bootstraps whatever is missing first
# (virtual environment with the ROS 2 wheels, colcon build); see tools/bootstrap.sh.
SHELL := /bin/bash
DEMO_SECONDS ?= 20
PYTEST_ARGS ?=

.PHONY: demo test bench bootstrap clean

demo: bootstrap
	. tools/env.sh && python -m legacy_robot_bringup.demo --duration $(DEMO_SECONDS) --output demo-output

test: bootstrap
	. tools/env.sh && python -m pytest -rs $(PYTEST_ARGS)

# Speed and CPU numbers (not part of the tests): every robot's benchmark, then one table;
# JSON and a PNG chart in bench-output/. BENCH_ARGS=--quick for a short smoke run.
BENCH_ARGS ?=
bench: bootstrap
	. tools/env.sh && python -m legacy_robot_bringup.bench --output bench-output $(BENCH_ARGS)

bootstrap:
	bash tools/bootstrap.sh

clean:
	rm -rf build install log demo-output bench-output
