"""flows — Prefect flows: the stage sequence of the paper's Figure 10, wiring only."""
