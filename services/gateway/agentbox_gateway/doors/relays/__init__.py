"""Traffic the gateway passes on to something else in the sandbox, behind its guards: Chromium's
DevTools endpoint (``cdp``: ``/cdp/``, the discovery answers) and the apps a person previews, the
inbound preview relay (``preview``: ``/proxy/{port}/``, ``/absproxy/{port}/``; ``preview_host``: a
preview host's every path). Not the browser's outbound proxy: that is the ``planes.egress`` plane."""
