"""The LLM endpoints of OSWorld-V2 evaluation, on the host: the judge's and the simulated user's
settings (``settings.py``), the clients they share (``clients.py``), the LLM judge (``judge.py``) and the
simulated user (``user_sim.py``), over the project's model clients."""
