"""What the log says of a claimed run: a worker that died is named, a run that was released
(handed back after a database outage, or over at shutdown) is said to be resumed."""

from corral.runtime.takeover import taken_over_line


def test_a_released_run_is_resumed_not_taken_over_from_worker_none() -> None:
    line = taken_over_line("r_1", None)
    assert "None" not in line and "taken over" not in line
    assert "run r_1 resumed from its last persisted step" in line
    assert "database outage" in line


def test_a_run_of_a_dead_worker_names_that_worker() -> None:
    assert taken_over_line("r_1", "host:12:34") == "run r_1 taken over from worker host:12:34"
