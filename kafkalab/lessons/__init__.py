"""The lessons' machinery: small helpers the notebooks import instead of defining them in cells.

What a lesson teaches stays in its cells (the produce and consume calls, the configs, the kill and
restart, the asserts on what was measured); what only gets it there lives here, one small module per
job, each saying which lessons use it:

* :mod:`~kafkalab.lessons.waiting` — ``wait_until(condition, what)``: poll until something holds;
* :mod:`~kafkalab.lessons.reading` — read a topic back: every value of a partition up to its high
  watermark, all partitions until a count, or up to the end a ``read_committed`` reader may read;
* :mod:`~kafkalab.lessons.timeline` — one partition's leader, ISR and offsets as plain ints, and a
  thread sampling them (lesson 03's failover timelines);
* :mod:`~kafkalab.lessons.traffic` — producers that keep writing: lesson 03's ``Writer`` thread;
* :mod:`~kafkalab.lessons.copier` — lesson 07's consume-transform-produce copier, run as a process
  and SIGKILLed.

Nothing in :mod:`kafkalab.broker` imports this package: it is client-side code, as a lesson's own.
"""
