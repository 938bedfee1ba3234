"""aicodebox's cron mode (``agentbox-cron``): scheduled agent runs from a YAML job file, with a
history of every run and an optional Telegram notification."""
