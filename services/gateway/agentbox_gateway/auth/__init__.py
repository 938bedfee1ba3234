"""Who may call the gateway: the guards in front of every route (``guards``: ``Host``, ``Origin``,
the API key, the page headers), a person's browser session and the ticket routes
(``browser_sessions``), and the single-use tickets standing for the key in a URL (``tickets``).
Every refusal the gateway makes before a door answers is made here."""
