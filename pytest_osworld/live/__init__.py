"""The live page of a run (``--osworld-live [HOST:]PORT``): what every task is doing while the run lasts,
and each running task's desktop in a browser VNC client.

The modules know nothing of pytest (``plugin/live.py`` wires them in):

- ``observer``: what an episode tells while it runs (``EpisodeObserver``, a no-op unless the plugin
  attaches one) and the check for a person's input at its end;
- ``channel``: the files through which the processes of a run (xdist workers, or the one process)
  publish their progress to the process that serves the page;
- ``state``: the run as the page shows it, owned by that process;
- ``server``, ``websocket``, ``bridge``, ``rfb``: the HTTP server (pages, server-sent events, noVNC's
  files), the websocket to a sandbox's VNC port, and the filter that keeps the view read-only;
- ``novnc``: where noVNC's files are on this machine.

The page's address, ``[HOST:]PORT``, is a setting's type: ``settings/address.py``.
"""
