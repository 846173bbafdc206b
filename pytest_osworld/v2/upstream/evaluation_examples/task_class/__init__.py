"""``evaluation_examples.task_class``: the helpers V2 task files import (``generated_task_utils``)."""
