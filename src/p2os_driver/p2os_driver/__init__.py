"""ActivMedia P2OS (Pioneer 2 / PeopleBot / AmigoBot) driver: codec, client, ROS node, emulator."""
