// An xterm.js terminal on the gateway's terminal WebSocket (binary frames are terminal bytes both
// ways; a JSON text frame resizes), shared by the dashboard and the standalone page /terminal/.
"use strict";

function attachTerminal(container, state, socketUrl) {
  const term = new Terminal({ cursorBlink: true, fontSize: 13, convertEol: false });
  const fit = new FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(container);
  fit.fit();
  const socket = new WebSocket(socketUrl);
  socket.binaryType = "arraybuffer";
  const encoder = new TextEncoder();
  const resize = () => {
    fit.fit();
    if (socket.readyState === WebSocket.OPEN)
      socket.send(JSON.stringify({ type: "resize", cols: term.cols, rows: term.rows }));
  };
  socket.onopen = () => { state.textContent = "connected"; resize(); term.focus(); };
  socket.onmessage = (event) => {
    if (typeof event.data === "string") return;  // control messages: nothing to show
    term.write(new Uint8Array(event.data));
  };
  socket.onclose = (event) => { state.textContent = `closed (${event.code})`; };
  term.onData((data) => { if (socket.readyState === WebSocket.OPEN) socket.send(encoder.encode(data)); });
  // The panel, not only the window, decides the size: it is laid out (and its font loaded) after
  // the first fit, and it changes when the page around it does.
  let pending = false;
  new ResizeObserver(() => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; resize(); });
  }).observe(container);
  return term;
}

// The standalone page: the socket beside it (relative, so a reverse-proxy prefix is kept).
if (document.body.dataset.page === "terminal") {
  const socketUrl = new URL("ws", location.href);
  socketUrl.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  socketUrl.search = "";
  window.agentboxTerminal = attachTerminal(
    document.getElementById("terminal"), document.getElementById("terminal-state"), socketUrl);
}
