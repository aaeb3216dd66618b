"""ActivMedia P2OS (Pioneer 2 / PeopleBot / AmigoBot) driver. Work in progress: protocol layer."""
