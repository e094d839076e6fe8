"""The suite's own plugin: each pytest-xdist process gets a Redis database of its own."""

from goldset.pytest_plugin import worker_redis_url


def test_each_process_moves_to_the_next_redis_database_and_wraps_at_sixteen():
    assert worker_redis_url("redis://127.0.0.1:6379/5", 0) == "redis://127.0.0.1:6379/5"
    assert worker_redis_url("redis://127.0.0.1:6379/5", 1) == "redis://127.0.0.1:6379/6"
    assert worker_redis_url("redis://127.0.0.1:6379/15", 2) == "redis://127.0.0.1:6379/1"
    assert worker_redis_url("redis://127.0.0.1:6379", 1) == "redis://127.0.0.1:6379/1"
    assert worker_redis_url("redis://:secret@cache:6380/2?ssl=1", 3) == (
        "redis://:secret@cache:6380/5?ssl=1"
    )
