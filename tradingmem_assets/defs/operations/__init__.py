"""Operations: the schedules, the landing sensor and the warehouse checks job that make it run by itself."""
