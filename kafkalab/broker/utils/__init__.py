"""Small helpers shared by the broker's parts, as Kafka's ``kafka.utils``: ``async_util`` (waiting with a timeout
and stopping tasks without losing a cancellation) and ``parent_watch`` (``--parent-pid``: stop once the process
that started this one is gone; not in Kafka)."""
