"""The pages a person opens: the dashboard, the manual and the offline API docs (``pages``), the live
view of the desktop and its VNC socket (``live_view``), the terminal page and its socket
(``terminal``), and the files they load (``static/``, package data)."""
