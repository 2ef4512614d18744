"""Host <-> device copies made by ember's moves (``.to``, printing, ``.item()``): a training step should make none
(tests count them)."""
COPIES = {"h2d": 0, "d2h": 0}
