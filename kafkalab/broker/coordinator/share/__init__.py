"""KIP-932's share coordinator: share-partition state in ``__share_group_state``."""
