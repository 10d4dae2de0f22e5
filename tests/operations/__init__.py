"""Operations: schedules, the landing sensor, the checks job, the PostgreSQL instance and the UI."""
