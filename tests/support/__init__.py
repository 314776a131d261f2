"""Support shared by every test folder: one polling helper, one free port, the real ``errand``
CLI and worker in subprocesses, the test kinds, job rows read as an auditor would, an in-process
worker, test databases and PostgreSQL restarts.

Fakes of outer services (a model provider) live in ``tests/fakes``; fixtures live in the
``conftest.py`` of the folder that uses them (``tests/conftest.py`` for those every folder uses).
"""
