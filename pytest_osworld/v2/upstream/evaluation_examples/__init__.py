"""``evaluation_examples`` as OSWorld-V2 task files import it: ``task_class.generated_task_utils``,
re-exporting :mod:`pytest_osworld.v2.api.scoring`."""
