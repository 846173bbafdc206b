"""Controllers of the task API: setup (``setup.py``), the mock websites (``website.py``), GitLab (``gitlab.py``)."""
