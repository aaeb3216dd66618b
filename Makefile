# The two commands of the README. Each one bootstraps whatever is missing first
# (virtual environment with the ROS 2 wheels, colcon build); see tools/bootstrap.sh.
# ROS_DISTRO=jazzy (the default) or kilted chooses the distribution of every target here, e.g.
# `ROS_DISTRO=kilted make test`; each has its own .venv/<distro>, build/<distro>, install/<distro>.
SHELL := /bin/bash
DEMO_SECONDS ?= 20
PYTEST_ARGS ?=

.PHONY: demo lint test test-suite test-beside-suite test-units test-e2e-subset test-distributions \
	test-kilted test-noble bench soak bootstrap clean

demo: bootstrap
	. tools/env.sh && python -m legacy_robot_bringup.demo --duration $(DEMO_SECONDS) --output demo-output $(DEMO_ARGS)

# The whole suite on the distribution's default executor (Kilted: rclpy's events executor;
# Jazzy: SingleThreadedExecutor, whose events executor cannot answer async services) and, beside
# it in a ROS domain of its own: on Kilted, a subset of the end-to-end tests on
# SingleThreadedExecutor (LEGACY_ROBOTS_EXECUTOR=single: bringup, lifecycle, shutdown, stack fit,
# Foxglove, service answers, two drivers' node tests; about 3 minutes); then the test that waits
# a minute on the clock (P2OS driving at 1.5 m/s; left out of the suite's run) and the two-host
# tests (network namespaces of their own; they wait out link cuts). Both runs mostly wait on
# sockets, DDS and the clock, so side by side they take the suite's time. (The AIBO's two minutes
# of audio stay in the suite: its load beside the suite's busiest tests would share the 2
# cores.) The side run's output goes to log/test-beside-suite.log and is printed when both are
# done.
SINGLE_EXECUTOR_TESTS = test/test_bringup_e2e.py test/test_lifecycle.py test/test_shutdown.py \
	test/test_stack_fit.py test/test_foxglove.py src/ipaq_driver/test/test_node_e2e.py \
	src/pleo_driver/test/test_node_e2e.py test/test_service_replies.py
WAITING_TESTS = \
	src/p2os_driver/test/test_node_e2e.py::test_drive_at_1_5_m_s_for_a_minute_without_odometry_freezing \
	test/test_demo_e2e.py::test_the_rabbit_is_asked_the_time_by_voice_and_its_answer_is_kept \
	test/test_demo_e2e.py::test_two_pioneers_in_one_world_get_one_picture_and_one_sees_the_other \
	test/test_two_hosts.py
# What CI runs on the distribution that is not the default (ROS_DISTRO=kilted) and on Ubuntu
# 24.04's library versions (LEGACY_ROBOTS_CONSTRAINTS=noble): the unit tests, every package's
# tests but its end-to-end ones (*_e2e.py); on Kilted also this end-to-end subset, where the two
# distributions differ most (executor, services, lifecycle, actions, bringup), less the
# WAITING_TESTS (the P2OS's minute drive):
UNIT_TESTS = src --ignore-glob='*_e2e.py'
E2E_SUBSET = test/test_bringup_e2e.py test/test_lifecycle.py test/test_service_replies.py \
	test/test_interfaces_cross_process.py src/p2os_driver/test/test_node_e2e.py \
	src/nabaztag_bridge/test/test_say_e2e.py
BESIDE_LOG = log/test-beside-suite.log
TEST_DOMAIN := $(shell echo $$(( $$$$ % 50 + 1 )))
# Lint and format check first (ruff from requirements.txt, rules in ruff.toml); CI's .ci/run
# runs make test, so it lints too. `ruff format .` and `ruff check --fix .` repair most findings.
lint: bootstrap
	. tools/env.sh && ruff check . && ruff format --check .

test: bootstrap lint
	@$(MAKE) --no-print-directory -j2 test-suite test-beside-suite; status=$$?; \
	  echo "---- beside the suite: the SingleThreadedExecutor subset, then the test that waits" \
	    "on the clock ($(BESIDE_LOG)) ----"; \
	  cat $(BESIDE_LOG); exit $$status

test-suite:
	. tools/env.sh && ROS_DOMAIN_ID=$(TEST_DOMAIN) python -m pytest -rs \
	  $(addprefix --deselect ,$(WAITING_TESTS)) $(PYTEST_ARGS)

test-beside-suite:
	@mkdir -p log && echo "beside it: the SingleThreadedExecutor subset (where it is not the" \
	  "default), then the test that waits on the clock: $(BESIDE_LOG)"
	@. tools/env.sh || exit 1; export ROS_DOMAIN_ID=$$(( $(TEST_DOMAIN) + 50 )); \
	  if [ "$$(python -m legacy_robot_common.distribution)" = single ]; then \
	    echo "the SingleThreadedExecutor subset: skipped, the suite ran on it (ROS 2 $$ROS_DISTRO)" \
	      > $(BESIDE_LOG); single=0; \
	  else \
	    LEGACY_ROBOTS_EXECUTOR=single python -m pytest -rs $(SINGLE_EXECUTOR_TESTS) \
	      > $(BESIDE_LOG) 2>&1; single=$$?; \
	  fi; \
	  python -m pytest -rs $(WAITING_TESTS) >> $(BESIDE_LOG) 2>&1 && exit $$single

# Unit tests alone, and the end-to-end subset CI runs on the second distribution (see above)
test-units: bootstrap
	. tools/env.sh && ROS_DOMAIN_ID=$(TEST_DOMAIN) python -m pytest -rs $(UNIT_TESTS) $(PYTEST_ARGS)

test-e2e-subset: bootstrap
	. tools/env.sh && ROS_DOMAIN_ID=$(TEST_DOMAIN) python -m pytest -rs $(E2E_SUBSET) \
	  $(addprefix --deselect ,$(WAITING_TESTS)) $(PYTEST_ARGS)

# CI's second part, after make test: Kilted's unit tests and end-to-end subset, and the unit
# tests on noble's library versions, side by side (each in a venv and a ROS domain of its own;
# each mostly one busy Python process). Their output goes to log/test-kilted.log and
# log/test-noble.log and is printed when both are done.
test-distributions:
	@mkdir -p log; $(MAKE) --no-print-directory -j2 test-kilted test-noble; status=$$?; \
	  for name in kilted noble; do echo "---- log/test-$$name.log ----"; cat log/test-$$name.log; done; \
	  exit $$status

test-kilted:
	@echo "Kilted: unit tests and the end-to-end subset (log/test-kilted.log)"
	@ROS_DISTRO=kilted LEGACY_ROBOTS_CONSTRAINTS= $(MAKE) --no-print-directory test-units \
	  test-e2e-subset TEST_DOMAIN=$$(( $(TEST_DOMAIN) + 101 )) > log/test-kilted.log 2>&1

test-noble:
	@echo "Jazzy with Ubuntu 24.04's libraries: unit tests (log/test-noble.log)"
	@ROS_DISTRO=jazzy LEGACY_ROBOTS_CONSTRAINTS=noble $(MAKE) --no-print-directory test-units \
	  TEST_DOMAIN=$$(( $(TEST_DOMAIN) + 151 )) > log/test-noble.log 2>&1

# Speed and CPU numbers (not part of the tests): every robot's benchmark, then one table;
# JSON and a PNG chart in bench-output/. BENCH_ARGS=--quick for a short smoke run.
BENCH_ARGS ?=
bench: bootstrap
	bash tools/bench_tools.sh
	. tools/env.sh && python -m legacy_robot_bench.bench --output bench-output $(BENCH_ARGS)

# The fault suite (not part of CI; about 45 minutes): fuzzing, emulator kill/restart, link
# noise, AIBO audio, P2OS safety, malformed Nabaztag requests; one table, soak-output/.
# SOAK_ARGS='--parts fuzz --cases 10000' for a part or a shorter run.
SOAK_ARGS ?=
soak: bootstrap
	. tools/env.sh && python -m legacy_robot_bench.soak --output soak-output $(SOAK_ARGS)

bootstrap:
	bash tools/bootstrap.sh

clean:
	rm -rf build install log demo-output bench-output soak-output
