"""iPaq + CMUcam + BrainStem robot (CMU Trikebot) driver: codec, client, ROS node, emulator."""
