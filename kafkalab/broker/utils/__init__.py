"""Small helpers shared by the broker's parts, as Kafka's ``kafka.utils``."""
