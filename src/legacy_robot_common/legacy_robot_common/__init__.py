"""Code every legacy robot driver needs exactly once.

Layers (see the repository README): ``streams``/``client``/``emulator`` know
bytes and connections and never import rclpy; ``messages``, ``diagnostics``,
``params`` and ``driver_node`` are the ROS side.
"""
