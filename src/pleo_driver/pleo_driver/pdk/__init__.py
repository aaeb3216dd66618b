"""A rebuild of the Pleo Development Kit's build chain (docs/protocols/pleo.md §2.2-2.9).

Pure codecs and the build driver: no ROS, no serial ports. ``urf_builder`` (the
command line and the ROS service node) sits on top of ``project.build``.
"""
