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

# Speed and CPU numbers (not part of the tests); tables on stdout, JSON in bench-output/.
bench: bootstrap
	. tools/env.sh && status=0; \
	for package in p2os_driver ipaq_driver aibo_driver nabaztag_bridge pleo_driver; do python -m $${package}.bench --output bench-output || status=1; done; \
	exit $$status

bootstrap:
	bash tools/bootstrap.sh

clean:
	rm -rf build install log demo-output bench-output
