# The two commands of the README. Each one bootstraps whatever is missing first
# (virtual environment with the ROS 2 wheels, colcon build); see tools/bootstrap.sh.
SHELL := /bin/bash
DEMO_SECONDS ?= 20
PYTEST_ARGS ?=

.PHONY: demo test bench soak bootstrap clean

demo: bootstrap
	. tools/env.sh && python -m legacy_robot_bringup.demo --duration $(DEMO_SECONDS) --output demo-output $(DEMO_ARGS)

# The whole suite on the default executor (rclpy's events executor), then a subset of the
# end-to-end tests again on SingleThreadedExecutor (LEGACY_ROBOTS_EXECUTOR=single): bringup,
# lifecycle, shutdown, stack fit (cmd_vel types, several robots), Foxglove, two drivers' node
# tests; about 3 minutes, so that make test stays under 25.
SINGLE_EXECUTOR_TESTS = test/test_bringup_e2e.py test/test_lifecycle.py test/test_shutdown.py \
	test/test_stack_fit.py test/test_foxglove.py src/ipaq_driver/test/test_node_e2e.py \
	src/pleo_driver/test/test_node_e2e.py
test: bootstrap
	. tools/env.sh && python -m pytest -rs $(PYTEST_ARGS)
	. tools/env.sh && LEGACY_ROBOTS_EXECUTOR=single python -m pytest -rs $(SINGLE_EXECUTOR_TESTS)

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
