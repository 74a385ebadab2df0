"""Producer ids never repeat: across restarts, and when the producer-id file is damaged."""
import os

from kafkalab.broker.coordinator.transaction.producer_id_manager import ProducerIdManager


def test_ids_continue_after_a_restart(tmp_path):
    first = ProducerIdManager(str(tmp_path))
    ids = [first.generate_producer_id() for _ in range(3)]
    assert ids == [0, 1, 2]
    again = ProducerIdManager(str(tmp_path))      # a restart skips the rest of the block
    assert again.generate_producer_id() == ProducerIdManager.BLOCK_SIZE


def test_a_damaged_file_never_restarts_at_zero(tmp_path, caplog):
    manager = ProducerIdManager(str(tmp_path))
    for _ in range(ProducerIdManager.BLOCK_SIZE + 5):   # two blocks handed out
        last = manager.generate_producer_id()
    for garbage in ("", "not a number", "-7"):
        with open(os.path.join(tmp_path, "producer-id"), "w") as f:
            f.write(garbage)
        after = ProducerIdManager(str(tmp_path)).generate_producer_id()
        assert after > last
        assert "unreadable" in caplog.text
