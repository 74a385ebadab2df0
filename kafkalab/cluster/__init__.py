"""Clusters: a real ZooKeeper and several broker processes behind one ``Cluster`` API."""
