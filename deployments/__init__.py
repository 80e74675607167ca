"""deployments — Prefect deployment definitions: schedules, default parameters, work pool."""
