"""aicodebox's Telegram mode (``agentbox-telegram``): a long-polling bot that hands each allowed
chat's messages to the coding agent in that chat's workspace."""
