"""pytest collection rules for labs/: only the solutions run under nbval.

An ``exercise.ipynb`` has unfilled TODO cells by design, so running it as-is
must fail at its check. CI runs each lab's ``solution.ipynb`` instead (the
check has to pass on it), and ``tests/test_labs.py`` makes sure the exercise
still fails, with the check's checklist, until the TODOs are done.
"""
collect_ignore_glob = ["*/exercise.ipynb", "*/.ipynb_checkpoints/*"]
