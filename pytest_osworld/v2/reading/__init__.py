"""OSWorld-V2 tasks: Python task classes read statically (``task_file.py``, ``static.py``), their selection
markers (``markers.py``) and the release's task-hash pins (``pins.py``). Nothing here imports a task
module: importing one runs its code, and upstream's raise without the website and GitLab environment."""
