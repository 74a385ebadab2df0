"""Regex subscriptions of KIP-848 consumer groups: resolved by the coordinator, asynchronously.

With ``group.protocol=consumer`` a member may subscribe with a pattern (ConsumerGroupHeartbeat v1's
``SubscribedTopicRegex``); the coordinator, not the client, finds the matching topics. Kafka 4.x's
``GroupMetadataManager.maybeUpdateRegularExpressions`` does it *off the heartbeat's path*: the heartbeat that
brings a new regex is answered with the topics the group already knows (its literal topic names, and regexes
the group has resolved before), and a background task resolves the group's regexes; when it is done the group
epoch goes up and the members get the matching topics' partitions on a later heartbeat. So a member subscribing
to ``^.*orders.*`` and ``audit`` gets ``audit`` first, the pattern's topics a heartbeat later.

When the resolution runs again (on a heartbeat; never while one is pending, and never within 10 s of the
last one, a limit Kafka 4.4 hard-codes):

* a member subscribes to a regex no other member of the group subscribes to (its first subscriber);
* the group subscribes to regexes it has not resolved (or no longer subscribes to some it resolved);
* topics were created since the last resolution (a new topic may match);
* ``group.consumer.regex.refresh.interval.ms`` (10 minutes) has passed.

A topic that is deleted drops out at once: only existing topics count in a subscription. A regex is forgotten
when its last subscriber leaves, so subscribing to it again waits for a new resolution. A regex never matches an
internal topic. Python's ``re`` stands in for Kafka's RE2/J (``fullmatch``, as RE2/J's ``matches``).

Kafka also writes each resolution to ``__consumer_offsets`` (ConsumerGroupRegularExpression records); kafkalab
keeps it in memory and resolves a loaded group's regexes at once when the coordinator loads it.

:class:`ConsumerGroupRegexes` is a part of ``GroupCoordinator`` (a mixin).
"""
from __future__ import annotations

import logging
import re

from .consumer_group import ConsumerGroup
from .group_coordinator_metrics import CONSUMER_GROUP_REBALANCES_SENSOR_NAME

log = logging.getLogger(__name__)

#: Kafka 4.4: a group's regexes are resolved at most once every 10 s, whatever triggers it
REGEX_MIN_REFRESH_INTERVAL_MS = 10_000


class ConsumerGroupRegexes:
    """GroupCoordinator's regex resolution for consumer groups (a mixin; see the module's docstring)."""

    def _now_ms(self) -> float:
        return self.loop.time() * 1000

    def _regex_topics(self) -> set[str]:
        """The topics a regex may match: every existing non-internal topic."""
        cache = self.broker.metadata_cache
        return {name for name in list(cache.topics)
                if (meta := cache.get(name)) is not None and not meta.is_internal and meta.num_partitions > 0}

    @staticmethod
    def _subscribed_regexes(group: ConsumerGroup) -> set[str]:
        return {m.subscribed_topic_regex for m in group.members.values() if m.subscribed_topic_regex}

    def maybe_update_regular_expressions(self, group: ConsumerGroup, old_regex: str | None,
                                         new_regex: str | None) -> bool:
        """Kafka's ``maybeUpdateRegularExpressions``, on every heartbeat (the member already updated in the
        group): maybe start a resolution. True when the member's subscription changed in a way the group epoch
        must follow now: its regex was dropped, or changed to one the group has resolved already."""
        self._forget_unsubscribed_regexes(group)
        require, resolved_now = False, False
        if old_regex != new_regex:
            if new_regex:
                subscribers = sum(1 for m in group.members.values() if m.subscribed_topic_regex == new_regex)
                if subscribers <= 1:   # this member is its first subscriber
                    require = True
                elif new_regex in group.resolved_regexes:
                    resolved_now = True
            elif old_regex:
                resolved_now = True
        subscribed = self._subscribed_regexes(group)
        if not require and not subscribed:
            return resolved_now
        now = self._now_ms()
        if group.regex_refresh_pending or now <= group.regex_refreshed_ms + REGEX_MIN_REFRESH_INTERVAL_MS:
            return resolved_now
        require = (require or subscribed != set(group.resolved_regexes)
                   or bool(self._regex_topics() - group.regex_topics_seen)
                   or now > group.regex_refreshed_ms + self.config["group.consumer.regex.refresh.interval.ms"])
        if require and subscribed:
            group.regex_refresh_pending = True
            self.loop.call_soon(self._refresh_regular_expressions, group)   # after this heartbeat is answered
        return resolved_now

    def _refresh_regular_expressions(self, group: ConsumerGroup) -> None:
        """The background resolution (Kafka's ``TopicRegexResolver`` and ``handleRegularExpressionsResult``):
        every regex the group subscribes to, against the topics now; the group epoch goes up if it changed."""
        group.regex_refresh_pending = False
        if self.consumer_groups.get(group.group_id) is not group:
            return
        changed = self.resolve_regular_expressions(group)
        if changed:
            group.group_epoch += 1
            self.coordinator_metrics.record(CONSUMER_GROUP_REBALANCES_SENSOR_NAME)
            group.maybe_update_state()
            log.info("group %s: regexes resolved to %s; epoch %d", group.group_id,
                     {rx: sorted(t) for rx, t in group.resolved_regexes.items()}, group.group_epoch)
            self.consumer_group_persister.persist(group)

    def resolve_regular_expressions(self, group: ConsumerGroup) -> bool:
        """Resolve the group's regexes now; whether the result changed."""
        topics = self._regex_topics()
        resolved = {}
        for rx in self._subscribed_regexes(group):
            try:
                pattern = re.compile(rx)
            except re.error:
                continue
            resolved[rx] = {t for t in topics if pattern.fullmatch(t)}
        group.regex_refreshed_ms = self._now_ms()
        group.regex_topics_seen = topics
        changed = resolved != group.resolved_regexes
        group.resolved_regexes = resolved
        return changed

    @staticmethod
    def _forget_unsubscribed_regexes(group: ConsumerGroup) -> None:
        """Kafka's ``maybeDeleteResolvedRegularExpressions``: a regex nobody subscribes to any more is forgotten."""
        subscribed = ConsumerGroupRegexes._subscribed_regexes(group)
        for rx in [rx for rx in group.resolved_regexes if rx not in subscribed]:
            del group.resolved_regexes[rx]
