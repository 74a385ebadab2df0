"""The lessons' machinery: small helpers the notebooks import instead of defining them in cells.

What a lesson teaches stays in its cells (the produce and consume calls, the configs, the kill and
restart, the asserts on what was measured); what only gets it there lives here, one small module per
job, each saying which lessons use it:

* :mod:`~kafkalab.lessons.waiting` — ``wait_until(condition, what)``: poll until something holds
  (lessons 02, 03, 08, lab 10); ``wait_in_thread(call, what)``: a blocking call with a progress bar
  (lesson 06's ``processAllAvailable``);
* :mod:`~kafkalab.lessons.reading` — read a topic back: every value of a partition up to its high
  watermark (02, 03), all partitions until a count (01), or up to the end a ``read_committed``
  reader may read (07);
* :mod:`~kafkalab.lessons.topics` — a topic whose replicas the lesson places itself, returned once
  in sync (lessons 02 and 03);
* :mod:`~kafkalab.lessons.timeline` — one partition's leader, ISR and offsets as plain ints, and a
  thread sampling them (lesson 03's failover timelines);
* :mod:`~kafkalab.lessons.traffic` — producers to measure: lesson 03's ``Writer`` thread, lesson 02's
  ``trickle`` (what ``linger.ms`` costs), lesson 05's ``trickle_to_consumer`` (the long poll);
* :mod:`~kafkalab.lessons.request_log` and :mod:`~kafkalab.lessons.ordering` — lesson 02's producer
  requests rebuilt from librdkafka's debug log (and each attempt timed: retry backoff, timeouts), and the
  reordering counts;
* :mod:`~kafkalab.lessons.java_producer` — lesson 02's Kafka Java producer with a full buffer
  (``buffer.memory``, ``max.block.ms``), ``BufferFullProducer.java`` run as a child process;
* :mod:`~kafkalab.lessons.copier` — lesson 07's consume-transform-produce copier, run as a process
  and SIGKILLed;
* :mod:`~kafkalab.lessons.share_groups` — lesson and lab 09's share group and share consumer;
* :mod:`~kafkalab.lessons.sasl_exchange` and :mod:`~kafkalab.lessons.tcp_relay` — lesson 11's SASL
  exchanges made by hand (PLAIN's token, SCRAM's four messages, every frame kept) and a TCP relay that keeps
  what a client sends (the password in clear on SASL_PLAINTEXT, not on SASL_SSL).

Nothing in :mod:`kafkalab.broker` imports this package: it is client-side code, as a lesson's own.
"""
