"""pytest collection rules for notebooks/ (run under nbval): skip JupyterLab's checkpoint copies."""
collect_ignore_glob = [".ipynb_checkpoints/*"]
