"""Helpers that more than one agentbox service needs: settings parsing, logging, process groups."""
